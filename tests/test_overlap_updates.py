"""``overlap_updates=True``: each step's model updates made before the environments step, with the same results."""

import gymnasium as gym
import numpy as np
import pytest
import torch as th
from helpers import TINY
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.noise import NormalActionNoise
from stable_baselines3.common.vec_env import DummyVecEnv
from test_independent_agents import POINT_MASS, vec_env

from sb3_maxdiff import NNMPPI, MaxDiffMPPI
from sb3_maxdiff.common.buffers import NextActionReplayBuffer


class Recorder(BaseCallback):
    """The actions of every step."""

    def __init__(self):
        super().__init__()
        self.actions: list[np.ndarray] = []

    def _on_step(self) -> bool:
        self.actions.append(np.array(self.locals["actions"]))
        return True


def trained(overlap_updates: bool, algo=MaxDiffMPPI, independent_agents: bool = True, steps: int = 90, **kwargs):
    env = vec_env(3) if independent_agents else DummyVecEnv([lambda: gym.make(POINT_MASS)] * 2)
    env.seed(0)
    model = algo(env, independent_agents=independent_agents, seed=0, overlap_updates=overlap_updates, **{**TINY, **kwargs})
    recorder = Recorder()
    model.learn(env.num_envs * steps, callback=recorder)
    return model, np.array(recorder.actions)


def assert_same_learning(first, second) -> None:
    (model, actions), (other, other_actions) = first, second
    np.testing.assert_array_equal(actions, other_actions)
    for (name, param), other_param in zip(model.policy.named_parameters(), other.policy.parameters()):
        assert th.equal(param, other_param), name
    states = [model.policy.optimizer.state_dict()["state"], other.policy.optimizer.state_dict()["state"]]
    assert states[0].keys() == states[1].keys()
    for key in states[0]:
        for name, value in states[0][key].items():
            assert th.equal(value, states[1][key][name]), (key, name)
    assert model._n_updates == other._n_updates > 0
    assert model.num_timesteps == other.num_timesteps


@pytest.mark.parametrize(
    "algo, independent_agents, kwargs",
    [
        (MaxDiffMPPI, True, {}),
        (NNMPPI, True, {"buffer_size": 25}),  # each agent's column wraps around several times
        (MaxDiffMPPI, True, {"gradient_steps": -1, "learning_rate": lambda progress: 1e-3 * progress}),
        (MaxDiffMPPI, False, {"buffer_size": 30}),  # one model for both environments: rows and columns drawn
        (NNMPPI, False, {"action_noise": NormalActionNoise(np.zeros(2), 0.1 * np.ones(2)), "warmup_actions": "planner"}),
    ],
)
def test_overlapped_updates_learn_exactly_what_updates_after_the_step_learn(algo, independent_agents, kwargs):
    """Same actions at every step, parameters, Adam moments and update count, through episode ends (every 50 steps)."""
    first = trained(False, algo, independent_agents, **kwargs)
    second = trained(True, algo, independent_agents, **kwargs)
    assert_same_learning(first, second)


def test_the_logged_training_statistics_are_those_of_updates_after_the_step(tmp_path):
    """
    Losses, update counts, planner statistics, returns: the same logs, dumped at the same steps. The model's log_std,
    read when a dump happens (at an episode end, inside the step), is the one after that step's updates.
    """
    from stable_baselines3.common.logger import configure

    rows = []
    for overlap_updates in (False, True):
        model = MaxDiffMPPI(vec_env(3), independent_agents=True, seed=0, overlap_updates=overlap_updates, **TINY)
        model.set_logger(configure(str(tmp_path / str(overlap_updates)), ["csv"]))
        model.learn(3 * 120, log_interval=1)  # a dump at every episode end (every 50 steps)
        rows.append((tmp_path / str(overlap_updates) / "progress.csv").read_text())
    assert rows[0].count("\n") == 3 and "train/model_loss" in rows[0]
    assert _same_but_clocks(*rows)


