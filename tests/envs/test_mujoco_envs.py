import os
import subprocess
import sys
import tempfile
from typing import Any

import gymnasium as gym
import mujoco
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env as gym_check_env

import sb3_maxdiff  # noqa: F401
from sb3_maxdiff.envs import ANT, HALF_CHEETAH, SWIMMER_HEAVY, SWIMMER_LIGHT

SHAPES = {SWIMMER_HEAVY: (10, 2), SWIMMER_LIGHT: (10, 2), ANT: (29, 8), HALF_CHEETAH: (18, 6)}


@pytest.mark.parametrize("env_id", list(SHAPES))
def test_spaces_layout_and_checker(env_id):
    env = gym.make(env_id)
    assert env.observation_space.shape == (SHAPES[env_id][0],) and env.action_space.shape == (SHAPES[env_id][1],)
    assert env.spec.max_episode_steps == 1000
    obs, _ = env.reset(seed=0)
    for _ in range(20):
        obs, *_ = env.step(env.action_space.sample())
    data = env.unwrapped.data
    # the observation starts with the body position, as MuJoCo reports it (qpos, then qvel)
    n_pos = 2 if env_id == HALF_CHEETAH else 3 if env_id == ANT else 2
    np.testing.assert_allclose(obs[:n_pos], data.qpos[:n_pos], rtol=1e-6)
    np.testing.assert_allclose(obs[len(data.qpos) :], data.qvel, rtol=1e-6)
    gym_check_env(env.unwrapped, skip_render_check=True)  # rendering needs a display (MuJoCo viewer)


def test_swimmer_xy_are_the_torso_position():
    env = gym.make(SWIMMER_HEAVY)
    env.reset(seed=1)
    for _ in range(50):
        obs, *_ = env.step(np.ones(2))
    torso = env.unwrapped.data.body("torso")
    # x, y free joints are the torso frame's offset from its initial position (the origin)
    np.testing.assert_allclose(obs[:2], torso.xpos[:2], atol=1e-6)


def test_episodes_last_1000_steps():
    env = gym.make(SWIMMER_LIGHT)
    env.reset(seed=0)
    steps, terminated, truncated = 0, False, False
    while not (terminated or truncated):
        _, _, terminated, truncated, _ = env.step(env.action_space.sample())
        steps += 1
    assert steps == 1000 and truncated and not terminated


def test_light_tail_is_ten_times_lighter_and_otherwise_identical():
    heavy, light = gym.make(SWIMMER_HEAVY).unwrapped.model, gym.make(SWIMMER_LIGHT).unwrapped.model
    mass = {heavy.body(i).name: (heavy.body_mass[i], light.body_mass[i]) for i in range(heavy.nbody)}
    assert mass["back"][1] == pytest.approx(mass["torso"][1] / 10) == pytest.approx(mass["mid"][1] / 10)
    assert mass["back"][1] == pytest.approx(mass["back"][0] / 10)
    np.testing.assert_allclose(light.body_inertia[light.body("back").id], heavy.body_inertia[heavy.body("back").id] / 10)
    back = heavy.body("back").id
    for field in ("body_mass", "body_inertia", "geom_size", "jnt_range", "actuator_gear", "body_pos"):
        h, lt = getattr(heavy, field).copy(), getattr(light, field).copy()
        if field in ("body_mass", "body_inertia"):
            h, lt = np.delete(h, back, axis=0), np.delete(lt, back, axis=0)
        np.testing.assert_array_equal(h, lt, err_msg=field)
    assert heavy.opt.timestep == light.opt.timestep and heavy.opt.viscosity == light.opt.viscosity


def test_the_light_tail_model_file_is_never_a_stale_one(tmp_path, monkeypatch):
    """The cached model file is named after its content: another tail density gets its own file, not the last one."""
    from sb3_maxdiff.envs import mujoco as paper_mujoco

    light = paper_mujoco.light_tail_swimmer_xml(str(tmp_path))
    assert paper_mujoco.light_tail_swimmer_xml(str(tmp_path)) == light  # made once, then read from the cache
    monkeypatch.setattr(paper_mujoco, "LIGHT_TAIL_DENSITY", 500.0)
    other = paper_mujoco.light_tail_swimmer_xml(str(tmp_path))
    assert other != light
    masses = [mujoco.MjModel.from_xml_path(path).body("back").mass[0] for path in (light, other)]
    assert masses[1] == pytest.approx(5 * masses[0])


def test_the_package_imports_from_the_temp_directory_after_a_light_tail_swimmer(tmp_path, monkeypatch):
    """
    The cache of the derived model lives where no import finds it: Python started in the temp directory (whose
    path comes first on ``sys.path``) imports the package after a light-tail Swimmer was made, also with the user's
    cache directory in that same folder.
    """
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("SB3_MAXDIFF_CACHE", raising=False)
    gym.make(SWIMMER_LIGHT).close()
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    code = "from sb3_maxdiff import MaxDiffMPPI; print(MaxDiffMPPI.__name__)"
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout == "MaxDiffMPPI\n", done.stderr
    assert os.listdir(tmp_path) == ["sb3-maxdiff"]  # the cache is there, under a name no import takes


