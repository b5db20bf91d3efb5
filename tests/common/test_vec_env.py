"""ThreadedVecEnv and EnvStepper: environments stepped in threads, with the results of one after the other."""

import threading

import gymnasium as gym
import numpy as np
import pytest
from stable_baselines3.common.vec_env import DummyVecEnv

import sb3_maxdiff  # noqa: F401  (registers the environments)
from sb3_maxdiff.common.vec_env import EnvStepper, ThreadedVecEnv
from sb3_maxdiff.envs import SWIMMER_HEAVY


def _rollout(vec_env, steps: int) -> list:
    """Every step's observations, rewards, dones and infos under a fixed sequence of random actions."""
    vec_env.seed(7)
    vec_env.action_space.seed(3)
    record = [vec_env.reset()]
    rng = np.random.default_rng(0)
    for _ in range(steps):
        actions = rng.uniform(-1.0, 1.0, (vec_env.num_envs, *vec_env.action_space.shape)).astype(np.float32)
        record.append(vec_env.step(actions))
    vec_env.close()
    return record


def _assert_same(first, second) -> None:
    if isinstance(first, dict):
        assert first.keys() == second.keys()
        for key in first:
            _assert_same(first[key], second[key])
    elif isinstance(first, (list, tuple)):
        assert len(first) == len(second)
        for one, other in zip(first, second):
            _assert_same(one, other)
    else:
        np.testing.assert_array_equal(first, second)


@pytest.mark.parametrize("n_threads", [1, 2, 3, None])
@pytest.mark.parametrize("env_id", ["sb3_maxdiff/PointMass-beta1-v0", SWIMMER_HEAVY])
def test_threads_give_the_steps_of_one_after_the_other(env_id, n_threads):
    """Five environments (shares of 2 and 3, or 2, 1 and 2), short episodes so that several end and reset."""
    make = [lambda: gym.make(env_id, max_episode_steps=6)] * 5
    serial = _rollout(DummyVecEnv(make), 20)
    threaded = _rollout(ThreadedVecEnv(make, n_threads), 20)
    assert any(step[2].any() for step in serial[1:])  # episodes ended on the way
    _assert_same(serial, threaded)


class _Countdown(gym.Env):
    """Terminates after ``length`` or ``length // 2`` steps (drawn at each reset) and is truncated after ``length``:
    some episodes end terminated and truncated at once, others terminated alone. It truncates itself rather than
    under Gymnasium's ``TimeLimit``, which RL Zoo's import replaces with one that never reports both."""

    observation_space = gym.spaces.Box(-np.inf, np.inf, (1,))
    action_space = gym.spaces.Box(-1.0, 1.0, (1,))

    def __init__(self, length: int = 3):
        self.length, self.steps, self.end = length, 0, length

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.steps, self.end = 0, int(self.np_random.choice([self.length, self.length // 2]))
        return np.array([10.0 * self.end], dtype=np.float32), {}

    def step(self, action):
        self.steps += 1
        terminated, truncated = self.steps >= self.end, self.steps >= self.length
        return np.array([self.steps], dtype=np.float32), float(action[0]), terminated, truncated, {}


@pytest.mark.parametrize("n_threads", [1, 2])
def test_an_episode_that_terminates_at_its_time_limit_ends_as_in_one_after_the_other(n_threads):
    """Terminated at the time limit is no truncation (``TimeLimit.truncated`` False), and the terminal observation
    is the last of the episode, not the reset's, as ``DummyVecEnv`` has them."""
    make = [lambda: _Countdown(4)] * 4
    serial = _rollout(DummyVecEnv(make), 12)
    threaded = _rollout(ThreadedVecEnv(make, n_threads), 12)
    ends = [info for _, _, _, infos in serial[1:] for info in infos if "terminal_observation" in info]
    assert {info["TimeLimit.truncated"] for info in ends} == {False}  # terminated, at the limit or before it
    assert {float(info["terminal_observation"][0]) for info in ends} == {2.0, 4.0}
    _assert_same(serial, threaded)


def test_each_thread_steps_its_own_share_at_the_same_time():
    """Two shares of two environments: their steps meet at a barrier, which only concurrent threads pass."""
    barrier, seen = threading.Barrier(2, timeout=10), []

    class Meeting(gym.Env):
        observation_space = gym.spaces.Box(-1.0, 1.0, (1,))
        action_space = gym.spaces.Box(-1.0, 1.0, (1,))

        def __init__(self, index: int):
            self.index = index

        def reset(self, *, seed=None, options=None):
            return np.zeros(1, dtype=np.float32), {}

        def step(self, action):
            if self.index in (0, 2):  # the first environment of each share
                barrier.wait()
            seen.append((self.index, threading.get_ident()))
            return np.full(1, self.index, dtype=np.float32), float(self.index), False, False, {}

    vec_env = ThreadedVecEnv([lambda index=index: Meeting(index) for index in range(4)], n_threads=2)
    vec_env.reset()
    obs, rewards, _, _ = vec_env.step(np.zeros((4, 1), dtype=np.float32))
    vec_env.close()
    assert rewards.tolist() == [0.0, 1.0, 2.0, 3.0] and obs[:, 0].tolist() == [0.0, 1.0, 2.0, 3.0]
    threads = dict(seen)
    assert threads[0] == threads[1] != threads[2] == threads[3]


@pytest.mark.parametrize("n_threads", [0, -1, 1.5, True, "2"])
def test_a_bad_thread_count_names_the_parameter(n_threads):
    with pytest.raises(ValueError, match="n_threads must be a positive int or None"):
        EnvStepper(n_threads)
    with pytest.raises(ValueError, match="n_threads must be a positive int or None"):
        ThreadedVecEnv([lambda: gym.make("sb3_maxdiff/PointMass-beta1-v0")], n_threads)


def test_the_stepper_returns_each_environments_step_in_order():
    envs = [gym.make("sb3_maxdiff/PointMass-beta1-v0") for _ in range(3)]
    twins = [gym.make("sb3_maxdiff/PointMass-beta1-v0") for _ in range(3)]
    for index, (env, twin) in enumerate(zip(envs, twins)):
        env.reset(seed=index)
        twin.reset(seed=index)
    actions = np.array([[0.5, -0.5], [1.0, 0.0], [-1.0, 0.25]], dtype=np.float32)
    stepper = EnvStepper(2)
    outcomes = stepper.step(envs, actions)
    stepper.close()
    _assert_same(outcomes, [twin.step(action) for twin, action in zip(twins, actions)])


def test_the_infos_returned_are_copies_of_the_dicts_not_of_their_values():
    """A caller's change to a returned info leaves the VecEnv's own; the terminal observation is the one returned."""
    vec_env = ThreadedVecEnv([lambda: gym.make("sb3_maxdiff/PointMass-beta1-v0", max_episode_steps=2)] * 2, n_threads=1)
    vec_env.reset()
    vec_env.step(np.zeros((2, 2), dtype=np.float32))
    _, _, dones, infos = vec_env.step(np.zeros((2, 2), dtype=np.float32))
    assert dones.all() and infos[0] is not vec_env.buf_infos[0] and infos[0] == vec_env.buf_infos[0]
    assert infos[0]["terminal_observation"] is vec_env.buf_infos[0]["terminal_observation"]
    infos[0]["added by the caller"] = True
    assert "added by the caller" not in vec_env.buf_infos[0]
