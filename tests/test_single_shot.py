import csv

import gymnasium as gym
import pytest

import sb3_maxdiff  # noqa: F401
from sb3_maxdiff.envs import ANT, SWIMMER_HEAVY
from sb3_maxdiff.experiments import get_algo, learn_single_shot, make_single_shot_env
from sb3_maxdiff.experiments.__main__ import main as experiments_main

SMALL = {
    "maxdiff": dict(horizon=5, n_samples=16, learning_starts=50, batch_size=32, policy_kwargs=dict(net_arch=[16, 16])),
    "nnmppi": dict(horizon=5, n_samples=16, learning_starts=50, batch_size=32, policy_kwargs=dict(net_arch=[16, 16])),
    "sac": dict(learning_starts=50, batch_size=32, policy_kwargs=dict(net_arch=[16, 16])),
}


class ResetCounter(gym.Wrapper):
    def __init__(self, env: gym.Env):
        super().__init__(env)
        self.resets = 0

    def reset(self, **kwargs):
        self.resets += 1
        return self.env.reset(**kwargs)


@pytest.mark.parametrize("algo", sorted(SMALL))
def test_single_shot_never_resets(tmp_path, algo):
    env = ResetCounter(make_single_shot_env(SWIMMER_HEAVY))
    model = get_algo(algo)("MlpPolicy", env, seed=0, **SMALL[algo])
    result = learn_single_shot(model, 1300, window=250, csv_path=str(tmp_path / "windows.csv"))
    assert env.resets == 1  # the first reset only: 1300 steps > the usual 1000-step limit
    assert len(result.window_returns) == 5
    rows = list(csv.DictReader(open(tmp_path / "windows.csv")))
    assert [int(r["timesteps"]) for r in rows] == [250, 500, 750, 1000, 1250]
    assert float(rows[-1]["window_return"]) == pytest.approx(result.window_returns[-1])
    x_start = float(rows[0]["x_position"]) - float(rows[0]["x_distance"])
    assert result.final_distance == pytest.approx(env.unwrapped.data.qpos[0] - x_start, abs=1e-6)


def test_single_shot_env_has_no_limit_and_no_ant_termination():
    assert make_single_shot_env(SWIMMER_HEAVY).spec.max_episode_steps is None
    assert make_single_shot_env(ANT).unwrapped.terminate_when_upside_down is False


def test_single_shot_command(tmp_path, capsys):
    csv_path = tmp_path / "out.csv"
    experiments_main(
        ["single-shot", "--algo", "nnmppi", "--env", SWIMMER_HEAVY, "--steps", "300", "--window", "100",
         "--csv", str(csv_path), "--kwargs", '{"horizon": 4, "n_samples": 8, "learning_starts": 50}', "--threads", "1"]
    )  # fmt: skip
    assert "final distance along x" in capsys.readouterr().out
    assert len(csv_path.read_text().splitlines()) == 4


def test_single_shot_needs_one_env():
    from stable_baselines3.common.env_util import make_vec_env

    model = get_algo("nnmppi")("MlpPolicy", make_vec_env(SWIMMER_HEAVY, n_envs=2), **SMALL["nnmppi"])
    with pytest.raises(ValueError, match="n_envs"):
        learn_single_shot(model, 10)


@pytest.mark.parametrize(
    "command, option, value, message",
    [
        ("single-shot", "--threads", "0", "--threads: must be a positive integer, got 0"),
        ("single-shot", "--steps", "0", "--steps: must be a positive integer, got 0"),
        ("single-shot", "--window", "1e3", "--window: must be a positive integer, got 1e3"),
        ("single-shot", "--seed", "-1", "--seed: must be a non-negative integer, got -1"),
        ("transfer", "--episodes", "0", "--episodes: must be a positive integer, got 0"),
        ("transfer", "--threads", "two", "--threads: must be a positive integer, got two"),
    ],
)
def test_commands_refuse_bad_numbers(command, option, value, message, capsys):
    required = ["--algo", "nnmppi", "--env", SWIMMER_HEAVY] + (["--model", "unused.zip"] if command == "transfer" else [])
    with pytest.raises(SystemExit) as exit_info:
        experiments_main([command, *required, option, value])
    assert exit_info.value.code == 2 and message in capsys.readouterr().err