def test_the_cache_folder_moves_with_its_variable_and_falls_back_to_the_temp_directory(tmp_path, monkeypatch):
    from sb3_maxdiff.envs import mujoco as paper_mujoco

    monkeypatch.setenv("SB3_MAXDIFF_CACHE", str(tmp_path / "chosen"))
    assert os.path.dirname(paper_mujoco.light_tail_swimmer_xml()) == str(tmp_path / "chosen")
    monkeypatch.delenv("SB3_MAXDIFF_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user"))
    assert paper_mujoco.default_cache_dir() == str(tmp_path / "user" / "sb3-maxdiff")
    (tmp_path / "a-file").write_text("")  # no folder can be made under a file
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "a-file"))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    assert paper_mujoco.default_cache_dir() == str(tmp_path / "tmp" / "sb3-maxdiff")


def test_ant_reward_is_forward_velocity():
    env = gym.make(ANT)
    env.reset(seed=0)
    _, reward, _, _, info = env.step(env.action_space.sample())
    assert reward == pytest.approx(info["x_velocity"])


def flip_ant(env: gym.Env, tilt: float, axis: tuple[float, float, float] = (1.0, 0.0, 0.0)) -> None:
    """Turn the torso by `tilt` radians about `axis` (a unit vector; the x axis by default) from upright."""
    ant: Any = env.unwrapped  # the MuJoCo environment: data, model, set_state
    qpos, qvel = ant.data.qpos.copy(), np.zeros_like(ant.data.qvel)
    qpos[2] = 1.0
    qpos[3:7] = [np.cos(tilt / 2), *(np.sin(tilt / 2) * np.asarray(axis))]
    ant.set_state(qpos, qvel)
    mujoco.mj_forward(ant.model, ant.data)


def steps_until_termination(env: gym.Env, max_steps: int = 60) -> int | None:
    for step in range(1, max_steps + 1):
        _, _, terminated, _, _ = env.step(np.zeros(8))
        if terminated:
            return step
    return None


@pytest.mark.parametrize(
    "axis, turn, tilt",
    [((1.0, 0.0, 0.0), 2.0, 2.0), ((0.0, 1.0, 0.0), 2.0, 2.0), ((0.0, 0.0, 1.0), 2.0, 0.0), ((0.6, 0.8, 0.0), 0.5, 0.5)],
)
def test_ant_tilt_is_the_angle_between_the_torso_axis_and_the_vertical(axis, turn, tilt):
    """A turn about any horizontal axis tilts the torso by its angle; a turn about the vertical does not tilt it."""
    env = gym.make(ANT)
    env.reset(seed=0)
    flip_ant(env, turn, axis)
    assert env.unwrapped.torso_tilt == pytest.approx(tilt, abs=1e-6)


def test_ant_terminates_after_one_second_upside_down():
    env = gym.make(ANT)
    env.reset(seed=0)
    ant: Any = env.unwrapped  # the MuJoCo environment: data, model, set_state
    ant.model.opt.gravity[:] = 0.0  # freeze the flipped pose: the clock alone decides
    flip_ant(env, np.pi)
    assert ant.torso_tilt == pytest.approx(np.pi, abs=1e-6)
    steps = steps_until_termination(env)
    # dt = 0.05 s: 20 steps make 1 s; termination comes on the first step beyond 1 s
    assert ant.dt == pytest.approx(0.05)
    assert steps == 21


def test_ant_recovers_if_it_rights_itself_in_time():
    env = gym.make(ANT)
    env.reset(seed=0)
    ant: Any = env.unwrapped  # the MuJoCo environment: data, model, set_state
    ant.model.opt.gravity[:] = 0.0
    flip_ant(env, np.pi)
    for _ in range(15):  # 0.75 s upside down
        assert not env.step(np.zeros(8))[2]
    flip_ant(env, 0.0)  # rights itself
    assert not env.step(np.zeros(8))[2] and ant._upside_down_for == 0.0
    flip_ant(env, np.pi)  # the clock starts again from zero
    assert steps_until_termination(env) == 21


def test_ant_reset_restarts_the_upside_down_clock():
    env = gym.make(ANT)
    env.reset(seed=0)
    env.unwrapped.model.opt.gravity[:] = 0.0
    flip_ant(env, np.pi)
    for _ in range(15):  # 0.75 s upside down, then a new episode
        assert not env.step(np.zeros(8))[2]
    env.reset(seed=1)
    flip_ant(env, np.pi)
    assert steps_until_termination(env) == 21  # a whole second again


def test_ant_tilt_below_threshold_never_terminates():
    env = gym.make(ANT)
    env.reset(seed=0)
    env.unwrapped.model.opt.gravity[:] = 0.0
    flip_ant(env, 2.6)
    assert steps_until_termination(env, max_steps=40) is None
