"""What a training run logs at a dump (planner statistics, model losses, update counts), against sums by hand."""

import math

import numpy as np
import pytest
import torch as th

from sb3_maxdiff.common.agents import make_agents
from sb3_maxdiff.common.models import ModelLosses
from sb3_maxdiff.common.mppi import STAT_NAMES
from sb3_maxdiff.common.training_stats import TrainingStats

NAN = math.nan


def losses(total: list[float]) -> ModelLosses:
    """Losses of one update of three agents, the dynamics and reward parts a tenth and a hundredth of the total."""
    values = th.tensor(total)
    return ModelLosses(values, 0.1 * values, 0.01 * values)


def flushed(stats: TrainingStats, n_agents: int | None = 3, n_updates: int = 10) -> tuple[dict, int, list[float]]:
    """What ``flush`` records, the update count it returns and the non-finite counts it warns about."""
    logged: dict = {}
    nonfinite: list[float] = []
    agents = make_agents(n_agents)

    def record(key, value, exclude=None):
        logged[key] = value

    count = stats.flush(record, agents, n_updates, th.tensor([0.5, -0.5, 1.0]), nonfinite.append)
    return logged, count, nonfinite


def test_the_losses_are_the_means_over_each_agents_applied_updates_and_the_count_over_every_agent():
    stats = TrainingStats()
    stats.add_update(losses([1.0, 2.0, 3.0]), th.tensor([True, True, True]), applied=True)
    stats.add_update(losses([3.0, NAN, 5.0]), th.tensor([True, False, True]), applied=True)  # agent 1 skipped
    stats.add_update(losses([9.0, 9.0, 9.0]), th.tensor([True, True, True]), applied=False)  # skipped by all
    with pytest.warns(UserWarning, match=r"2 of 3 gradient steps were skipped \(agents \[0, 1, 2\]\)"):
        logged, count, _ = flushed(stats)
    agent_means = [2.0, 2.0, 4.0]  # (1 + 3) / 2, 2 / 1, (3 + 5) / 2
    for index, value in enumerate(agent_means):
        assert logged[f"train/model_loss_agent_{index}"] == pytest.approx(value)
    assert logged["train/model_loss"] == pytest.approx(np.mean(agent_means))
    assert logged["train/dynamics_loss"] == pytest.approx(0.1 * np.mean(agent_means))
    assert logged["train/reward_loss"] == pytest.approx(0.01 * np.mean(agent_means))
    assert logged["train/model_log_std"] == pytest.approx(1.0 / 3.0)
    assert count == 11 and logged["train/n_updates"] == 11  # every agent applied at least one more
    # and the next dump starts afresh: nothing since, nothing logged but the count
    logged, count, _ = flushed(stats, n_updates=count)
    assert count == 11 and "train/model_loss" not in logged


def test_the_planner_statistics_are_the_means_over_calls_and_agents():
    stats = TrainingStats()
    first = th.arange(3 * len(STAT_NAMES), dtype=th.float32).reshape(3, -1)
    second, nonfinite_column = 3.0 * first, STAT_NAMES.index("nonfinite")
    second[1, nonfinite_column] = 4.0
    stats.add_plan(first)
    stats.add_plan(second)
    logged, _, nonfinite = flushed(stats)
    for column, name in enumerate(STAT_NAMES):
        assert logged[f"planner/{name}"] == pytest.approx(float(((first + second) / 2.0)[:, column].mean()))
    assert nonfinite == [float(first[:, nonfinite_column].sum()) + float(second[:, nonfinite_column].sum())]


def test_one_shared_model_counts_its_updates_as_they_are_applied():
    stats = TrainingStats()
    stats.add_update(ModelLosses(th.tensor(2.0), th.tensor(1.0), th.tensor(0.5)), th.tensor(True), applied=True)
    stats.add_update(ModelLosses(th.tensor(NAN), th.tensor(NAN), th.tensor(0.5)), th.tensor(False), applied=True)
    with pytest.warns(UserWarning, match=r"1 of 2 gradient steps were skipped \(the model"):
        logged, count, _ = flushed(stats, n_agents=None, n_updates=0)
    assert count == 1 and logged["train/model_loss"] == pytest.approx(2.0)
    assert logged["train/dynamics_loss"] == pytest.approx(1.0) and logged["train/reward_loss"] == pytest.approx(0.5)
