"""
An MPPI controller over known dynamics, with the optional MaxDiff path-entropy term: the planner of
:class:`~sb3_maxdiff.NNMPPI` and :class:`~sb3_maxdiff.MaxDiffMPPI` (:class:`~sb3_maxdiff.common.mppi.MPPIPlanner`,
the same code) called once per control step on a model you give instead of one it learns.
"""

import math
from collections.abc import Callable, Sequence

import torch as th
from torch import nn

from sb3_maxdiff.common.entropy import EntropyBonus, make_path_entropy
from sb3_maxdiff.common.mppi import MPPIPlanner, PlannerSettings, PlanResult
from sb3_maxdiff.common.plan_memory import VisitedStates
from sb3_maxdiff.common.utils import is_integer, is_real

Dynamics = Callable[[th.Tensor, th.Tensor], th.Tensor]
Running = Callable[[th.Tensor, th.Tensor], th.Tensor]


class KnownModel(nn.Module):
    """
    Known dynamics and a running reward in the planner's model interface, ``model(state, action) -> (next state,
    reward)``, over rows of states and actions.

    :param dynamics: ``dynamics(state (B, n), action (B, m)) -> next state (B, n)``, batched in torch
    :param running_reward: ``reward(next state, action) -> (B,)``, of the state the action leads to
    :param low: lower action bounds (m,), or None: actions in the dynamics' own units, unclipped
    :param high: upper action bounds (m,); with ``low``, the planner's actions in [-1, 1] are mapped onto them
    """

    def __init__(
        self, dynamics: Dynamics, running_reward: Running, low: th.Tensor | None = None, high: th.Tensor | None = None
    ):
        super().__init__()
        self.dynamics, self.running_reward = dynamics, running_reward
        self.low, self.high = low, high
        self._affine: tuple[th.device, th.dtype, th.Tensor, th.Tensor] | None = None

    def _middle_and_half_range(self, like: th.Tensor) -> tuple[th.Tensor, th.Tensor]:
        """``(high + low) / 2`` and ``(high - low) / 2`` on ``like``'s device and dtype, made once for each."""
        if self._affine is None or self._affine[:2] != (like.device, like.dtype):
            low, high = self.low.to(like), self.high.to(like)  # type: ignore[union-attr]
            self._affine = (like.device, like.dtype, 0.5 * (high + low), 0.5 * (high - low))
        return self._affine[2], self._affine[3]

    def to_action(self, action: th.Tensor) -> th.Tensor:
        """The dynamics' action from the planner's (mapped from [-1, 1] onto [low, high] where bounds are given)."""
        if self.low is None or self.high is None:
            return action
        middle, half_range = self._middle_and_half_range(action)
        return th.addcmul(middle, action.clamp(-1.0, 1.0), half_range)

    def forward(self, state: th.Tensor, action: th.Tensor) -> tuple[th.Tensor, th.Tensor]:
        if self.low is not None and self.high is not None:  # the planner's samples are in [-1, 1] already
            middle, half_range = self._middle_and_half_range(action)
            action = th.addcmul(middle, action, half_range)
        next_state = self.dynamics(state, action)
        return next_state, self.running_reward(next_state, action)


