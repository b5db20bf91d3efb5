"""
What a planner remembers from one plan to the next: the states its environments visited (:class:`VisitedStates`, for a
path entropy that looks back) and, during training, the warm start beside them (:class:`PlanCarry`).
"""

from typing import Any

import numpy as np
import torch as th

from sb3_maxdiff.common.mppi import PlanResult
from sb3_maxdiff.common.utils import is_integer


class VisitedStates:
    """
    The last ``size`` states each environment visited, the current one included, oldest first: what a path entropy
    that looks back in time takes in ahead of each planned path (``history`` of :meth:`EntropyBonus.forward`).

    A new episode starts its environment's row afresh. Where the environments' episodes differ in age (one reset
    fewer than ``size`` steps ago), the younger rows repeat their episode's first state so that every row has the
    length of the oldest; with episodes of equal length, as with a time limit, no state is ever repeated. The ages
    are counted on the host, so an update never waits for the device.

    :param size: the most states kept per environment (>= 1)
    """

    def __init__(self, size: int):
        if not (is_integer(size) and size >= 1):
            raise ValueError(f"history must be an integer >= 1 to keep visited states, got {size!r}")
        self.size = int(size)
        self.states: th.Tensor | None = None  # (E, size, n), the newest last; before a row's oldest, copies of it
        self.ages: np.ndarray | None = None  # (E,) how many states of each row are its episode's own

    def update(self, states: th.Tensor, episode_start: np.ndarray | None = None) -> th.Tensor:
        """
        Add the current ``states`` (E, n) and return the visited states, shape (E, W, n) with W the age of the oldest
        row (at most ``size``).

        :param episode_start: bool (E,) on the host, True where the state is the first of a new episode
        """
        n_envs = states.shape[0]
        if self.states is None or self.ages is None or self.states.shape[0] != n_envs:
            self.states = states[:, None].expand(n_envs, self.size, states.shape[-1]).clone()
            self.ages = np.ones(n_envs, dtype=np.int64)
        else:
            self.states = th.cat([self.states[:, 1:], states[:, None]], dim=1)
            self.ages = np.minimum(self.ages + 1, self.size)
            starts = np.zeros(n_envs, dtype=bool) if episode_start is None else np.asarray(episode_start, dtype=bool)
            if starts.any():
                rows = th.as_tensor(np.flatnonzero(starts), device=states.device)
                self.states[rows] = states[rows, None].expand(len(rows), self.size, states.shape[-1])
                self.ages[starts] = 1
        return self.states[:, self.size - int(self.ages.max()) :]

    def reset(self) -> None:
        """Forget every visited state."""
        self.states, self.ages = None, None

    def as_arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """The states and ages as numpy arrays (a ``predict`` state), after at least one :meth:`update`."""
        assert self.states is not None and self.ages is not None
        return self.states.cpu().numpy(), self.ages.copy()

    @classmethod
    def from_arrays(cls, states: np.ndarray, ages: np.ndarray, device: th.device) -> "VisitedStates":
        """The inverse of :meth:`as_arrays`."""
        visited = cls(states.shape[1])
        visited.states = th.as_tensor(states, dtype=th.float32, device=device)
        visited.ages = np.asarray(ages, dtype=np.int64).copy()
        return visited


class PlanCarry:
    """
    The training plans' memory: the warm start (the nominal action sequences the last plan left, one per environment)
    and the states the path entropy looks back at (MaxDiff with ``history > 0``). Both are reset where an episode
    starts, by the planner and by :class:`VisitedStates`. Not saved with a model: it starts afresh with ``learn``.
    """

    def __init__(self) -> None:
        self.nominal: th.Tensor | None = None
        self.visited: VisitedStates | None = None

    def reset(self) -> None:
        """Forget both, for environments that are about to be reset."""
        self.nominal, self.visited = None, None

    def plan(self, policy: Any, obs: th.Tensor, episode_starts: np.ndarray | None) -> PlanResult:
        """``policy``'s plan for ``obs`` (E, *obs_shape), warm-started from the last one; True in ``episode_starts``
        where an environment's episode starts with ``obs``."""
        start_flags = np.asarray(episode_starts, dtype=bool)
        if self.visited is None:
            self.visited = policy.visited_states()  # None where the path entropy does not look back
        history = None if self.visited is None else self.visited.update(obs.float().flatten(start_dim=1), start_flags)
        with th.no_grad():
            result = policy.plan(obs, self.nominal, th.as_tensor(start_flags, device=obs.device), history=history)
        self.nominal = result.nominal
        return result
