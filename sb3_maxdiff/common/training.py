"""
The model's update on a minibatch, the cut of a replay draw into minibatches, and what ``overlap_updates`` holds
between the updates it makes before the environments step and SB3's ``train`` call after it.
"""

from collections.abc import Sequence
from typing import Any, NamedTuple

import torch as th
from stable_baselines3.common.type_aliases import TrainFreq, TrainFrequencyUnit

from sb3_maxdiff.common.models import DynamicsRewardBase, ModelLosses
from sb3_maxdiff.common.optimizers import apply_update
from sb3_maxdiff.common.utils import check_flag


class ModelUpdate(NamedTuple):
    """One gradient step: its losses, whether they were finite (per agent), whether it was applied."""

    losses: ModelLosses
    finite: th.Tensor
    applied: bool


def minibatch(data: Sequence[th.Tensor], step: int, batch_size: int) -> list[th.Tensor]:
    """Minibatch ``step`` of a replay draw: rows ``[step * batch_size, (step + 1) * batch_size)`` on the second-to-last
    axis of each tensor (views, no copy)."""
    return [tensor[..., step * batch_size : (step + 1) * batch_size, :] for tensor in data]


def model_update(model: DynamicsRewardBase, optimizer: th.optim.Optimizer, batch: Sequence[th.Tensor]) -> ModelUpdate:
    """
    One update of ``model`` on a minibatch: its loss, the optimizer step, skipped where the loss is not finite (see
    :func:`~sb3_maxdiff.common.optimizers.apply_update`), then the Polyak step of a terminal value's target network.

    :param model: the learned model (its ``loss`` takes the tensors of ``batch``)
    :param optimizer: its optimizer
    :param batch: the minibatch, rows on the second-to-last axis
    """
    losses = model.loss(*batch)
    finite = th.isfinite(losses.total)
    applied = apply_update(optimizer, losses.total, finite)
    if model.has_value:
        model.update_value_target()
    return ModelUpdate(losses, finite, applied)


def model_updates(
    model: DynamicsRewardBase,
    optimizer: th.optim.Optimizer,
    data: Sequence[th.Tensor],
    batch_size: int,
    gradient_steps: int,
) -> list[ModelUpdate]:
    """``gradient_steps`` calls of :func:`model_update` on consecutive minibatches of ``batch_size`` rows of one replay
    draw ``data`` (``batch_size * gradient_steps`` rows), in order."""
    return [model_update(model, optimizer, minibatch(data, step, batch_size)) for step in range(gradient_steps)]


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


def check_overlap_updates(overlap_updates: Any, train_freq: TrainFreq | Any) -> bool:
    """
    ``overlap_updates``, checked: a bool, and True only with updates after every step (it makes each step's updates
    before the environments step).
    """
    overlap_updates = check_flag("overlap_updates", overlap_updates)
    frequency = (train_freq.frequency, train_freq.unit) if isinstance(train_freq, TrainFreq) else None
    if overlap_updates and frequency != (1, TrainFrequencyUnit.STEP):
        raise ValueError(
            "overlap_updates=True makes each step's model updates before the environments step, so it needs "
            f"train_freq=1 (updates after every step), got train_freq={train_freq!r}"
        )
    return overlap_updates