class MPPIController:
    """
    MPPI over known dynamics, optionally exploring with MaxDiff's path entropy: each sampled action sequence ``k``
    is scored ``R_k + alpha * S_k``, its summed running reward plus ``alpha`` times the entropy
    ``S_k = 0.5 log det cov(X_k)`` of its predicted states (over ``explr_dims``). Call :meth:`command` once per
    control step with the current state; it returns the action to apply and keeps the rest of the planned
    sequence as the next call's warm start (:meth:`reset` forgets it). With ``alpha=0`` it is plain MPPI.

    Compared with pytorch_mppi's ``MPPI(dynamics, running_cost, nx, noise_sigma, ...)`` and ``command(state)``:
    the dynamics and the running reward (or ``running_cost``, its negative) are the same kind of batched torch
    functions of ``(state, action)``, the reward taken on the state the action leads to, as pytorch_mppi takes its
    cost; the noise is one standard deviation ``noise_std`` for every action dim (not a covariance matrix), smoothed
    in time (``eta_t = 0.5 eta_{t-1} + 0.5 eps_t``) as in the MaxDiff paper; with ``low`` and ``high`` the
    samples are drawn in [-1, 1] (``noise_std`` relative to half the range) and mapped onto the bounds; the
    control term ``lambda * sum_t log N(eta_t; 0, sigma^2)`` is optional (``control_cost``), on by default as in
    NN-MPPI; and several states may be controlled at once (a batch of states, each with its own warm start).

    :param dynamics: ``dynamics(state (B, n), action (B, m)) -> next state (B, n)``
    :param running_reward: ``reward(next state, action) -> (B,)``; give this or ``running_cost``
    :param running_cost: ``cost(next state, action) -> (B,)``, minimised (the reward is its negative)
    :param state_dim: n, the size of a state
    :param action_dim: m, the size of an action
    :param horizon: planning horizon H
    :param n_samples: sampled action sequences K
    :param temperature: MPPI temperature lambda
    :param noise_std: standard deviation of the sampling noise (in [-1, 1] units where bounds are given)
    :param alpha: weight of the path entropy (0: plain MPPI)
    :param explr_dims: the state dims whose path entropy is maximised (None: all)
    :param explr_weights: a weight per exploration dim
    :param window: False: one covariance over the horizon; True: the mean over windows of ``max(H // 4, 2 d)``
        steps; an int: that window length
    :param entropy_method: "logdet", "top_eigs" or "log_trace"
    :param history: how many of the states the controller was called with, the current one included, the path
        entropy takes in ahead of each sample's predicted states (0: the predicted states alone, as the paper's
        synthesis), the way the paper's model-free variant takes the entropy over the agent's recent states. Over its
        own horizon alone the entropy is largest for a loop (a straight path has no spread across it), and the
        realized path circles; with the recent states in, the loop grows with ``history`` but stays a loop: it does
        not make the path diffusive (docs/guide/controller.md gives the measurements).
    :param control_cost: add NN-MPPI's control term to the scores
    :param entropy_jitter: "diagonal" (``1e-8 * I`` added to each covariance) or "random" (the authors' draw of
        N(0, (1e-8)^2) on every entry), as for :class:`~sb3_maxdiff.MaxDiffMPPI`
    :param low: lower action bounds (None: unbounded actions)
    :param high: upper action bounds
    :param device: torch device of the planning
    """

    def __init__(
        self,
        dynamics: Dynamics,
        running_reward: Running | None = None,
        *,
        running_cost: Running | None = None,
        state_dim: int,
        action_dim: int,
        horizon: int = 20,
        n_samples: int = 500,
        temperature: float = 0.5,
        noise_std: float = 0.3,
        alpha: float = 0.0,
        explr_dims: Sequence[int] | None = None,
        explr_weights: Sequence[float] | None = None,
        window: bool | int = False,
        entropy_method: str = "logdet",
        history: int = 0,
        control_cost: bool = True,
        entropy_jitter: str = "diagonal",
        low: Sequence[float] | None = None,
        high: Sequence[float] | None = None,
        device: th.device | str = "cpu",
    ):
        if (running_reward is None) == (running_cost is None):
            raise ValueError("give exactly one of running_reward and running_cost")
        if running_cost is not None:
            cost = running_cost
            running_reward = lambda state, action: -cost(state, action)  # noqa: E731
        assert running_reward is not None  # exactly one of the two was given
        if (low is None) != (high is None):
            raise ValueError("give both low and high (action bounds), or neither")
        if not (is_real(alpha) and alpha >= 0):
            raise ValueError(f"alpha must be a number >= 0, got {alpha!r}")
        if not (is_integer(history) and history >= 0):
            raise ValueError(f"history must be an integer >= 0 (states taken into the path entropy), got {history!r}")
        bounds = None
        if low is not None and high is not None:
            bounds = th.as_tensor(low, dtype=th.float32), th.as_tensor(high, dtype=th.float32)
            if bounds[0].shape != (action_dim,) or bounds[1].shape != (action_dim,) or not (bounds[0] < bounds[1]).all():
                raise ValueError(f"low and high must hold {action_dim} values each, with low < high; got {low} and {high}")
        self.device = th.device(device)
        self.state_dim = state_dim
        self.model = KnownModel(dynamics, running_reward, *(bounds or (None, None)))
        settings = PlannerSettings(
            horizon=horizon,
            n_samples=n_samples,
            temperature=temperature,
            noise_std=noise_std,
            control_cost=control_cost,
            clip_samples=bounds is not None,
            state_bound=math.inf,  # known dynamics: no bound against a diverging model
        )
        bonus = None
        if alpha > 0:
            entropy = make_path_entropy(
                state_dim, horizon, explr_dims, explr_weights, window, entropy_method, jitter=entropy_jitter
            )
            bonus = EntropyBonus(entropy, alpha).to(self.device)
        self.planner = MPPIPlanner(action_dim, settings, bonus)
        self.history = int(history)
        self.nominal: th.Tensor | None = None
        # the last `history` states of each row, for the path entropy (none kept without history or alpha)
        self.visited = VisitedStates(self.history) if self.history > 0 and bonus is not None else None
        self.last: PlanResult | None = None

    @property
    def alpha(self) -> float:
        """The weight of the path entropy (0 for plain MPPI)."""
        return 0.0 if self.planner.entropy_bonus is None else float(self.planner.entropy_bonus.alpha)

    def reset(self) -> None:
        """Forget the warm start and the visited states: the next :meth:`command` plans from a zero sequence."""
        self.nominal = None
        if self.visited is not None:
            self.visited.reset()

    def command(self, state: th.Tensor | Sequence[float]) -> th.Tensor:
        """
        The action to apply now.

        :param state: the current state, shape (n,), or a batch of states (E, n), each with its own warm start
        :return: the action in the dynamics' units, shape (m,), or (E, m) for a batch
        """
        state = th.as_tensor(state, dtype=th.float32, device=self.device)
        single = state.dim() == 1
        states = state[None] if single else state
        if states.dim() != 2 or states.shape[-1] != self.state_dim:
            raise ValueError(f"state must have shape ({self.state_dim},) or (E, {self.state_dim}), got {tuple(state.shape)}")
        if self.nominal is None or self.nominal.shape[0] != states.shape[0]:
            self.nominal = self.planner.initial_nominal(states.shape[0], self.device)
        history = None if self.visited is None else self.visited.update(states)
        self.last = self.planner.plan(self.model, states, self.nominal, history=history)
        self.nominal = self.last.nominal
        action = self.model.to_action(self.last.actions)
        return action[0] if single else action
