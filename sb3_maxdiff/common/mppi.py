"""
Model predictive path integral (MPPI) planning with a learned model,
batched over samples and parallel environments, each environment with its own warm start.
"""

from typing import NamedTuple

import numpy as np
import torch as th

from sb3_maxdiff.common.entropy import PathEntropy
from sb3_maxdiff.common.models import DynamicsRewardModel

# Scores that are not finite (diverging model) get this value: they receive ~zero weight.
INVALID_SCORE = -1e30
# Planner statistics returned per environment, in this order.
STAT_NAMES = ("ess", "path_entropy", "predicted_return", "nonfinite")


class PlanResult(NamedTuple):
    """
    :param actions: normalised actions to execute, shape (E, m)
    :param nominal: updated nominal sequences (warm start of the next call), shape (E, H, m)
    :param stats: per-environment statistics named by ``STAT_NAMES``, shape (E, 4)
    """

    actions: th.Tensor
    nominal: th.Tensor
    stats: th.Tensor

    def stat(self, name: str) -> th.Tensor:
        """One statistic by name (one of ``STAT_NAMES``), shape (E,); the stats stay one tensor, one copy to the host."""
        if name not in STAT_NAMES:
            raise ValueError(f"name must be one of {list(STAT_NAMES)}, got {name!r}")
        return self.stats[:, STAT_NAMES.index(name)]


def smoothing_matrix(horizon: int, device: th.device | str = "cpu", dtype: th.dtype = th.float32) -> th.Tensor:
    """
    Lower-triangular L with ``eta = L @ eps`` equal to the filter
    ``eta_t = 0.5 * eta_{t-1} + 0.5 * eps_t``, ``eta_{-1} = 0``: ``L[t, s] = 0.5 ** (t - s + 1)``.
    """
    steps = th.arange(horizon, device=device)
    lag = (steps[:, None] - steps[None, :]).to(dtype)
    return th.where(lag >= 0, 0.5 ** (lag + 1), th.zeros((), dtype=dtype, device=device))


def warm_start(nominal: th.Tensor, reset: th.Tensor | None) -> th.Tensor:
    """
    Shift each nominal sequence one step left with a zero last row; zero it at episode start.

    :param nominal: shape (E, H, m)
    :param reset: bool tensor of shape (E,), True where an episode starts (None: no reset)
    """
    shifted = th.cat([nominal[:, 1:], th.zeros_like(nominal[:, :1])], dim=1)
    if reset is None:
        return shifted
    return shifted * (~reset).to(shifted.dtype)[:, None, None]


def mppi_weights(scores: th.Tensor, temperature: float) -> th.Tensor:
    """
    Sample weights ``w = exp((R - max R) / lambda) + 1e-5``, normalised over the last dim.

    :param scores: shape (..., K)
    """
    weights = th.exp((scores - scores.max(dim=-1, keepdim=True).values) / temperature) + 1e-5
    return weights / weights.sum(dim=-1, keepdim=True)


PLANNER_DTYPES = {"float32": th.float32, "bfloat16": th.bfloat16}


def planner_compute_dtype(name: str) -> th.dtype:
    """The torch dtype of a ``planner_dtype`` option, with a clear error for any other value."""
    if name not in PLANNER_DTYPES:
        raise ValueError(f"planner_dtype must be one of {sorted(PLANNER_DTYPES)}, got {name!r}")
    return PLANNER_DTYPES[name]


def check_positive(name: str, value: float, integer: bool = False) -> None:
    """Raise a ValueError naming ``name`` unless ``value`` is > 0 (an integer >= 1 with ``integer``)."""
    if integer and (isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1):
        raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
    if not integer and not (isinstance(value, (int, float, np.number)) and not isinstance(value, bool) and value > 0):
        raise ValueError(f"{name} must be a number > 0, got {value!r}")


def check_flag(name: str, value: object) -> bool:
    """``value`` as a bool, with an error naming ``name`` unless it is True or False."""
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def check_planner_settings(horizon: int, n_samples: int, temperature: float, noise_std: float, dtype: str) -> None:
    """Check the planner's settings, with errors that name the parameter and what it accepts."""
    check_positive("horizon", horizon, integer=True)
    check_positive("n_samples", n_samples, integer=True)
    check_positive("temperature", temperature)
    check_positive("noise_std", noise_std)
    planner_compute_dtype(dtype)


def _generic_rollout(
    model: th.nn.Module, obs: th.Tensor, actions: th.Tensor, state_bound: float
) -> tuple[th.Tensor, th.Tensor]:
    """Step any ``model(state, action) -> (next_state, reward)`` (e.g. known dynamics in the tests)."""
    state, total_reward, visited = obs, th.zeros(obs.shape[0], dtype=obs.dtype, device=obs.device), []
    for step in range(actions.shape[1]):
        visited.append(state)
        next_state, reward = model(state, actions[:, step])
        total_reward = total_reward + reward
        state = next_state.clamp(-state_bound, state_bound)
    return total_reward, th.stack(visited, dim=1)


def rollout(
    model: th.nn.Module, obs: th.Tensor, actions: th.Tensor, state_bound: float, dtype: th.dtype = th.float32
) -> tuple[th.Tensor, th.Tensor]:
    """
    Roll ``model`` out from ``obs`` under each action sequence: the model's own fused ``rollout`` where it
    has one (:class:`DynamicsRewardModel`), else a step-by-step loop over ``model(state, action)``.

    :param model: learned dynamics and reward, or any ``model(state, action) -> (next_state, reward)``
    :param obs: start states, shape (B, n), float32
    :param actions: action sequences, shape (B, H, m)
    :param state_bound: predicted states are clamped to [-state_bound, state_bound]
    :param dtype: compute dtype of the multiplies (float32 or bfloat16; the loop ignores it)
    :return: summed predicted rewards (B,) and the visited states s_0 .. s_{H-1}, shape (B, H, n)
    """
    fused = getattr(model, "rollout", None)
    if fused is None:
        return _generic_rollout(model, obs, actions, state_bound)
    return fused(obs, actions, state_bound, dtype)


