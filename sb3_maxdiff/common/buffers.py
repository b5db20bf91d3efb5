"""Replay buffer that also stores the action executed at the next state, for the TD-like reward loss."""

from typing import Any, NamedTuple

import numpy as np
import torch as th
from gymnasium import spaces
from stable_baselines3.common.buffers import ReplayBuffer
from stable_baselines3.common.vec_env import VecNormalize

from sb3_maxdiff.common.utils import check_flag, is_integer


class NextActionReplayBufferSamples(NamedTuple):
    observations: th.Tensor
    actions: th.Tensor
    next_observations: th.Tensor
    next_actions: th.Tensor
    rewards: th.Tensor
    bootstrap_masks: th.Tensor
    # 1 where the episode terminated at the next observation (not where it was truncated), as SB3's ``dones``
    dones: th.Tensor


class Cells:
    """
    The (row, environment) cells of a replay draw: ``gather(array)`` equals ``array[rows, envs]`` for an array of
    shape (buffer_size, n_envs, ...), element for element, taken by flat index: numpy's fancy indexing with two
    broadcast index arrays takes a slow path (a whole draw of 20 x 640 rows cost 3 to 4 times as much with it).

    :param rows: row indices, any shape that broadcasts with ``envs``
    :param envs: environment indices
    :param n_envs: environments per row of the buffer
    """

    def __init__(self, rows: np.ndarray, envs: np.ndarray, n_envs: int):
        self.shape = np.broadcast_shapes(rows.shape, envs.shape)
        self.flat = (rows * n_envs + envs).reshape(-1)

    def gather(self, array: np.ndarray) -> np.ndarray:
        """The cells of ``array`` (buffer_size, n_envs, ...), shape (*broadcast shape of rows and envs, ...)."""
        trailing = array.shape[2:]
        return array.reshape(-1, *trailing).take(self.flat, axis=0).reshape(*self.shape, *trailing)


