import csv
from typing import Any

import gymnasium as gym
import pytest

import sb3_maxdiff  # noqa: F401
from sb3_maxdiff.envs import ANT, HALF_CHEETAH, SWIMMER_HEAVY, SWIMMER_LIGHT, point_mass_id
from sb3_maxdiff.experiments import get_algo, learn_single_shot, make_single_shot_env
from sb3_maxdiff.experiments.__main__ import main as experiments_main
from sb3_maxdiff.experiments.define.presets import PRESETS, cell_kwargs, get_budget, published_kwargs
from sb3_maxdiff.experiments.run.single_shot import single_shot_settings

SMALL: dict[str, Any] = {
    "maxdiff": dict(
        horizon=5, n_samples=16, learning_starts=50, batch_size=32, gradient_steps=1, policy_kwargs=dict(net_arch=[16, 16])
    ),
    "nnmppi": dict(
        horizon=5, n_samples=16, learning_starts=50, batch_size=32, gradient_steps=1, policy_kwargs=dict(net_arch=[16, 16])
    ),
    "sac": dict(learning_starts=50, batch_size=32, policy_kwargs=dict(net_arch=[16, 16])),
}


class ResetCounter(gym.Wrapper):
    """Counts the resets and keeps the reward of every step."""

    def __init__(self, env: gym.Env):
        super().__init__(env)
        self.resets = 0
        self.rewards: list[float] = []

    def reset(self, **kwargs):
        self.resets += 1
        return self.env.reset(**kwargs)

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.rewards.append(float(reward))
        return obs, reward, terminated, truncated, info


@pytest.mark.parametrize("algo", sorted(SMALL))
def test_single_shot_never_resets(tmp_path, algo):
    env = ResetCounter(make_single_shot_env(SWIMMER_HEAVY))
    # learning from step 1,000: what is checked is the one episode and its windows, and the last 300 steps still plan
    # and train
    model = get_algo(algo)("MlpPolicy", env, seed=0, **{**SMALL[algo], "learning_starts": 1000})
    result = learn_single_shot(model, 1300, window=250, csv_path=str(tmp_path / "windows.csv"))
    assert env.resets == 1  # the first reset only: 1300 steps > the usual 1000-step limit
    assert len(result.window_returns) == 5
    rows = list(csv.DictReader(open(tmp_path / "windows.csv")))
    assert [int(r["timesteps"]) for r in rows] == [250, 500, 750, 1000, 1250]
    assert float(rows[-1]["window_return"]) == pytest.approx(result.window_returns[-1])
    # each window's return is the sum of its own 250 rewards, not of every reward since the start
    windows = [sum(env.rewards[start : start + 250]) for start in range(0, 1250, 250)]
    assert result.window_returns == pytest.approx(windows, rel=1e-6)  # the vectorised env keeps rewards in float32
    x_start = float(rows[0]["x_position"]) - float(rows[0]["x_distance"])
    assert result.final_distance == pytest.approx(env.unwrapped.data.qpos[0] - x_start, abs=1e-6)


def test_single_shot_env_has_no_limit_and_no_ant_termination():
    assert make_single_shot_env(SWIMMER_HEAVY).spec.max_episode_steps is None
    assert make_single_shot_env(ANT).unwrapped.terminate_when_upside_down is False


def test_single_shot_command(tmp_path, capsys):
    csv_path, saved = tmp_path / "out.csv", tmp_path / "model.zip"
    experiments_main(
        ["single-shot", "--algo", "nnmppi", "--env", SWIMMER_HEAVY, "--steps", "200", "--window", "100",
         "--csv", str(csv_path), "--kwargs", '{"horizon": 4, "n_samples": 8, "learning_starts": 50}', "--threads", "1",
         "--save", str(saved)]
    )  # fmt: skip
    printed = capsys.readouterr().out
    assert f"settings: the published multi-shot settings for {SWIMMER_HEAVY}" in printed
    assert "final distance along x" in printed
    assert len(csv_path.read_text().splitlines()) == 1 + 2  # a row per window
    model = get_algo("nnmppi").load(saved)  # the published settings, --kwargs on top
    published = published_kwargs("nnmppi", SWIMMER_HEAVY)
    assert (model.gradient_steps, model.batch_size) == (published["gradient_steps"], published["batch_size"]) == (5, 128)
    assert (model.horizon, model.n_samples, model.learning_starts) == (4, 8, 50)


