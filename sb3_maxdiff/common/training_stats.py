"""
What the training step counts on the device between two log dumps (planner statistics, model losses, applied
updates), so that it never waits for the host: read with one copy when the logs are written.
"""

import warnings
from collections.abc import Callable

import numpy as np
import torch as th

from sb3_maxdiff.common.actor_critic import ActorCriticLosses
from sb3_maxdiff.common.agents import AgentLayout, Record
from sb3_maxdiff.common.models import ModelLosses
from sb3_maxdiff.common.mppi import STAT_NAMES
from sb3_maxdiff.common.training import ModelUpdate


class DeviceSums:
    """
    Running sums of tensors kept on the device between two logger dumps, so that the training step never
    waits for the host: they are read (one copy) only when the logs are written.
    """

    def __init__(self) -> None:
        self.sums: dict[str, th.Tensor] = {}

    def add(self, name: str, value: th.Tensor) -> None:
        value = value.detach()
        self.sums[name] = value.clone() if name not in self.sums else self.sums[name] + value

    def pop(self) -> dict[str, np.ndarray]:
        """The sums on the host (one copy), and a fresh start."""
        if not self.sums:
            return {}
        names, tensors = list(self.sums), list(self.sums.values())
        flat = th.cat([tensor.flatten().float() for tensor in tensors]).cpu().numpy()
        sizes = np.cumsum([tensor.numel() for tensor in tensors])[:-1]
        self.sums = {}
        return {name: part.reshape(tensor.shape) for name, part, tensor in zip(names, np.split(flat, sizes), tensors)}


class TrainingStats:
    """Device-side sums of one training run's planner statistics, model updates and actor-critic updates, logged at
    each dump."""

    def __init__(self) -> None:
        self.sums = DeviceSums()
        self.planner_calls = 0
        self.attempted_updates = 0
        self.critic_updates = 0

    def add_plan(self, stats: th.Tensor) -> None:
        """One planning call's statistics, shape (E, len(STAT_NAMES))."""
        self.sums.add("planner", stats)
        self.planner_calls += 1

    def add_updates(self, updates: list[ModelUpdate] | None) -> None:
        """The gradient steps of one ``train`` call (None: none)."""
        for update in updates or []:
            self.add_update(*update)

    def add_update(self, loss: ModelLosses, finite: th.Tensor, applied: bool) -> None:
        """
        One gradient step: its losses where it was applied (``finite``, per agent), nothing more where it
        was skipped on the host (``applied`` False).
        """
        self.attempted_updates += 1
        if not applied:
            return
        parts = [loss.total, loss.dynamics, loss.reward] + ([] if loss.value is None else [loss.value])
        losses = th.stack(parts).detach()
        self.sums.add("losses", th.where(finite, losses, th.zeros((), device=losses.device)))
        self.sums.add("applied", finite.float())

    def add_critic(self, losses: ActorCriticLosses) -> None:
        """One SAC update of the actor and critics (``terminal_value="q"``)."""
        self.sums.add("critic", th.stack(losses))
        self.critic_updates += 1

    def flush(
        self,
        record: Record,
        agents: AgentLayout,
        n_updates: int,
        model_log_std: th.Tensor,
        warn_nonfinite: Callable[[float], None],
    ) -> int:
        """
        Log the means since the last dump (one host copy), warn about skipped updates, start afresh.

        :param record: the logger's ``record``
        :param agents: who learns from which environment (per-agent values and messages)
        :param n_updates: updates applied before these
        :param model_log_std: the model's log std, logged beside the losses
        :param warn_nonfinite: called with the number of non-finite planner values
        :return: updates applied, these included
        """
        sums = self.sums.pop()
        if "planner" in sums:
            planner = sums["planner"] / self.planner_calls  # (E, len(STAT_NAMES))
            for name, values in zip(STAT_NAMES, planner.T):
                record(f"planner/{name}", float(values.mean()))
            warn_nonfinite(float(sums["planner"][:, STAT_NAMES.index("nonfinite")].sum()))
        self.planner_calls = 0
        attempted, self.attempted_updates = self.attempted_updates, 0
        applied = sums.get("applied", np.zeros(agents.n_agents or ()))
        if attempted:
            n_updates += round(float(np.min(applied)))
            skipped = attempted - applied
            if np.any(skipped > 0):
                warnings.warn(
                    f"Non-finite model loss: {int(np.max(skipped))} of {attempted} gradient steps were skipped"
                    f"{agents.skipped_where(skipped)} (the model keeps its parameters)"
                )
        record("train/n_updates", n_updates, exclude="tensorboard")
        model_loss = None
        if "losses" in sums:
            losses = sums["losses"] / np.maximum(applied, 1.0)  # (3,) or (3, N); 4 rows with a terminal value
            for name, values in zip(("model_loss", "dynamics_loss", "reward_loss", "value_loss"), losses):
                record(f"train/{name}", float(np.mean(values)))
            record("train/model_log_std", float(model_log_std.detach().mean()))
            model_loss = losses[0]
        agents.record(record, model_loss)
        if "critic" in sums:  # SAC's names, the means since the last dump
            for name, value in zip(ActorCriticLosses._fields, sums["critic"] / self.critic_updates):
                record(f"train/{name}_loss" if name in ("actor", "critic") else f"train/{name}", float(value))
        self.critic_updates = 0
        return n_updates