class NextActionReplayBuffer(ReplayBuffer):
    """
    SB3 replay buffer with ``a'``, the action actually executed at ``s'``, for the TD-like reward
    loss ``r + 0.95 * r_hat(s', a')``. The next action of a transition is known one step later,
    so the newest row is never sampled. Sampling is O(batch_size), whatever the fill.

    ``bootstrap_masks`` is 0 where ``a'`` does not follow ``s'`` in the same episode: after a
    termination or a truncation (the next action is taken from a reset state), and after
    :meth:`interrupt` (the environment was reset between two ``learn`` calls).
    """

    next_actions: np.ndarray
    bootstrap_masks: np.ndarray

    def __init__(
        self,
        buffer_size: int,
        observation_space: spaces.Space,
        action_space: spaces.Space,
        device: th.device | str = "auto",
        n_envs: int = 1,
        optimize_memory_usage: bool = False,
        handle_timeout_termination: bool = True,
    ):
        refuse_memory_saving(optimize_memory_usage)
        super().__init__(buffer_size, observation_space, action_space, device, n_envs, False, handle_timeout_termination)
        self.next_actions = np.zeros_like(self.actions)
        self.bootstrap_masks = np.zeros((self.buffer_size, self.n_envs), dtype=np.float32)

    def __getstate__(self) -> dict[str, Any]:
        """
        What pickling keeps (``save_replay_buffer``, checkpoints): while the buffer is not full, only its filled rows,
        so that the file grows with the transitions stored, not with the capacity (a 50k-step run in the default
        buffer of 1M rows writes 50k rows).
        """
        state = dict(self.__dict__)
        if not self.full:
            rows = [
                name
                for name, value in self.__dict__.items()
                if isinstance(value, np.ndarray) and value.ndim >= 1 and value.shape[0] == self.buffer_size
            ]
            state.update({name: self.__dict__[name][: self.pos] for name in rows}, _filled_rows_only=rows)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Back to the full capacity, rows not yet written as zeros (as a fresh buffer); reads full pickles too."""
        state = dict(state)
        for name in state.pop("_filled_rows_only", []):
            filled = state[name]
            state[name] = np.zeros((state["buffer_size"], *filled.shape[1:]), dtype=filled.dtype)
            state[name][: len(filled)] = filled
        self.__dict__.update(state)

    @property
    def _newest(self) -> int:
        return (self.pos - 1) % self.buffer_size

    def add(
        self,
        obs: np.ndarray,
        next_obs: np.ndarray,
        action: np.ndarray,
        reward: np.ndarray,
        done: np.ndarray,
        infos: list[dict[str, Any]],
    ) -> None:
        self.set_next_action(action)
        self.bootstrap_masks[self.pos] = 1.0 - np.asarray(done, dtype=np.float32)
        super().add(obs, next_obs, action, reward, done, infos)

    def set_next_action(self, action: np.ndarray) -> None:
        """
        Store ``action``, executed at the newest transition's next state, as that transition's next action (which
        :meth:`add` does with the transition it takes at that state). Written before that :meth:`add`, the newest
        transition can be sampled with ``ahead=True``, as the next :meth:`add` will make it sampleable.
        """
        if self.pos > 0 or self.full:
            self.next_actions[self._newest] = np.asarray(action).reshape(self.n_envs, self.action_dim)

    def interrupt(self) -> None:
        """Mark the newest transitions as having no known next action (the episode was cut)."""
        if self.pos > 0 or self.full:
            self.bootstrap_masks[self._newest] = 0.0

    def _write_position(self, ahead: bool) -> tuple[int, bool]:
        """``pos`` and ``full`` now, or (``ahead``) as they will be after the next :meth:`add`."""
        if not ahead:
            return self.pos, self.full
        return (self.pos + 1) % self.buffer_size, self.full or self.pos + 1 == self.buffer_size

    def size(self, ahead: bool = False) -> int:
        """
        Number of rows that can be sampled (the newest row waits for its next action); ``ahead``: after the next
        :meth:`add`.
        """
        pos, full = self._write_position(ahead)
        return max((self.buffer_size if full else pos) - 1, 0)

    def _ready_rows(self, shape: tuple[int, ...], ahead: bool = False) -> np.ndarray:
        """Uniform row indices of the given shape among the rows that can be sampled (``ahead``: see :meth:`sample`)."""
        n_ready = self.size(ahead)
        if n_ready < 1:
            raise RuntimeError("The replay buffer needs at least two transitions before it can be sampled")
        offsets = np.random.randint(0, n_ready, size=shape)
        # oldest row is `pos` when full, 0 otherwise; the newest row (pos - 1) is excluded
        pos, full = self._write_position(ahead)
        return (offsets + pos) % self.buffer_size if full else offsets

    def sample(  # type: ignore[override]
        self, batch_size: int, env: VecNormalize | None = None, ahead: bool = False
    ) -> NextActionReplayBufferSamples:
        """
        ``batch_size`` transitions, each from a uniformly drawn row and environment; tensors of shape (B, ...).

        ``ahead``: the draw the same call will make after the next :meth:`add`, made before it, once
        :meth:`set_next_action` has stored the action it will take (the transition that :meth:`add` stores is
        never among them: it waits for its own next action).
        """
        return self._get_samples(self._ready_rows((batch_size,), ahead), env=env)

    def sample_per_env(
        self, batch_size: int, env: VecNormalize | None = None, ahead: bool = False
    ) -> NextActionReplayBufferSamples:
        """
        ``batch_size`` transitions from each environment's own column, for independent agents (agent i
        learns only from environment i); tensors of shape (n_envs, B, ...). ``ahead``: as for :meth:`sample`.
        """
        rows = self._ready_rows((self.n_envs, batch_size), ahead)
        return self._get_samples(rows, env=env, env_inds=np.arange(self.n_envs)[:, None])

    def _get_samples(  # type: ignore[override]
        self, batch_inds: np.ndarray, env: VecNormalize | None = None, env_inds: np.ndarray | None = None
    ) -> NextActionReplayBufferSamples:
        if env_inds is None:
            env_inds = np.random.randint(0, high=self.n_envs, size=(len(batch_inds),))
        cells = Cells(batch_inds, env_inds, self.n_envs)
        data = (
            self._normalize_obs(cells.gather(self.observations), env),
            cells.gather(self.actions),
            self._normalize_obs(cells.gather(self.next_observations), env),
            cells.gather(self.next_actions),
            self._normalize_reward(cells.gather(self.rewards)[..., None], env),
            cells.gather(self.bootstrap_masks)[..., None],
            (cells.gather(self.dones) * (1.0 - cells.gather(self.timeouts)))[..., None],
        )
        return NextActionReplayBufferSamples(*(self.to_torch(np.asarray(x, dtype=np.float32)) for x in data))


def check_replay_buffer(
    buffer_size: int, replay_buffer_class: type[NextActionReplayBuffer] | None, optimize_memory_usage: bool
) -> type[NextActionReplayBuffer]:
    """The replay buffer class of a planner's algorithm (default :class:`NextActionReplayBuffer`), its arguments checked."""
    if not (is_integer(buffer_size) and buffer_size >= 2):
        # the newest transition waits for its next action, so one row alone is never sampled
        raise ValueError(f"buffer_size must be an integer >= 2, got {buffer_size!r}")
    replay_buffer_class = NextActionReplayBuffer if replay_buffer_class is None else replay_buffer_class
    if not (isinstance(replay_buffer_class, type) and issubclass(replay_buffer_class, NextActionReplayBuffer)):
        raise ValueError(
            "replay_buffer_class must be NextActionReplayBuffer or a subclass of it (the model's reward target needs "
            f"the next action it stores), got {replay_buffer_class!r}"
        )
    refuse_memory_saving(optimize_memory_usage)
    return replay_buffer_class


def refuse_memory_saving(optimize_memory_usage: bool) -> None:
    """SB3's memory-saving layout (``optimize_memory_usage=True``) is not this buffer's: refused with the reason."""
    if check_flag("optimize_memory_usage", optimize_memory_usage):
        raise ValueError(
            "optimize_memory_usage=True is not supported: the replay buffer (NextActionReplayBuffer) also keeps "
            "the action taken at each next observation and where an episode broke off, and samples them in SB3's "
            "standard layout only, not in its memory-saving one; use optimize_memory_usage=False"
        )