def _same_but_clocks(first: str, second: str) -> bool:
    """The two CSV logs equal in every column but the wall-clock ones and the model's log_std (as it is at the dump)."""
    import csv
    import io

    tables = [list(csv.DictReader(io.StringIO(text))) for text in (first, second)]
    clocks = {"time/fps", "time/time_elapsed", "train/model_log_std"}
    return len(tables[0]) == len(tables[1]) and all(
        {key: value for key, value in one.items() if key not in clocks}
        == {key: value for key, value in other.items() if key not in clocks}
        for one, other in zip(*tables)
    )


@pytest.mark.parametrize("buffer_size, n_adds", [(6, 20), (50, 12)])
def test_a_draw_ahead_of_an_add_is_the_draw_after_it(buffer_size, n_adds):
    """The rows, columns and contents ``sample(ahead=True)`` gives before an add are those ``sample`` gives after it."""
    space = gym.spaces.Box(-1.0, 1.0, (2,))
    buffer = NextActionReplayBuffer(buffer_size, space, space, device="cpu", n_envs=2)
    rng = np.random.default_rng(0)
    for index in range(n_adds):
        obs, next_obs, action = rng.normal(size=(3, 2, 2))
        done = rng.random(2) < 0.2
        if buffer.size(ahead=True) >= 1:
            buffer.set_next_action(action)
            np.random.seed(index)
            ahead = [buffer.sample(7, ahead=True), buffer.sample_per_env(5, ahead=True)]
        buffer.add(obs, next_obs, action, rng.normal(size=2), done, [{}, {}])
        if buffer.size() >= 1:
            np.random.seed(index)
            after = [buffer.sample(7), buffer.sample_per_env(5)]
            for one, other in zip(ahead, after):
                for name, value in one._asdict().items():
                    assert th.equal(value, getattr(other, name)), (index, name)
        assert buffer.size(ahead=True) == min(index + 1, buffer.buffer_size - 1)  # SB3 splits the size over the columns


class StopAt(BaseCallback):
    def __init__(self, step: int):
        super().__init__()
        self.step = step

    def _on_step(self) -> bool:
        return self.n_calls < self.step


def test_a_callback_that_stops_training_sees_that_steps_updates_made_and_counted():
    """What differs, as documented: the step a callback stops at has its updates made (and counted) already."""
    counts = []
    for overlap_updates in (False, True):
        model = NNMPPI(vec_env(3), independent_agents=True, seed=0, overlap_updates=overlap_updates, **TINY)
        model.learn(3 * 60, callback=StopAt(40))
        counts.append(model._n_updates)
        assert model._updates_made is None
    gradient_steps = TINY.get("gradient_steps", 5)
    assert counts[1] == counts[0] + gradient_steps


def test_overlap_updates_is_checked_and_chosen_at_load_like_cuda_graph(tmp_path):
    with pytest.raises(ValueError, match=r"overlap_updates must be True or False, got 'yes'"):
        NNMPPI(POINT_MASS, overlap_updates="yes")
    with pytest.raises(
        ValueError, match=r"overlap_updates=True .* needs train_freq=1 .* got train_freq=TrainFreq\(frequency=2"
    ):
        NNMPPI(POINT_MASS, overlap_updates=True, train_freq=2)
    with pytest.raises(ValueError, match=r"needs train_freq=1"):
        NNMPPI(POINT_MASS, overlap_updates=True, train_freq=(1, "episode"))
    model = NNMPPI(POINT_MASS, overlap_updates=True, **TINY)
    model.save(tmp_path / "model")
    assert NNMPPI.load(tmp_path / "model").overlap_updates is False  # how to run, not saved
    assert NNMPPI.load(tmp_path / "model", overlap_updates=True).overlap_updates is True
    with pytest.raises(ValueError, match=r"overlap_updates must be True or False, got 1"):
        NNMPPI.load(tmp_path / "model", overlap_updates=1)
    batch = MaxDiffMPPI(vec_env(2), independent_agents=True, overlap_updates=True, **TINY)
    assert batch.agent(1).overlap_updates is True