def test_single_shot_command_defaults(capsys):
    experiments_main(
        ["single-shot", "--algo", "nnmppi", "--env", SWIMMER_LIGHT, "--steps", "20", "--window", "10", "--defaults",
         "--kwargs", '{"horizon": 4, "n_samples": 8}']
    )  # fmt: skip
    assert (
        "settings: nnmppi's defaults (--defaults); --kwargs on top: {'horizon': 4, 'n_samples': 8}" in capsys.readouterr().out
    )


PAPER_PRESETS = [preset for preset in PRESETS.values() if preset.paper]


@pytest.mark.parametrize("algo", ["maxdiff", "nnmppi", "sac"])
def test_single_shot_settings_are_the_runners_single_shot_cells(algo):
    """The paper's single-shot settings: those the runner's single-shot cells build, the same in every preset."""
    budget = get_budget("paper")
    for env_id in (SWIMMER_LIGHT, ANT, HALF_CHEETAH):
        cells = [c for p in PAPER_PRESETS for c in p.cells if c.single_shot and (c.method, c.env_id) == (algo, env_id)]
        assert cells, (algo, env_id)
        kwargs, source = single_shot_settings(algo, env_id)
        assert all(cell_kwargs(cell, budget) == kwargs for cell in cells)
        assert source.startswith(f"the paper's single-shot settings for {env_id}")
    light, _ = single_shot_settings(algo, SWIMMER_LIGHT)
    if algo != "sac":  # the authors' single-shot Swimmer: K = 1000 and 10 model updates per step
        assert (light["n_samples"], light["gradient_steps"]) == (1000, 10)
    if algo == "maxdiff":
        assert (light["alpha"], light["window"]) == (50.0, True)


def test_the_jitter_preset_is_the_papers_single_shot_maxdiff_with_the_authors_jitter():
    """Everything of the paper's single-shot MaxDiff on the light Swimmer, and entropy_jitter='random'."""
    preset = PRESETS["single-shot-jitter"]
    assert not preset.paper and [(cell.setting, cell.method) for cell in preset.cells] == [
        ("swimmer random-jitter", "maxdiff")
    ]
    budget = get_budget("paper")
    paper, _ = single_shot_settings("maxdiff", SWIMMER_LIGHT)
    assert cell_kwargs(preset.cells[0], budget) == {**paper, "entropy_jitter": "random"}
    assert preset.cells[0].single_shot and preset.cells[0].env_id == SWIMMER_LIGHT


def test_single_shot_settings_elsewhere():
    heavy, source = single_shot_settings("maxdiff", SWIMMER_HEAVY)  # no single-shot run of the heavy tail in the paper
    assert heavy == published_kwargs("maxdiff", SWIMMER_HEAVY) and source.startswith("the published multi-shot settings")
    auto, source = single_shot_settings("maxdiff-auto", SWIMMER_LIGHT)
    assert auto == {**single_shot_settings("maxdiff", SWIMMER_LIGHT).kwargs, "alpha": "auto"} and source.endswith(
        "alpha 'auto'"
    )
    assert single_shot_settings("maxdiff", "Pendulum-v1") == ({}, "maxdiff's defaults (no published settings for Pendulum-v1)")


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


def _single_shot_spec(method: str, checkpoint_every: int = 0):
    from sb3_maxdiff.experiments.define.specs import RunSpec, build_specs

    (spec,) = build_specs("single-shot", "smoke", [0], settings=["swimmer"], methods=[method])
    return RunSpec(**{**spec.to_json(), "checkpoint_every": checkpoint_every, "eval_env_ids": ()})