class MPPIPlanner:
    """
    MPPI with time-smoothed Gaussian noise and an optional MaxDiff path-entropy bonus.

    :param action_dim: size of the (normalised) action
    :param horizon: planning horizon H
    :param n_samples: number of sampled action sequences K per environment
    :param temperature: MPPI temperature lambda
    :param noise_std: std sigma of the sampling noise before smoothing
    :param control_cost: add ``lambda * sum_t log N(eta_t; 0, sigma^2)`` to the scores (NN-MPPI as published)
    :param clip_samples: clip sampled actions to [-1, 1] inside the rollout (published runs did not)
    :param path_entropy: the MaxDiff term; None for plain NN-MPPI
    :param state_bound: bound on predicted states, so that a diverging model stays finite
    :param dtype: compute dtype of the model rollouts, "float32" or "bfloat16" (see :func:`rollout`)
    """

    def __init__(
        self,
        action_dim: int,
        horizon: int,
        n_samples: int,
        temperature: float,
        noise_std: float,
        control_cost: bool = True,
        clip_samples: bool = False,
        path_entropy: PathEntropy | None = None,
        state_bound: float = 1e6,
        dtype: str = "float32",
    ):
        check_planner_settings(horizon, n_samples, temperature, noise_std, dtype)
        check_positive("action_dim", action_dim, integer=True)
        self.compute_dtype = planner_compute_dtype(dtype)
        self.action_dim = action_dim
        self.horizon = horizon
        self.n_samples = n_samples
        self.temperature = temperature
        self.noise_std = noise_std
        self.control_cost = control_cost
        self.clip_samples = clip_samples
        self.path_entropy = path_entropy
        self.state_bound = state_bound
        self.dtype = dtype
        self._filter: th.Tensor | None = None

    def initial_nominal(self, n_envs: int, device: th.device | str) -> th.Tensor:
        return th.zeros((n_envs, self.horizon, self.action_dim), device=device)

    def _smoothing(self, device: th.device, dtype: th.dtype) -> th.Tensor:
        if self._filter is None or self._filter.device != device or self._filter.dtype != dtype:
            self._filter = smoothing_matrix(self.horizon, device, dtype)
        return self._filter

    def __getstate__(self) -> dict:
        # the cached filter is rebuilt on first use (keeps pickles device-independent)
        return {**self.__dict__, "_filter": None}

    @th.no_grad()
    def plan(
        self,
        model: DynamicsRewardModel,
        obs: th.Tensor,
        nominal: th.Tensor,
        reset: th.Tensor | None = None,
        alpha: float | th.Tensor = 0.0,
    ) -> PlanResult:
        """
        One MPPI step for E environments at once.

        :param model: learned model
        :param obs: current observations, shape (E, n)
        :param nominal: nominal sequences from the previous call, shape (E, H, m)
        :param reset: bool (E,), True where an episode starts (the nominal is zeroed, not shifted)
        :param alpha: weight of the path entropy (ignored without ``path_entropy``)
        """
        n_envs, horizon, n_samples = obs.shape[0], self.horizon, self.n_samples
        # 1. warm start: the previous nominal shifted one step (zero where an episode starts)
        nominal = warm_start(nominal, reset)
        # 2. smoothed noise, drawn up front for all envs, samples and steps
        noise = th.randn((n_envs, n_samples, horizon, self.action_dim), device=obs.device, dtype=obs.dtype)
        noise = self._smoothing(obs.device, obs.dtype) @ (noise * self.noise_std)
        samples = nominal[:, None] + noise
        if self.clip_samples:
            samples = samples.clamp(-1.0, 1.0)
            noise = samples - nominal[:, None]
        # 3. one batched rollout over E * K samples
        start = obs[:, None].expand(n_envs, n_samples, obs.shape[-1]).reshape(n_envs * n_samples, -1)
        returns, states = rollout(
            model, start, samples.reshape(n_envs * n_samples, horizon, -1), self.state_bound, self.compute_dtype
        )
        returns = returns.view(n_envs, n_samples)
        # 4. scores: predicted return, control term (NN-MPPI), path entropy (MaxDiff)
        scores = returns
        if self.control_cost:
            scores = scores - 0.5 * self.temperature * (noise**2).sum(dim=(-2, -1)) / self.noise_std**2
        entropy = th.zeros_like(scores)
        if self.path_entropy is not None:
            entropy = self.path_entropy(states.view(n_envs, n_samples, horizon, -1))
            scores = scores + alpha * entropy
        finite = th.isfinite(scores)
        scores = th.where(finite, scores, th.full_like(scores, INVALID_SCORE))
        # 5.-6. weights and update of the nominal sequence
        weights = mppi_weights(scores, self.temperature)
        nominal = nominal + th.einsum("ek,ekhm->ehm", weights, noise)
        nominal_finite = th.isfinite(nominal)
        nominal = th.where(nominal_finite, nominal, th.zeros_like(nominal))
        stats = th.stack(
            [
                1.0 / (weights**2).sum(dim=-1),
                (weights * th.nan_to_num(entropy)).sum(dim=-1),
                (weights * th.nan_to_num(returns)).sum(dim=-1),
                (~finite).sum(dim=-1).to(scores.dtype) + (~nominal_finite).flatten(1).sum(dim=-1).to(scores.dtype),
            ],
            dim=-1,
        )
        return PlanResult(nominal[:, 0].clone(), nominal, stats)
