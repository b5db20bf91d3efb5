"""The learned dynamics + reward model shared by NN-MPPI and MaxDiff."""

import itertools
import math
from typing import NamedTuple

import torch as th
from torch import nn
from torch.nn import functional as F

LOG_STD_MIN, LOG_STD_MAX = -10.0, 2.0
HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


class ModelLosses(NamedTuple):
    total: th.Tensor
    dynamics: th.Tensor
    reward: th.Tensor


def mlp_layers(input_dim: int, output_dim: int, net_arch: list[int], init_w: float) -> nn.ModuleList:
    """Linear layers of an MLP; the output layer is initialised uniformly in [-init_w, init_w]."""
    sizes = [input_dim, *net_arch, output_dim]
    layers = nn.ModuleList(nn.Linear(n_in, n_out) for n_in, n_out in itertools.pairwise(sizes))
    nn.init.uniform_(layers[-1].weight, -init_w, init_w)
    nn.init.uniform_(layers[-1].bias, -init_w, init_w)
    return layers


def run_mlp(layers: nn.ModuleList, activation: nn.Module, inputs: th.Tensor) -> th.Tensor:
    """Apply the layers with the activation between them (functional calls: this is the planner's hot path)."""
    last = len(layers) - 1
    hidden = inputs
    for index, layer in enumerate(layers):
        hidden = F.linear(hidden, layer.weight, layer.bias)
        if index < last:
            hidden = activation(hidden)
    return hidden


class DynamicsRewardModel(nn.Module):
    """
    Dynamics ``s' ~ N(s + f(s, a), sigma^2)`` with a learned log-std per state dim, and a
    reward model ``r(s, a)``; both MLPs take ``[s, a]`` with ``a`` the normalised action.

    :param obs_dim: size of the flat observation
    :param action_dim: size of the action
    :param net_arch: hidden layer sizes of both networks
    :param activation_fn: hidden activation
    :param init_w: output layers are initialised uniformly in [-init_w, init_w]
    :param reward_discount: discount of the TD-like reward target (0.95 in the paper)
    """

    def __init__(
        self,
        obs_dim: int,
        action_dim: int,
        net_arch: list[int] | None = None,
        activation_fn: type[nn.Module] = nn.ReLU,
        init_w: float = 3e-3,
        reward_discount: float = 0.95,
    ):
        super().__init__()
        net_arch = [200, 200] if net_arch is None else list(net_arch)
        if not net_arch or any(isinstance(size, bool) or not isinstance(size, int) or size < 1 for size in net_arch):
            raise ValueError(f"net_arch must be a non-empty list of positive ints (hidden layer sizes), got {net_arch!r}")
        self.obs_dim, self.action_dim = obs_dim, action_dim
        self.reward_discount = reward_discount
        # in place where possible: the planner runs this K x H times per step
        self.activation = nn.ReLU(inplace=True) if activation_fn is nn.ReLU else activation_fn()
        self.dynamics = mlp_layers(obs_dim + action_dim, obs_dim, net_arch, init_w)
        self.reward = mlp_layers(obs_dim + action_dim, 1, net_arch, init_w)
        self.log_std = nn.Parameter(th.zeros(obs_dim))

    def forward(self, obs: th.Tensor, action: th.Tensor) -> tuple[th.Tensor, th.Tensor]:
        """
        :param obs: states of shape (B, n)
        :param action: normalised actions of shape (B, m)
        :return: mean next states (B, n) and predicted rewards (B,)
        """
        inputs = th.cat([obs, action], dim=-1)
        return obs + run_mlp(self.dynamics, self.activation, inputs), run_mlp(self.reward, self.activation, inputs).squeeze(-1)

    def predict_reward(self, obs: th.Tensor, action: th.Tensor) -> th.Tensor:
        return run_mlp(self.reward, self.activation, th.cat([obs, action], dim=-1)).squeeze(-1)

    def loss(
        self,
        obs: th.Tensor,
        actions: th.Tensor,
        next_obs: th.Tensor,
        next_actions: th.Tensor,
        rewards: th.Tensor,
        bootstrap_masks: th.Tensor,
    ) -> ModelLosses:
        """
        Model loss on a replay batch:
        Gaussian NLL of ``s'`` (mean over batch and dims) plus half the TD-like reward loss
        ``mean((r + 0.95 * mask * r_hat(s', a') - r_hat(s, a))^2)``, with the target detached.
        Rows with a non-finite entry (e.g. a NaN observation from the env) are left out of both means,
        without a host sync; a batch with no finite row gives a NaN loss.

        :param bootstrap_masks: 1 where ``a'`` is the real next action of the same episode, else 0
        """
        parts = [obs, actions, next_obs, next_actions, rewards.reshape(-1, 1), bootstrap_masks.reshape(-1, 1)]
        batch = th.cat(parts, dim=-1)  # one finiteness test and one select for the whole batch
        valid = th.isfinite(batch).all(dim=-1)
        batch = th.where(valid[:, None], batch, th.zeros((), dtype=batch.dtype, device=batch.device))
        obs, actions, next_obs, next_actions, rewards, bootstrap_masks = batch.split([p.shape[-1] for p in parts], dim=-1)
        row_weights = valid.to(obs.dtype) / valid.sum()  # NaN weights (0 / 0) when no row is finite
        mean_next, predicted_reward = self(obs, actions)
        log_std = self.log_std.clamp(LOG_STD_MIN, LOG_STD_MAX)
        # -log N(s'; mean, std^2) per dim, averaged over dims, then over the finite rows
        nll = (0.5 * ((next_obs - mean_next) * th.exp(-log_std)) ** 2 + log_std + HALF_LOG_2PI).mean(dim=-1)
        dynamics_loss = (nll * row_weights).sum()
        with th.no_grad():
            target = rewards.flatten() + self.reward_discount * bootstrap_masks.flatten() * self.predict_reward(
                next_obs, next_actions
            )
        reward_loss = (((target - predicted_reward) ** 2) * row_weights).sum()
        return ModelLosses(0.5 * reward_loss + dynamics_loss, dynamics_loss, reward_loss)