def _same_run(stopped_dir, whole_dir, stopped, whole):
    """The resumed run gave what the uninterrupted one gave: every window, the distance, every parameter."""
    import torch as th

    assert (stopped_dir / "windows.csv").read_text() == (whole_dir / "windows.csv").read_text()
    assert stopped["window_returns"] == whole["window_returns"] and stopped["final_distance"] == whole["final_distance"]
    algo = get_algo(whole["spec"]["method"])
    resumed, uninterrupted = (algo.load(path / "model.zip").policy.state_dict() for path in (stopped_dir, whole_dir))
    assert all(th.equal(resumed[name], uninterrupted[name]) for name in uninterrupted)
    assert not list(stopped_dir.glob("checkpoint*"))


def _no_time_left_at_step(monkeypatch, step: int) -> None:
    """The time limit is near at the ``step``-th step (of a run, or of every agent of a batch) and not before."""
    from sb3_maxdiff.experiments.run.options import Deadline

    calls = []

    def reserve(self):
        calls.append(1)
        return float("inf") if len(calls) == step else 0.0

    monkeypatch.setattr(Deadline, "reserve", reserve)


@pytest.mark.parametrize("method", ["maxdiff", "nnmppi", "sac"])
def test_single_shot_run_stopped_by_its_time_limit_carries_on_exactly(tmp_path, monkeypatch, method):
    import json

    from sb3_maxdiff.experiments.run.execution import execute_run
    from sb3_maxdiff.experiments.run.options import ExecutionOptions, TimeLimitReached
    from sb3_maxdiff.experiments.run.training import training_steps_done

    spec = _single_shot_spec(method)
    whole = execute_run(spec, str(tmp_path / "whole"))
    _no_time_left_at_step(monkeypatch, 170)
    with pytest.raises(TimeLimitReached, match="stopped before the time limit at 170 of 300 steps"):
        execute_run(spec, str(tmp_path / "stopped"), options=ExecutionOptions(deadline=1e12))
    run_dir = tmp_path / "stopped" / spec.relpath
    assert json.loads((run_dir / "checkpoint.json").read_text())["agent_timesteps"] == 170
    assert training_steps_done(str(tmp_path / "stopped"), [spec]) == 170  # where the resuming call's bar starts
    assert len((run_dir / "windows.csv").read_text().splitlines()) == 1 + 1  # window 2 (to step 200) not finished
    monkeypatch.undo()

    stopped = execute_run(spec, str(tmp_path / "stopped"))
    assert stopped["resumed_from_steps"] == 170
    assert json.loads((run_dir / "resumes.json").read_text()) == [
        {"episodes": 0, "agent_timesteps": 170, "exact": True, "device": "cpu"}
    ]
    _same_run(run_dir, tmp_path / "whole" / spec.relpath, stopped, whole)


@pytest.mark.parametrize("checkpoint_every, last_checkpoint", [(100, 200), (150, 150)])
def test_killed_single_shot_run_carries_on_from_its_last_checkpoint(tmp_path, monkeypatch, checkpoint_every, last_checkpoint):
    """Killed at step 250, with windows of 100 steps: from a checkpoint at 150, the row of the window that ended at 200
    is written again, not kept twice."""
    from test_experiment_runner import Killed, kill_after_progress_calls

    from sb3_maxdiff.experiments.run.execution import execute_run

    spec = _single_shot_spec("maxdiff", checkpoint_every=checkpoint_every)
    whole = execute_run(spec, str(tmp_path / "whole"))
    kill_after_progress_calls(monkeypatch, 250)
    with pytest.raises(Killed):
        execute_run(spec, str(tmp_path / "killed"))
    run_dir = tmp_path / "killed" / spec.relpath
    assert sorted(path.name for path in run_dir.glob("checkpoint_*")) == [
        f"checkpoint_{last_checkpoint}{suffix}"
        for suffix in (".zip", "_random_state.pkl", "_replay_buffer.pkl", "_run_state.pkl")
    ]
    assert len((run_dir / "windows.csv").read_text().splitlines()) == 1 + 2  # the windows to 100 and 200
    monkeypatch.undo()
    killed = execute_run(spec, str(tmp_path / "killed"))
    assert killed["resumed_from_steps"] == last_checkpoint
    _same_run(run_dir, tmp_path / "whole" / spec.relpath, killed, whole)


