"""
Model predictive path integral (MPPI) planning with a learned model,
batched over samples and parallel environments, each environment with its own warm start.
"""

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

import torch as th

from sb3_maxdiff.common.entropy import EntropyBonus
from sb3_maxdiff.common.utils import check_flag, check_fraction, check_positive, device_constant

# Scores that are not finite (diverging model) get this value: they receive ~zero weight.
INVALID_SCORE = -1e30
# Planner statistics returned per environment, in this order: the effective sample size, the weighted means of the
# path entropy and of the predicted return, the count of non-finite values, and the spreads (standard deviations over
# the samples, finite values only) of the predicted return and of the path entropy.
STAT_NAMES = ("ess", "path_entropy", "predicted_return", "nonfinite", "return_spread", "entropy_spread")


class PlanResult(NamedTuple):
    """
    :param actions: normalised actions to execute, shape (E, m)
    :param nominal: updated nominal sequences (warm start of the next call), shape (E, H, m)
    :param stats: per-environment statistics named by ``STAT_NAMES``, shape (E, 6)
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


def sample_spread(values: th.Tensor) -> th.Tensor:
    """The standard deviation over the samples (last dim) of the finite values, shape (E, K) -> (E,); 0 where fewer
    than two are finite."""
    finite = th.isfinite(values)
    count = finite.sum(dim=-1).to(values.dtype)
    zero = th.zeros((), dtype=values.dtype, device=values.device)
    values = th.where(finite, values, zero)
    mean = values.sum(dim=-1) / count.clamp(min=1.0)
    deviation = th.where(finite, values - mean[:, None], zero)
    return ((deviation**2).sum(dim=-1) / count.clamp(min=1.0)).sqrt()


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


@dataclass(frozen=True)
class PlannerSettings:
    """
    The settings of an :class:`MPPIPlanner`, checked once when they are made (errors name the parameter).

    :param horizon: planning horizon H
    :param n_samples: number of sampled action sequences K per environment
    :param temperature: MPPI temperature lambda
    :param noise_std: std sigma of the sampling noise before smoothing
    :param control_cost: add ``lambda * sum_t log N(eta_t; 0, sigma^2)`` to the scores (NN-MPPI as published);
        a tuple of bools gives each of N independent agents batched in one model its own (planning then takes
        one environment per agent, E = N)
    :param clip_samples: clip sampled actions to [-1, 1] before the rollout (the published runs did not)
    :param state_bound: bound on predicted states, so that a diverging model stays finite (``math.inf``: none,
        for known dynamics)
    :param dtype: compute dtype of the model rollouts, "float32" or "bfloat16" (see :func:`rollout`)
    :param value_discount: None: a sample's return is its predicted rewards summed (as published). A discount gamma
        in (0, 1]: ``sum_t gamma^t r_t + gamma^H V(s_H)``, with the planner's prior's value where it has a prior
        (:class:`PlannerPrior`), else the model's learned terminal value ``V``
    :param prior_samples: how many of the ``n_samples`` sequences are the prior's rollouts through the model instead
        of noise around the nominal (0: none; more needs a planner with a prior)
    """

    horizon: int = 40
    n_samples: int = 500
    temperature: float = 0.5
    noise_std: float = 0.3
    control_cost: bool | tuple[bool, ...] = True
    clip_samples: bool = False
    state_bound: float = 1e6
    dtype: str = "float32"
    value_discount: float | None = None
    prior_samples: int = 0

    def __post_init__(self) -> None:
        self.check()

    def check(self) -> "PlannerSettings":
        """Refuse a bad field with an error that names it (done when the settings are made); returns the settings."""
        check_positive("horizon", self.horizon, integer=True)
        check_positive("n_samples", self.n_samples, integer=True)
        check_positive("temperature", self.temperature)
        check_positive("noise_std", self.noise_std)
        check_positive("state_bound", self.state_bound)
        if isinstance(self.control_cost, (tuple, list)):
            if len(self.control_cost) == 0:
                raise ValueError("control_cost must be True, False or a non-empty tuple of them (one per agent), got ()")
            object.__setattr__(self, "control_cost", tuple(check_flag("control_cost", flag) for flag in self.control_cost))
        else:
            check_flag("control_cost", self.control_cost)
        check_flag("clip_samples", self.clip_samples)
        planner_compute_dtype(self.dtype)
        if self.value_discount is not None:
            check_fraction("value_discount", self.value_discount)
        if not (isinstance(self.prior_samples, int) and 0 <= self.prior_samples < self.n_samples):
            raise ValueError(f"prior_samples must be an int in [0, n_samples={self.n_samples}), got {self.prior_samples!r}")
        return self

    @property
    def compute_dtype(self) -> th.dtype:
        return planner_compute_dtype(self.dtype)

    @property
    def per_agent_control_cost(self) -> bool:
        """Whether each agent has its own control-cost flag (a tuple), not one for all."""
        return isinstance(self.control_cost, tuple)

    def control_cost_mask(self, device: th.device, dtype: th.dtype) -> th.Tensor:
        """The control-cost flags as 1.0 / 0.0 per agent, shape (N, 1), made once per device and dtype."""
        if not self.per_agent_control_cost:
            raise ValueError("control_cost_mask needs one control_cost flag per agent (a tuple)")
        return device_constant(self.control_cost, dtype, device)[:, None]


def _generic_rollout(
    model: th.nn.Module,
    obs: th.Tensor,
    actions: th.Tensor,
    state_bound: float,
    value_discount: float | None = None,
    terminal: Callable[[th.Tensor], th.Tensor] | None = None,
) -> tuple[th.Tensor, th.Tensor]:
    """
    Step any ``model(state, action) -> (next_state, reward)`` over (B, .) rows (e.g. known dynamics in the tests);
    with ``value_discount``, the rewards discounted and ``gamma^H * terminal(s_H)`` added (default
    ``model.terminal_value``).
    """
    lead = obs.shape[:-1]
    state = obs.reshape(-1, obs.shape[-1])
    steps = actions.reshape(-1, *actions.shape[-2:]).transpose(0, 1).contiguous()  # (H, B, m): each step's rows together
    total_reward, visited = th.zeros(state.shape[0], dtype=obs.dtype, device=obs.device), []
    weight = 1.0
    for action in steps:
        visited.append(state)
        next_state, reward = model(state, action)
        total_reward = total_reward + reward if value_discount is None else total_reward + weight * reward
        weight *= 1.0 if value_discount is None else value_discount
        state = next_state if state_bound == math.inf else next_state.clamp(-state_bound, state_bound)
    if value_discount is not None:
        value = model.terminal_value if terminal is None else terminal
        total_reward = total_reward + weight * value(state)  # type: ignore[operator]
    states = th.stack(visited, dim=1)
    return total_reward.view(lead), states.view(*lead, *states.shape[-2:])


def rollout(
    model: th.nn.Module,
    obs: th.Tensor,
    actions: th.Tensor,
    state_bound: float,
    dtype: th.dtype = th.float32,
    value_discount: float | None = None,
    terminal: Callable[[th.Tensor], th.Tensor] | None = None,
) -> tuple[th.Tensor, th.Tensor]:
    """
    Roll ``model`` out from ``obs`` under each action sequence: the model's own fused ``rollout`` where it
    has one (:class:`DynamicsRewardModel`), else a step-by-step loop over ``model(state, action)``.

    :param model: learned dynamics and reward, or any ``model(state, action) -> (next_state, reward)``
    :param obs: start states, shape (*lead, n), float32: (E, K, n) in the planner, the first axis the agent's
        for a model batched over independent agents
    :param actions: action sequences, shape (*lead, H, m)
    :param state_bound: predicted states are clamped to [-state_bound, state_bound]
    :param dtype: compute dtype of the multiplies (float32 or bfloat16; the loop ignores it)
    :param value_discount: None: the predicted rewards summed. A discount gamma: ``sum_t gamma^t r_t + gamma^H
        V(s_H)`` with ``terminal`` as ``V``, or the model's ``terminal_value`` (which the model must then have)
    :param terminal: the terminal value of states, (..., n) -> (...) (None: the model's own)
    :return: predicted returns (*lead,) and the visited states s_0 .. s_{H-1}, shape (*lead, H, n)
    """
    if value_discount is not None and terminal is None and not hasattr(model, "terminal_value"):
        raise ValueError(f"a terminal value needs a model with a terminal_value method, got {type(model).__name__}")
    fused = getattr(model, "rollout", None)
    if fused is None:
        return _generic_rollout(model, obs, actions, state_bound, value_discount, terminal)
    if value_discount is None:
        return fused(obs, actions, state_bound, dtype)
    return fused(obs, actions, state_bound, dtype, value_discount, terminal)


class PlannerPrior(Protocol):
    """A policy beside the planner (e.g. :class:`~sb3_maxdiff.common.actor_critic.ActorCritic`): it values the
    states a path ends in and proposes actions."""

    def value(self, obs: th.Tensor) -> th.Tensor:
        """The terminal value of states, (..., n) -> (...)."""

    def act(self, obs: th.Tensor, generator: th.Generator | None = None) -> tuple[th.Tensor, th.Tensor]:
        """The mean action and a drawn one for states (E, B, n), both (E, B, m) in [-1, 1]."""


def prior_paths(
    prior: PlannerPrior,
    model: th.nn.Module,
    obs: th.Tensor,
    n_paths: int,
    horizon: int,
    state_bound: float,
    generator: th.Generator | None = None,
) -> th.Tensor:
    """
    Action sequences of the prior through the model's mean dynamics, ``a_t`` from ``s_t`` and ``s_{t+1} = model(s_t,
    a_t)``: for each environment first the prior's mean actions, then ``n_paths`` paths of drawn ones.

    :param obs: start states, shape (E, n)
    :return: shape (E, 1 + n_paths, H, m)
    """
    n_envs, rows = obs.shape[0], 1 + n_paths
    # (E, rows, n): independent agents' models and priors take their agent's rows on the first axis
    state = obs[:, None].expand(n_envs, rows, obs.shape[-1])
    is_mean = (th.arange(rows, device=obs.device) == 0)[:, None]
    actions = []
    for _ in range(horizon):
        mean, drawn = prior.act(state, generator)
        action = th.where(is_mean, mean, drawn).to(obs.dtype)
        actions.append(action)
        state, _ = model(state, action)
        state = state.clamp(-state_bound, state_bound)
    return th.stack(actions, dim=2)


class MPPIPlanner:
    """
    MPPI with time-smoothed Gaussian noise and an optional MaxDiff path-entropy bonus.

    :param action_dim: size of the (normalised) action
    :param settings: the planner's settings (horizon, samples, temperature, noise, ...)
    :param entropy_bonus: the MaxDiff term with its weight; None for plain NN-MPPI
    :param prior: a policy beside the planner (None: none, as published): its value is the terminal value of each
        path (with ``settings.value_discount``), its mean actions fill the nominal where the warm start has nothing
        (at an episode's start, and the step shifted in at the end), and ``settings.prior_samples`` of the samples
        are its rollouts through the model
    :param settings_kwargs: the fields of :class:`PlannerSettings` as keywords, instead of ``settings``
    """

    def __init__(
        self,
        action_dim: int,
        settings: PlannerSettings | None = None,
        entropy_bonus: EntropyBonus | None = None,
        prior: PlannerPrior | None = None,
        **settings_kwargs: Any,
    ):
        if settings is not None and settings_kwargs:
            raise ValueError(f"pass the planner's settings as settings or as keywords, not both: {sorted(settings_kwargs)}")
        check_positive("action_dim", action_dim, integer=True)
        self.settings = PlannerSettings(**settings_kwargs) if settings is None else settings
        self.action_dim = action_dim
        self.entropy_bonus = entropy_bonus
        if self.settings.prior_samples > 0 and prior is None:
            raise ValueError(f"prior_samples={self.settings.prior_samples} needs a planner with a prior (got None)")
        self.prior = prior
        self._filter: th.Tensor | None = None

    @property
    def horizon(self) -> int:
        return self.settings.horizon

    def initial_nominal(self, n_envs: int, device: th.device | str) -> th.Tensor:
        return th.zeros((n_envs, self.settings.horizon, self.action_dim), device=device)

    def _smoothing(self, device: th.device, dtype: th.dtype) -> th.Tensor:
        if self._filter is None or self._filter.device != device or self._filter.dtype != dtype:
            self._filter = smoothing_matrix(self.settings.horizon, device, dtype)
        return self._filter

    def __getstate__(self) -> dict:
        # the cached filter is rebuilt on first use (keeps pickles device-independent)
        return {**self.__dict__, "_filter": None}

    def scores(
        self,
        returns: th.Tensor,
        noise: th.Tensor,
        states: th.Tensor,
        history: th.Tensor | None = None,
        generator: th.Generator | None = None,
    ) -> tuple[th.Tensor, th.Tensor]:
        """
        The score of each sample: its predicted return, minus the control term where it is on (NN-MPPI), plus
        ``alpha`` times its path entropy (MaxDiff). Where independent agents have their own control-cost flag and
        alpha, each agent's samples are scored by its own: an agent with the flag on and alpha 0 as NN-MPPI's.

        :param returns: predicted returns, shape (E, K)
        :param noise: the smoothed noise of each sample (around the nominal), shape (E, K, H, m)
        :param states: the predicted states, shape (E, K, H, n)
        :param history: states each environment visited before, shape (E, W, n), that the path entropy takes in
            ahead of each sample's predicted states (see :meth:`EntropyBonus.forward`); None: the predicted ones alone
        :param generator: where a random jitter of the path entropy is drawn from, if it has one (None: torch's global
            stream)
        :return: the scores and the path entropies (zeros without the MaxDiff term), both of shape (E, K)
        """
        settings, scores = self.settings, returns
        if settings.control_cost:  # True, or a non-empty tuple of per-agent flags
            control = 0.5 * settings.temperature * (noise**2).sum(dim=(-2, -1)) / settings.noise_std**2
            if settings.per_agent_control_cost:
                control = settings.control_cost_mask(returns.device, scores.dtype) * control
            scores = scores - control
        if self.entropy_bonus is None:
            return scores, th.zeros_like(scores)
        entropy, bonus = self.entropy_bonus(states, history, generator)
        return scores + bonus, entropy

    @th.no_grad()
    def plan(
        self,
        model: th.nn.Module,
        obs: th.Tensor,
        nominal: th.Tensor,
        reset: th.Tensor | None = None,
        generator: th.Generator | None = None,
        history: th.Tensor | None = None,
    ) -> PlanResult:
        """
        One MPPI step for E environments at once.

        :param model: learned model, or any ``model(state, action) -> (next_state, reward)`` (see :func:`rollout`)
        :param obs: current observations, shape (E, n)
        :param nominal: nominal sequences from the previous call, shape (E, H, m)
        :param reset: bool (E,), True where an episode starts (the nominal is zeroed, not shifted)
        :param generator: where the sampling noise (and a random jitter of the path entropy) is drawn from (None: torch's
            global stream)
        :param history: states visited before, shape (E, W, n), for the path entropy (see :meth:`scores`)
        """
        settings = self.settings
        n_envs, horizon, n_samples = obs.shape[0], settings.horizon, settings.n_samples
        flags = settings.control_cost
        if isinstance(flags, tuple) and n_envs != len(flags):  # one control-cost flag per agent
            raise ValueError(
                f"control_cost holds one flag per agent ({len(flags)}): plan for one environment per agent, got {n_envs}"
            )
        # 1. warm start: the previous nominal shifted one step (zero where an episode starts); with a prior, its mean
        # actions where the warm start has nothing
        nominal = warm_start(nominal, reset)
        n_prior, terminal = settings.prior_samples, None
        if self.prior is not None:
            paths = prior_paths(self.prior, model, obs, n_prior, horizon, settings.state_bound, generator)
            if reset is not None:
                nominal = th.where(reset[:, None, None], paths[:, 0], nominal)
            nominal = th.cat([nominal[:, :-1], paths[:, 0, -1:]], dim=1)
            terminal = self.prior.value
        # 2. smoothed noise, drawn up front for all envs, samples and steps (the prior's paths are the last samples)
        noise = th.randn(
            (n_envs, n_samples - n_prior, horizon, self.action_dim), device=obs.device, dtype=obs.dtype, generator=generator
        )
        noise = self._smoothing(obs.device, obs.dtype) @ (noise * settings.noise_std)
        samples = nominal[:, None] + noise
        if settings.clip_samples:
            samples = samples.clamp(-1.0, 1.0)
            noise = samples - nominal[:, None]
        if n_prior > 0:
            samples = th.cat([samples, paths[:, 1:]], dim=1)
            noise = th.cat([noise, paths[:, 1:] - nominal[:, None]], dim=1)
        # 3. one batched rollout over E * K samples: returns (E, K), states (E, K, H, n)
        start = obs[:, None].expand(n_envs, n_samples, obs.shape[-1])
        returns, states = rollout(
            model, start, samples, settings.state_bound, settings.compute_dtype, settings.value_discount, terminal
        )
        # 4. scores: predicted return, control term (NN-MPPI), path entropy (MaxDiff)
        scores, entropy = self.scores(returns, noise, states, history, generator)
        finite = th.isfinite(scores)
        scores = th.where(finite, scores, th.full_like(scores, INVALID_SCORE))
        # 5.-6. weights and update of the nominal sequence
        weights = mppi_weights(scores, settings.temperature)
        nominal = nominal + th.einsum("ek,ekhm->ehm", weights, noise)
        nominal_finite = th.isfinite(nominal)
        nominal = th.where(nominal_finite, nominal, th.zeros_like(nominal))
        stats = th.stack(
            [
                1.0 / (weights**2).sum(dim=-1),
                (weights * th.nan_to_num(entropy)).sum(dim=-1),
                (weights * th.nan_to_num(returns)).sum(dim=-1),
                (~finite).sum(dim=-1).to(scores.dtype) + (~nominal_finite).flatten(1).sum(dim=-1).to(scores.dtype),
                sample_spread(returns),
                sample_spread(entropy),
            ],
            dim=-1,
        )
        return PlanResult(nominal[:, 0].clone(), nominal, stats)
