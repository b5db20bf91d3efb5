"""``overlap_updates=True``: each step's model updates made before the environments step, with the same results."""

import csv
import io

import gymnasium as gym
import numpy as np
import pytest
import torch as th
from helpers import TINY
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.logger import configure
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.noise import NormalActionNoise
from stable_baselines3.common.vec_env import DummyVecEnv
from test_independent_agents import POINT_MASS

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


def short_episodes(n_envs: int) -> DummyVecEnv:
    env = DummyVecEnv([lambda: Monitor(gym.make(POINT_MASS, max_episode_steps=15))] * n_envs)
    env.seed(0)
    return env


def trained(overlap_updates: bool, log_dir, algo=MaxDiffMPPI, independent_agents: bool = True, **kwargs):
    """40 steps per environment (episodes of 15 steps), a CSV log dumped at each episode end."""
    env = short_episodes(3 if independent_agents else 2)
    model = algo(env, independent_agents=independent_agents, seed=0, overlap_updates=overlap_updates, **{**TINY, **kwargs})
    model.set_logger(configure(str(log_dir), ["csv"]))
    recorder = Recorder()
    model.learn(env.num_envs * 40, callback=recorder, log_interval=1)
    return model, np.array(recorder.actions), (log_dir / "progress.csv").read_text()


def assert_same_learning(first, second) -> None:
    (model, actions, log), (other, other_actions, other_log) = first, second
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
    assert "train/model_loss" in log and same_logs(log, other_log)


def same_logs(first: str, second: str) -> bool:
    """
    Two CSV logs equal in every column but the wall-clock ones: losses, update counts, learning rate, the model's
    log_std (read at a dump, inside a step), planner statistics, returns, dumped at the same steps.
    """
    tables = [list(csv.DictReader(io.StringIO(text))) for text in (first, second)]
    left_out = {"time/fps", "time/time_elapsed"}
    return len(tables[0]) == len(tables[1]) > 0 and all(
        {key: value for key, value in one.items() if key not in left_out}
        == {key: value for key, value in other.items() if key not in left_out}
        for one, other in zip(*tables)
    )


@pytest.mark.parametrize(
    "algo, independent_agents, kwargs",
    [
        (MaxDiffMPPI, True, {}),
        # each agent's column wraps around; a learning-rate schedule; one update per step collected
        (NNMPPI, True, {"buffer_size": 25, "gradient_steps": -1, "learning_rate": lambda progress: 1e-3 * progress}),
        # one model for both environments (rows and columns drawn), its buffer wrapping; SB3's action noise
        (
            MaxDiffMPPI,
            False,
            {"buffer_size": 30, "action_noise": NormalActionNoise(np.zeros(2), 0.1 * np.ones(2)), "warmup_actions": "planner"},
        ),
    ],
)
def test_overlapped_updates_learn_exactly_what_updates_after_the_step_learn(tmp_path, algo, independent_agents, kwargs):
    """Same actions at every step, parameters, Adam moments, update count and logs, through episode ends."""
    first = trained(False, tmp_path / "after", algo, independent_agents, **kwargs)
    second = trained(True, tmp_path / "overlapped", algo, independent_agents, **kwargs)
    assert_same_learning(first, second)


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
        model = NNMPPI(short_episodes(3), independent_agents=True, seed=0, overlap_updates=overlap_updates, **TINY)
        model.learn(3 * 60, callback=StopAt(40))
        counts.append(model._n_updates)
        assert not model._ahead.held
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
    batch = MaxDiffMPPI(short_episodes(2), independent_agents=True, overlap_updates=True, **TINY)
    assert batch.agent(1).overlap_updates is True