@pytest.mark.parametrize("env_id", [SWIMMER_HEAVY, ANT, point_mass_id("0.1")])
def test_an_environment_put_back_mid_episode_steps_as_the_original(env_id):
    import numpy as np

    from sb3_maxdiff.experiments.run.checkpoints import environment_state, restore_environment_state

    actions = np.random.default_rng(0).uniform(-1.0, 1.0, size=(40, *gym.make(env_id).action_space.shape))
    original = make_single_shot_env(env_id)
    original.reset(seed=3)
    for action in actions[:20]:
        original.step(action)
    state = environment_state(original)
    copy = make_single_shot_env(env_id)
    copy.reset(seed=4)
    restore_environment_state(copy, state)
    for action in actions[20:]:
        expected, got = original.step(action), copy.step(action)
        assert np.array_equal(expected[0], got[0]) and expected[1:4] == got[1:4]
    assert original.unwrapped.np_random.random() == copy.unwrapped.np_random.random()


def _single_shot_batch(methods=("maxdiff", "nnmppi"), seeds=(0, 1), checkpoint_every: int = 0):
    from sb3_maxdiff.experiments.define.specs import RunSpec, build_specs
    from sb3_maxdiff.experiments.run.batching import group_runs

    specs = build_specs("single-shot", "smoke", list(seeds), settings=["swimmer"], methods=list(methods))
    specs = [RunSpec(**{**spec.to_json(), "checkpoint_every": checkpoint_every, "eval_env_ids": ()}) for spec in specs]
    (group,) = group_runs(specs, batch_cells=True)  # MaxDiff and NN-MPPI agents in one model
    assert len(group) == len(methods) * len(seeds)
    return group


def test_single_shot_runs_train_as_one_batch_each_with_its_own_environment_and_windows(tmp_path):
    import numpy as np

    from sb3_maxdiff.experiments.run.execution import execute_group

    group = _single_shot_batch()
    results = execute_group(group, str(tmp_path))
    windows = {}
    for spec, result in zip(group, results):
        run_dir = tmp_path / spec.relpath
        with open(run_dir / "windows.csv") as file:
            rows = list(csv.DictReader(file))
        # each agent's own steps, one row per window of 100
        assert [int(row["timesteps"]) for row in rows] == [100, 200, 300]
        assert result["window_returns"] == [float(row["window_return"]) for row in rows]
        assert result["final_distance"] == float(rows[-1]["x_distance"])
        assert result["batched_runs"] == [other.name for other in group] and result["resumed_from_steps"] == 0
        model = get_algo(spec.method).load(run_dir / "model.zip")
        assert type(model).__name__ == {"maxdiff": "MaxDiffMPPI", "nnmppi": "NNMPPI"}[spec.method]
        assert model.num_timesteps == 300 and model.n_envs == 1  # the agent alone, its own steps
        windows[(spec.method, spec.seed)] = np.array([float(row["window_return"]) for row in rows])
    assert not list(tmp_path.glob("**/batch_*"))  # the batch's checkpoint folder is gone
    # four environments, four different paths: no window bookkeeping follows another agent's environment
    paths = list(windows.values())
    assert all(not np.array_equal(a, b) for i, a in enumerate(paths) for b in paths[i + 1 :])


