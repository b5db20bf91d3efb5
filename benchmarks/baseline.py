"""
A straightforward NN-MPPI / MaxDiff implementation, written here as the baseline of ``benchmarks/run.py``.

It does what the paper describes in the most direct way, as the authors' code does: two separate
``nn.Sequential`` networks called once per planning step on ``[s, a]``, the noise filter as a Python
loop, and a replay sampler that permutes the whole buffer for every minibatch (so its cost grows
with the fill). It computes the same quantities as the package, so the ratios are like for like.
"""

import numpy as np
import torch as th
from torch import nn

from sb3_maxdiff.common.entropy import PathEntropySettings


def sequential_mlp(input_dim: int, output_dim: int, net_arch: list[int]) -> nn.Sequential:
    layers: list[nn.Module] = []
    for width in net_arch:
        layers += [nn.Linear(input_dim, width), nn.ReLU()]
        input_dim = width
    return nn.Sequential(*layers, nn.Linear(input_dim, output_dim))


class BaselineModel(nn.Module):
    """Dynamics (state change) and reward networks, each called on ``cat([s, a])``."""

    def __init__(self, obs_dim: int, action_dim: int, net_arch: list[int]):
        super().__init__()
        self.dynamics = sequential_mlp(obs_dim + action_dim, obs_dim, net_arch)
        self.reward = sequential_mlp(obs_dim + action_dim, 1, net_arch)
        self.log_std = nn.Parameter(th.zeros(obs_dim))

    def step(self, obs: th.Tensor, action: th.Tensor) -> tuple[th.Tensor, th.Tensor]:
        inputs = th.cat([obs, action], dim=-1)
        return obs + self.dynamics(inputs), self.reward(inputs).squeeze(-1)

    def loss(self, obs, actions, next_obs, next_actions, rewards, masks) -> th.Tensor:
        mean_next, predicted_reward = self.step(obs, actions)
        log_std = self.log_std.clamp(-10.0, 2.0)
        nll = (0.5 * ((next_obs - mean_next) / log_std.exp()) ** 2 + log_std + 0.5 * np.log(2 * np.pi)).mean()
        with th.no_grad():
            target = rewards + 0.95 * masks * self.step(next_obs, next_actions)[1]
        return 0.5 * ((target - predicted_reward) ** 2).mean() + nll


class BaselinePlanner:
    """MPPI with a per-step loop over the networks (one environment)."""

    def __init__(self, horizon: int, n_samples: int, action_dim: int, temperature: float = 0.5, noise_std: float = 0.3):
        self.horizon, self.n_samples, self.action_dim = horizon, n_samples, action_dim
        self.temperature, self.noise_std = temperature, noise_std
        self.nominal = th.zeros(horizon, action_dim)

    @th.no_grad()
    def plan(self, model: BaselineModel, obs: th.Tensor, path_entropy: PathEntropySettings | None, alpha: float) -> th.Tensor:
        self.nominal = th.cat([self.nominal[1:], th.zeros(1, self.action_dim)])
        eps = th.randn(self.n_samples, self.horizon, self.action_dim) * self.noise_std
        eta, smoothed = th.zeros(self.n_samples, self.action_dim), []
        for step in range(self.horizon):
            eta = 0.5 * eta + 0.5 * eps[:, step]
            smoothed.append(eta)
        noise = th.stack(smoothed, dim=1)
        samples = self.nominal + noise
        state, returns, visited = obs.expand(self.n_samples, -1), th.zeros(self.n_samples), []
        for step in range(self.horizon):
            visited.append(state)
            state, reward = model.step(state, samples[:, step])
            returns = returns + reward
        scores = returns if path_entropy is None else returns + alpha * path_entropy(th.stack(visited, dim=1))
        weights = th.exp((scores - scores.max()) / self.temperature) + 1e-5
        weights = weights / weights.sum()
        self.nominal = self.nominal + (weights[:, None, None] * noise).sum(dim=0)
        return self.nominal[0].clone()


class PermutationReplay:
    """Replay arrays with a sampler that permutes the whole buffer for every minibatch."""

    def __init__(self, size: int, obs_dim: int, action_dim: int, rng: np.random.Generator):
        self.obs = rng.standard_normal((size, obs_dim), dtype=np.float32)
        self.actions = rng.uniform(-1, 1, (size, action_dim)).astype(np.float32)
        self.next_obs = rng.standard_normal((size, obs_dim), dtype=np.float32)
        self.next_actions = rng.uniform(-1, 1, (size, action_dim)).astype(np.float32)
        self.rewards = rng.standard_normal(size, dtype=np.float32)
        self.masks = np.ones(size, dtype=np.float32)

    def sample(self, batch_size: int) -> list[th.Tensor]:
        indices = np.random.permutation(len(self.obs))[:batch_size]
        arrays = (self.obs, self.actions, self.next_obs, self.next_actions, self.rewards, self.masks)
        return [th.as_tensor(array[indices]) for array in arrays]


def baseline_update(model: BaselineModel, optimizer: th.optim.Optimizer, replay: PermutationReplay, batch_size: int) -> None:
    loss = model.loss(*replay.sample(batch_size))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
