import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env as gym_check_env
from stable_baselines3.common.env_checker import check_env as sb3_check_env

import sb3_maxdiff
from sb3_maxdiff.envs import POINT_MASS_BETAS, point_mass_id


@pytest.mark.parametrize("beta", list(POINT_MASS_BETAS))
def test_point_mass_ids_pass_checkers(beta):
    env = gym.make(point_mass_id(beta))
    assert env.unwrapped.beta == POINT_MASS_BETAS[beta]
    assert env.observation_space.shape == (4,) and env.action_space.shape == (2,)
    gym_check_env(env.unwrapped, skip_render_check=False)
    sb3_check_env(env.unwrapped)


def test_point_mass_rk4_matches_exact_solution():
    # the dynamics are polynomial in time under a constant action, so RK4 is exact
    env = gym.make(point_mass_id("0.1")).unwrapped
    env.reset(seed=0)
    state0 = env._state.copy()
    u = np.array([0.7, -0.3])
    obs, reward, *_ = env.step(u)
    t, beta = 0.1, 0.1
    expected = np.array(
        [
            state0[0] + beta * (state0[2] * t + 0.5 * u[0] * t**2),
            state0[1] + state0[3] * t + 0.5 * u[1] * t**2,
            state0[2] + u[0] * t,
            state0[3] + u[1] * t,
        ]
    )
    np.testing.assert_allclose(obs, expected, rtol=1e-5)
    assert reward == pytest.approx(-(expected[0] ** 2 + expected[1] ** 2), rel=1e-5)


def test_point_mass_start_and_coasting_return():
    env = gym.make(point_mass_id("0.1"))
    obs, _ = env.reset(seed=3)
    assert np.abs(obs - np.array([-1, -1, 0, 0])).max() < 0.05
    total, steps, done = 0.0, 0, False
    while not done:
        _, reward, terminated, truncated, _ = env.step(np.zeros(2))
        total, steps, done = total + reward, steps + 1, terminated or truncated
    assert steps == 1000 and truncated and not terminated
    # with no action the mass coasts at its (tiny) initial velocity
    times = 0.1 * np.arange(1, 1001)
    x, y = obs[0] + 0.1 * obs[2] * times, obs[1] + obs[3] * times
    assert total == pytest.approx(-(x**2 + y**2).sum(), rel=1e-4)
    # about -2000 for a mass that stays at its start
    assert -2000 * 1.5 < total < -2000 * 0.5


def test_point_mass_terminates_outside_the_box():
    env = gym.make(point_mass_id("1"))
    env.reset(seed=0)
    for _ in range(100):
        _, _, terminated, _, _ = env.step(np.array([-1.0, 0.0]))
        if terminated:
            break
    assert terminated and abs(env.unwrapped._state[0]) > 5


def test_point_mass_bad_arguments():
    with pytest.raises(ValueError, match="beta"):
        point_mass_id("0.5")
    with pytest.raises(ValueError, match="beta"):
        sb3_maxdiff.envs.PointMassEnv(beta=0.0)
    with pytest.raises(ValueError, match="render_mode"):
        sb3_maxdiff.envs.PointMassEnv(render_mode="human")