def test_a_single_shot_batch_stopped_by_its_time_limit_carries_on_exactly(tmp_path, monkeypatch):
    import json

    from sb3_maxdiff.experiments.run.execution import execute_group
    from sb3_maxdiff.experiments.run.options import ExecutionOptions, TimeLimitReached
    from sb3_maxdiff.experiments.run.training import training_steps_done

    group = _single_shot_batch(methods=("maxdiff", "nnmppi"), seeds=(0,))
    whole = execute_group(group, str(tmp_path / "whole"))
    _no_time_left_at_step(monkeypatch, 170)
    with pytest.raises(TimeLimitReached, match="stopped before the time limit at 170 of 300 steps per agent"):
        execute_group(group, str(tmp_path / "stopped"), options=ExecutionOptions(deadline=1e12))
    assert training_steps_done(str(tmp_path / "stopped"), group) == 2 * 170
    monkeypatch.undo()
    stopped = execute_group(group, str(tmp_path / "stopped"))
    for spec, resumed, uninterrupted in zip(group, stopped, whole):
        run_dir = tmp_path / "stopped" / spec.relpath
        assert resumed["resumed_from_steps"] == 170
        assert json.loads((run_dir / "resumes.json").read_text()) == [
            {"episodes": 0, "agent_timesteps": 170, "exact": True, "device": "cpu"}
        ]
        _same_run(run_dir, tmp_path / "whole" / spec.relpath, resumed, uninterrupted)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ('{"seed": 3}', "--kwargs may not set 'seed': give --seed"),
        ('{"env": "Pendulum-v1"}', "--kwargs may not set 'env': give --env"),
        ('{"policy": "CnnPolicy"}', "--kwargs may not set 'policy'"),
        ("[1, 2]", "--kwargs: must be a JSON object"),
        ("{n_samples: 8}", "--kwargs: must be a JSON object"),
    ],
)
def test_single_shot_command_refuses_bad_kwargs(kwargs, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        experiments_main(["single-shot", "--algo", "nnmppi", "--env", SWIMMER_LIGHT, "--steps", "20", "--kwargs", kwargs])
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def _command(tmp_path, name: str, *extra: str) -> list[str]:
    """A small single-shot command writing its CSV and model under ``tmp_path / name``."""
    small = '{"horizon": 4, "n_samples": 8, "learning_starts": 50, "batch_size": 32, "gradient_steps": 1, '
    small += '"policy_kwargs": {"net_arch": [16]}}'
    folder = tmp_path / name
    return [
        "single-shot", "--algo", "maxdiff", "--env", SWIMMER_LIGHT, "--steps", "300", "--window", "100",
        "--kwargs", small, "--csv", str(folder / "windows.csv"), "--save", str(folder / "model.zip"), *extra,
    ]  # fmt: skip


def _same_command_run(tmp_path, resumed: str, whole: str) -> None:
    """The command carried on from its checkpoint gave what the uninterrupted one gave, and left no checkpoint."""
    import torch as th

    assert (tmp_path / resumed / "windows.csv").read_text() == (tmp_path / whole / "windows.csv").read_text()
    models = [get_algo("maxdiff").load(tmp_path / name / "model.zip").policy.state_dict() for name in (resumed, whole)]
    assert all(th.equal(models[0][key], models[1][key]) for key in models[1])
    assert not list((tmp_path / resumed / "checkpoints").glob("checkpoint*"))


def test_single_shot_command_stopped_by_its_time_limit_carries_on_exactly(tmp_path, monkeypatch, capsys):
    import json

    from sb3_maxdiff.experiments.run.options import EXIT_TIME_LIMIT

    whole = experiments_main(_command(tmp_path, "whole"))
    checkpoints = tmp_path / "stopped" / "checkpoints"
    command = _command(tmp_path, "stopped", "--checkpoint-dir", str(checkpoints), "--time-limit", "10h")
    _no_time_left_at_step(monkeypatch, 170)
    assert experiments_main(command) == EXIT_TIME_LIMIT == 3
    assert "stopped before the time limit at 170 of 300 steps" in capsys.readouterr().out
    assert json.loads((checkpoints / "checkpoint.json").read_text())["agent_timesteps"] == 170
    assert len((tmp_path / "stopped" / "windows.csv").read_text().splitlines()) == 1 + 1
    assert not (tmp_path / "stopped" / "model.zip").exists()  # saved once trained
    monkeypatch.undo()
    resumed = experiments_main(command)
    assert "carrying on from the checkpoint at step 170 of 300" in capsys.readouterr().out
    assert resumed == whole  # the window returns and the distance
    _same_command_run(tmp_path, "stopped", "whole")


@pytest.mark.slow
def test_killed_single_shot_command_carries_on_from_its_last_checkpoint(tmp_path, monkeypatch):
    from test_experiment_runner import Killed, kill_after_progress_calls

    whole = experiments_main(_command(tmp_path, "whole"))
    checkpoints = tmp_path / "killed" / "checkpoints"
    command = _command(tmp_path, "killed", "--checkpoint-dir", str(checkpoints), "--checkpoint-every", "150")
    kill_after_progress_calls(monkeypatch, 250)
    with pytest.raises(Killed):
        experiments_main(command)
    assert sorted(path.name for path in checkpoints.glob("checkpoint_*")) == [
        f"checkpoint_150{suffix}" for suffix in (".zip", "_random_state.pkl", "_replay_buffer.pkl", "_run_state.pkl")
    ]
    assert len((tmp_path / "killed" / "windows.csv").read_text().splitlines()) == 1 + 2  # to 100 and 200
    monkeypatch.undo()
    assert experiments_main(command) == whole  # the window to 200 written again from the checkpoint at 150, not twice
    _same_command_run(tmp_path, "killed", "whole")


def test_single_shot_command_stops_on_sigterm_and_puts_the_handlers_back(tmp_path, monkeypatch, capsys):
    import os
    import signal

    from sb3_maxdiff.experiments.run import training
    from sb3_maxdiff.experiments.run.options import EXIT_TIME_LIMIT, StopRequest

    calls = {"n": 0}

    def step_then_signal(self):
        calls["n"] += 1
        if calls["n"] == 120:
            os.kill(os.getpid(), signal.SIGTERM)

    before = signal.getsignal(signal.SIGTERM)
    monkeypatch.setattr(training.Progress, "__call__", step_then_signal)
    checkpoints = tmp_path / "run" / "checkpoints"
    assert experiments_main(_command(tmp_path, "run", "--checkpoint-dir", str(checkpoints))) == EXIT_TIME_LIMIT
    assert "stopped on SIGTERM at 120 of 300 steps" in capsys.readouterr().out
    assert (checkpoints / "checkpoint_120.zip").exists()
    assert signal.getsignal(signal.SIGTERM) is before and StopRequest.signal_name is None


@pytest.mark.parametrize(
    "changed, message",
    [
        (["--seed", "1"], "holds a run started with other seed (seed=0)"),
        (["--window", "50"], "holds a run started with other window (window=100)"),
        (["--steps", "400"], "holds a run started with other steps (steps=300)"),
        (["--kwargs", '{"horizon": 5}'], "holds a run started with other kwargs (kwargs={"),
        (["--csv", "elsewhere.csv"], "holds a run started with other csv (csv="),
    ],
)
def test_single_shot_command_refuses_another_runs_checkpoint(tmp_path, monkeypatch, capsys, changed, message):
    checkpoints = str(tmp_path / "run" / "checkpoints")
    _no_time_left_at_step(monkeypatch, 60)
    experiments_main(_command(tmp_path, "run", "--checkpoint-dir", checkpoints, "--time-limit", "10h"))
    with pytest.raises(SystemExit) as exit_info:
        experiments_main([*_command(tmp_path, "run", "--checkpoint-dir", checkpoints), *changed])
    assert exit_info.value.code == 2 and message in capsys.readouterr().err


@pytest.mark.parametrize("option, value", [("--time-limit", "30"), ("--checkpoint-every", "100")])
def test_single_shot_command_options_that_need_a_checkpoint_dir(option, value, capsys):
    with pytest.raises(SystemExit) as exit_info:
        experiments_main(["single-shot", "--algo", "nnmppi", "--env", SWIMMER_LIGHT, option, value])
    assert exit_info.value.code == 2 and f"{option} needs --checkpoint-dir" in capsys.readouterr().err
