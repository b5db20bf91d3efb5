"""Ergodicity diagnostics on processes with known answers, and their SB3 callback."""

import gymnasium as gym
import numpy as np
import pytest
from helpers import TINY
from stable_baselines3.common.logger import configure

from sb3_maxdiff import NNMPPI, ErgodicityLogger
from sb3_maxdiff.common.ergodicity import autocorrelation_time, coverage, mean_squared_displacement, msd_exponent
from sb3_maxdiff.envs import point_mass_id


def test_msd_exponent_of_a_random_walk_is_one():
    rng = np.random.default_rng(0)
    exponents = [msd_exponent(np.cumsum(rng.normal(size=(20_000, 2)), axis=0)) for _ in range(5)]
    assert np.mean(exponents) == pytest.approx(1.0, abs=0.05)


def test_msd_exponent_of_a_straight_line_is_two():
    line = np.linspace(0.0, 1.0, 500)[:, None] * np.array([[3.0, -1.0]])
    assert msd_exponent(line) == pytest.approx(2.0, abs=1e-9)


def test_msd_of_a_still_trajectory():
    assert np.isnan(msd_exponent(np.ones((100, 2))))
    np.testing.assert_allclose(mean_squared_displacement(np.arange(10.0), np.array([1, 3])), [1.0, 9.0])


@pytest.mark.parametrize("phi", [0.0, 0.5, 0.9])
def test_autocorrelation_time_of_ar1(phi):
    rng = np.random.default_rng(1)
    noise = rng.normal(size=200_000)
    x = np.empty_like(noise)
    x[0] = noise[0]
    for t in range(1, len(x)):
        x[t] = phi * x[t - 1] + noise[t]
    assert autocorrelation_time(x) == pytest.approx((1 + phi) / (1 - phi), rel=0.05, abs=0.05)


def test_autocorrelation_time_of_a_drift_is_long():
    assert autocorrelation_time(np.linspace(0.0, 1.0, 1000)) > 300


def test_coverage_counts_grid_cells():
    low, high = np.zeros(2), np.ones(2)
    points = np.array([[0.05, 0.05], [0.06, 0.04], [0.95, 0.95], [1.0, 1.0], [2.0, 0.5]])  # last one outside
    assert coverage(points, low, high, bins=10) == pytest.approx(2 / 100)
    grid = np.stack(np.meshgrid(np.arange(4) + 0.5, np.arange(4) + 0.5), axis=-1).reshape(-1, 2) / 4
    assert coverage(grid, low, high, bins=4) == 1.0
    with pytest.raises(ValueError, match="low < high"):
        coverage(points, high, low, bins=4)


def test_callback_logs_and_keeps_each_episode(tmp_path):
    env = gym.make(point_mass_id("1"), max_episode_steps=30)
    model = NNMPPI(env, **TINY)
    model.set_logger(configure(str(tmp_path), ["csv"]))
    callback = ErgodicityLogger(dims=[0, 1], low=[-5, -5], high=[5, 5], bins=10)
    model.learn(90, callback=callback, log_interval=1)
    assert len(callback.episodes) == 3
    coverages = [episode["coverage"] for episode in callback.episodes]
    assert all(0 < value <= 1 for value in coverages) and coverages == sorted(coverages)
    log = (tmp_path / "progress.csv").read_text()
    for key in ("ergodicity/msd_exponent", "ergodicity/autocorr_time", "ergodicity/coverage"):
        assert key in log


class _Conveyor(gym.Env):
    """Moves one cell along x per step whatever the action; episode k (from 0) starts at x = k: straight paths of known
    cells, each one cell further on."""

    observation_space = gym.spaces.Box(-np.inf, np.inf, (2,))
    action_space = gym.spaces.Box(-1.0, 1.0, (1,))
    resets = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.x, self.resets = float(self.resets), self.resets + 1
        return np.array([self.x, 0.5], dtype=np.float32), {}

    def step(self, action):
        self.x += 1.0
        return np.array([self.x, 0.5], dtype=np.float32), 0.0, False, False, {}


@pytest.mark.parametrize("length", [12, 20])
def test_callback_scores_each_episode_from_its_start_to_its_last_state(length):
    """Episodes of ``length`` steps: each path is the ``length + 1`` states from the reset to the one the time limit
    ends on (the VecEnv has already reset), a straight line over known cells of a grid of unit cells."""
    model = NNMPPI(gym.wrappers.TimeLimit(_Conveyor(), length), **{**TINY, "learning_starts": 1000})
    grid = dict(dims=[0, 1], low=[0, 0], high=[30, 1], bins=30)
    callback = ErgodicityLogger(**grid, min_length=length + 1)
    model.learn(3 * length, callback=callback)
    assert len(callback.episodes) == 3
    for k, episode in enumerate(callback.episodes):
        assert episode["timesteps"] == (k + 1) * length
        assert episode["msd_exponent"] == pytest.approx(2.0)  # a straight line at constant speed
        assert episode["episode_coverage"] == pytest.approx((length + 1) / 30**2)  # x = k .. k + length
        assert episode["coverage"] == pytest.approx((length + 1 + k) / 30**2)  # x = 0 .. k + length so far
    longer = ErgodicityLogger(**grid, min_length=length + 2)
    model.learn(length, callback=longer)
    assert longer.episodes == []  # one state too few to be scored


def test_callback_rejects_bad_grids():
    with pytest.raises(ValueError, match="same length"):
        ErgodicityLogger(dims=[0, 1], low=[-5], high=[5, 5])
    with pytest.raises(ValueError, match="high must exceed low"):
        ErgodicityLogger(dims=[0], low=[1], high=[1])
