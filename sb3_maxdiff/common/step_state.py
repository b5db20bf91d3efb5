"""
What NN-MPPI and MaxDiff carry from one training step to the next besides the model and the replay buffer: the
planner's warm start and visited states (:class:`PlanCarry`) and, with ``overlap_updates``, the model updates made
before the environments step (:class:`UpdatesAhead`). Neither is saved with a model: both start afresh with ``learn``.
"""

from typing import Any

import numpy as np
import torch as th
from stable_baselines3.common.type_aliases import TrainFreq, TrainFrequencyUnit

from sb3_maxdiff.common.entropy import VisitedStates
from sb3_maxdiff.common.mppi import PlanResult
from sb3_maxdiff.common.optimizers import ModelUpdate


class PlanCarry:
    """
    The training plans' memory: the warm start (the nominal action sequences the last plan left, one per environment)
    and the states the path entropy looks back at (MaxDiff with ``history > 0``). Both are reset where an episode
    starts, by the planner and by :class:`VisitedStates`.
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


class UpdatesAhead:
    """
    ``overlap_updates``: the updates of the ``train`` call that SB3 makes after an environment step, made as soon as
    the step's actions are planned and held here until that call takes them; with the model's mean ``log_std`` from
    before them, which is what a log written during the step shows.
    """

    def __init__(self) -> None:
        self.updates: list[ModelUpdate] | None = None
        self.log_std: th.Tensor | None = None

    @property
    def held(self) -> bool:
        """Whether updates were made ahead and not yet taken (an empty list counts: none were due)."""
        return self.updates is not None

    def hold(self, updates: list[ModelUpdate], log_std: th.Tensor) -> None:
        self.updates, self.log_std = updates, log_std

    def logged_log_std(self, log_std: th.Tensor) -> th.Tensor:
        """What a log written now shows of the model's ``log_std``: its mean from before the updates held, if any."""
        if self.held:
            assert self.log_std is not None  # held with the updates
            return self.log_std
        return log_std

    def take(self) -> list[ModelUpdate] | None:
        """The updates held (None where none were made ahead), which are then no longer held."""
        updates, self.updates = self.updates, None
        return updates


def check_overlap_updates(overlap_updates: bool, train_freq: TrainFreq | Any) -> None:
    """``overlap_updates`` makes each step's updates before the environments step: only with updates after every step."""
    frequency = (train_freq.frequency, train_freq.unit) if isinstance(train_freq, TrainFreq) else None
    if overlap_updates and frequency != (1, TrainFrequencyUnit.STEP):
        raise ValueError(
            "overlap_updates=True makes each step's model updates before the environments step, so it needs "
            f"train_freq=1 (updates after every step), got train_freq={train_freq!r}"
        )


def make_updates_ahead(algorithm: Any, buffer_actions: np.ndarray, n_envs: int) -> None:
    """
    ``overlap_updates``: make the updates of the ``train`` call that SB3 makes once the environments have taken
    ``buffer_actions`` and the step is stored (when ``num_timesteps > learning_starts`` after the step and
    ``gradient_steps > 0``), now, as they will be then: the step counted, the learning rate of that point, the step's
    next action stored; ``algorithm``'s ``train`` then only takes them from ``algorithm._ahead``.
    """
    algorithm._stats.add_updates(algorithm._ahead.take())  # made for a step whose train() call did not come
    steps_after = algorithm.num_timesteps + n_envs
    gradient_steps = algorithm.gradient_steps if algorithm.gradient_steps >= 0 else n_envs
    if steps_after <= algorithm.learning_starts or gradient_steps <= 0:
        return
    progress = algorithm._current_progress_remaining
    algorithm._update_current_progress_remaining(steps_after, algorithm._total_timesteps)  # the rate after the step
    try:
        algorithm.replay_buffer.set_next_action(buffer_actions)
        # what a log dumped during the step shows (the mean, taken as then: a copy's would round differently)
        log_std = algorithm.policy.model.log_std.detach().mean()
        algorithm._ahead.hold(algorithm._model_updates(gradient_steps, algorithm.batch_size, ahead=True), log_std)
    finally:
        algorithm._current_progress_remaining = progress  # SB3 moves it on after the step, as before
        algorithm.policy.set_training_mode(False)  # as SB3 left it for collecting the step
