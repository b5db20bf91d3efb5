import gymnasium as gym
import numpy as np
import pytest
import torch as th
from stable_baselines3 import SAC
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.logger import configure

import sb3_maxdiff  # noqa: F401
from sb3_maxdiff.common.callbacks import PathEntropyBonusLogger
from sb3_maxdiff.common.entropy import path_entropy
from sb3_maxdiff.envs import point_mass_id
from sb3_maxdiff.wrappers import PathEntropyReward

ENV_ID = point_mass_id("1")


def test_bonus_equals_the_planner_entropy_of_the_trailing_states():
    env = PathEntropyReward(gym.make(ENV_ID), alpha=2.0, window=6, explr_dims=[0, 1, 3], explr_weights=[1.0, 0.5, 0.1])
    obs, _ = env.reset(seed=0)
    states = [obs]
    for step in range(12):
        obs, reward, _, _, info = env.step(env.action_space.sample())
        states.append(obs)
        if step < 4:  # fewer than 6 states: no bonus yet
            assert info["path_entropy_bonus"] == 0.0 and reward == info["task_reward"]
            continue
        window = th.as_tensor(np.array(states[-6:])[:, [0, 1, 3]], dtype=th.float64)
        expected = path_entropy(window, th.tensor([1.0, 0.5, 0.1], dtype=th.float64)).item()
        assert info["path_entropy"] == pytest.approx(expected, rel=1e-6)
        assert reward == pytest.approx(info["task_reward"] + 2.0 * expected, rel=1e-6)


def test_the_window_starts_again_with_each_episode():
    """The trailing window holds the current episode's states only: after a reset no bonus until it fills again."""
    env = PathEntropyReward(gym.make(ENV_ID), alpha=1.0, window=4)
    env.reset(seed=0)
    for _ in range(10):
        _, _, _, _, info = env.step(env.action_space.sample())
    assert info["path_entropy_bonus"] != 0.0
    obs, _ = env.reset(seed=1)
    states = [obs]
    for step in range(5):
        obs, reward, _, _, info = env.step(env.action_space.sample())
        states.append(obs)
        if step < 2:  # 2 or 3 states of the new episode: the last episode's do not fill the window
            assert info["path_entropy"] == 0.0 and reward == info["task_reward"]
        else:
            expected = path_entropy(th.as_tensor(np.array(states[-4:]), dtype=th.float64)).item()
            assert info["path_entropy"] == pytest.approx(expected, rel=1e-6)


class TaskReturns(BaseCallback):
    def __init__(self):
        super().__init__()
        self.current, self.episodes = 0.0, []

    def _on_step(self) -> bool:
        info = self.locals["infos"][0]
        self.current += info["task_reward"]
        if "episode" in info:
            self.episodes.append((self.current, info["episode"]["r"], info["episode_bonus"]))
            self.current = 0.0
        return True


def test_sac_logs_the_task_return(tmp_path):
    env = PathEntropyReward(gym.make(ENV_ID, max_episode_steps=40), alpha=5.0, window=10)
    model = SAC("MlpPolicy", env, learning_starts=20, batch_size=16, policy_kwargs=dict(net_arch=[16]), seed=0)
    model.set_logger(configure(str(tmp_path), ["csv"]))
    returns = TaskReturns()
    model.learn(200, callback=[returns, PathEntropyBonusLogger()], log_interval=1)
    assert len(returns.episodes) == 5
    for task_return, monitor_return, bonus in returns.episodes:
        assert monitor_return == pytest.approx(task_return, abs=1e-3)  # Monitor reports the task return
        assert bonus != 0.0
    assert [ep["r"] for ep in model.ep_info_buffer] == pytest.approx([e[1] for e in returns.episodes])
    header = (tmp_path / "progress.csv").read_text().splitlines()[0]
    assert "rollout/ep_bonus_mean" in header and "rollout/path_entropy_bonus" in header


def test_wrapper_errors():
    with pytest.raises(ValueError, match="alpha"):
        PathEntropyReward(gym.make(ENV_ID), alpha=-1.0)
    with pytest.raises(ValueError, match="window"):
        PathEntropyReward(gym.make(ENV_ID), window=1)
    with pytest.raises(ValueError, match="explr_dims"):
        PathEntropyReward(gym.make(ENV_ID), explr_dims=[7])
    image_env = gym.Env()
    image_env.observation_space = gym.spaces.Box(0.0, 1.0, shape=(4, 4))
    image_env.action_space = gym.spaces.Box(-1.0, 1.0, shape=(1,))
    with pytest.raises(ValueError, match=r"observation_space must be a flat Box, got Box\(0.0, 1.0, \(4, 4\)"):
        PathEntropyReward(image_env)
