"""The runner's batches of several cells (``--batch-cells``) and its stop before a time limit (``--time-limit``)."""

import argparse
import dataclasses
import json
import os
import time
import types
from typing import Any

import numpy as np
import pytest
from test_experiment_runner import _monitor_rows, _result

from sb3_maxdiff import NNMPPI, MaxDiffMPPI, StepSchedule
from sb3_maxdiff.experiments.__main__ import main as experiments_main
from sb3_maxdiff.experiments.commands.arguments import describe_time_limit, duration_seconds
from sb3_maxdiff.experiments.define.specs import RunSpec, build_specs, is_finished
from sb3_maxdiff.experiments.run.batching import batch_dir, batch_kwargs, group_runs
from sb3_maxdiff.experiments.run.execution import execute_group
from sb3_maxdiff.experiments.run.options import EXIT_TIME_LIMIT, Deadline, EvaluationClock, ExecutionOptions, TimeLimitReached
from sb3_maxdiff.experiments.run.runner import ProgressDisplay
from sb3_maxdiff.experiments.run.training import Progress, TrainingHook, training_steps_done
from sb3_maxdiff.nnmppi.policies import MPPIPolicy


def test_batch_cells_groups_the_cells_that_can_share_one_model():
    specs = build_specs("point-mass-beta", "smoke", range(2), settings=["beta=1", "beta=0.01"])
    groups = group_runs(specs, batch_cells=True)
    batches = [group for group in groups if len(group) > 1]
    # one batch per body (MaxDiff and NN-MPPI, both seeds), SAC one run per process
    assert sorted(sorted({(spec.setting, spec.method) for spec in group}) for group in batches) == [
        [("beta=0.01", "maxdiff"), ("beta=0.01", "nnmppi")],
        [("beta=1", "maxdiff"), ("beta=1", "nnmppi")],
    ]
    assert all(len(group) == 4 for group in batches) and len(groups) == 2 + 4
    assert {group[0].method for group in groups if len(group) == 1} == {"sac"}
    sweep = build_specs("swimmer-alpha", "smoke", range(3), settings=["alpha=1", "alpha=10", "alpha=1000"])
    (batch,) = group_runs(sweep, batch_cells=True)
    assert len(batch) == 9
    # one model looks back at one number of visited states: each history trains as a batch of its own
    look_back = group_runs(build_specs("look-back", "smoke", range(2)), batch_cells=True)
    assert [[(spec.setting, spec.seed) for spec in group] for group in look_back] == [
        [("history=0", 0), ("history=0", 1)],
        [("history=30", 0), ("history=30", 1)],
    ]
    assert [group[0].algo_kwargs.get("history", 0) for group in look_back] == [0, 30]


def test_a_mixed_batch_gives_each_agent_its_runs_alpha_and_control_term():
    specs = build_specs("point-mass-beta", "smoke", range(2), settings=["beta=1"], methods=["maxdiff", "nnmppi"])
    kwargs = batch_kwargs(specs)  # seed-major: maxdiff 0, nnmppi 0, maxdiff 1, nnmppi 1
    schedule = {"values": [0.5, 5.0], "boundaries": [1000]}
    assert kwargs["alpha"] == [schedule, 0.0, schedule, 0.0]
    assert kwargs["control_cost"] == [False, True, False, True]
    sweep = build_specs("swimmer-alpha", "smoke", range(1), settings=["alpha=1", "alpha=1000"])
    assert batch_kwargs(sweep)["alpha"] == [1.0, 1000.0] and batch_kwargs(sweep)["control_cost"] is False
    # MaxDiff with alpha="auto" beside the published alpha and NN-MPPI: one batch, each agent its own alpha
    auto = build_specs("alpha-auto", "smoke", range(1), settings=["heavy"])
    assert [spec.method for spec in auto] == ["maxdiff-auto", "maxdiff", "nnmppi"]
    (batch,) = group_runs(auto, batch_cells=True)
    assert batch_kwargs(batch)["alpha"] == ["auto", 100.0, 0.0]
    assert batch_kwargs(batch)["control_cost"] == [False, False, True]
    # the seeds of one cell: its own keyword arguments, as --batch-seeds builds them
    one_cell = [spec for spec in specs if spec.method == "maxdiff"]
    assert batch_kwargs(one_cell) == one_cell[0].algo_kwargs


def test_batch_cells_writes_each_run_as_a_model_of_its_own_method(tmp_path):
    out = str(tmp_path)
    args = ["run", "point-mass-beta", "--budget", "smoke", "--settings", "beta=1", "--methods", "maxdiff", "nnmppi"]
    assert experiments_main([*args, "--seeds", "2", "--batch-cells", "--out", out]) == 0
    specs = build_specs("point-mass-beta", "smoke", range(2), settings=["beta=1"], methods=["maxdiff", "nnmppi"])
    for spec in specs:
        result = _result(out, spec)
        assert result["batched_runs"] == [
            f"beta=1 / {method} / seed {seed}" for seed in (0, 1) for method in ("maxdiff", "nnmppi")
        ]
        assert len(_monitor_rows(out, spec)) >= 3
        path = tmp_path / spec.relpath / "model.zip"
        if spec.method == "maxdiff":
            agent = MaxDiffMPPI.load(path, device="cpu")
            assert isinstance(agent.alpha, StepSchedule) and agent.control_cost is False
        else:
            agent = NNMPPI.load(path, device="cpu")
            assert type(agent) is NNMPPI and agent.control_cost is True and agent.policy.alpha is None
        assert agent.num_timesteps == 300 and not agent.independent_agents
    assert not list((tmp_path / "point-mass-beta" / "smoke").glob("batch_cells_*"))  # the batch folder is gone


@pytest.mark.parametrize(
    "text, seconds", [("90", 5400.0), ("1.5", 90.0), ("2h", 7200.0), ("1h30m", 5400.0), ("45m", 2700.0), ("90s", 90.0)]
)
def test_time_limit_reads_minutes_or_a_duration(text, seconds):
    assert duration_seconds(text) == seconds


@pytest.mark.parametrize(
    "seconds, length, stop",
    [
        (1.0, "1 s", "2026-11-28 12:46:41"),
        (90.0, "1.5 min", "2026-11-28 12:48:10"),
        (5400.0, "1 h 30 min", "2026-11-28 14:16:40"),
        (60.0 * 9142, "152 h 22 min", "2026-12-04 21:08:40"),  # 9142 meant as seconds, read as minutes
    ],
)
def test_the_time_limit_line_says_how_long_and_until_when(seconds, length, stop):
    line = describe_time_limit(seconds, now=1795870000.0)  # 2026-11-28 12:46:40 UTC
    assert line.startswith(f"time limit {length}: stops by {stop} UTC") and "a plain number is minutes" in line


@pytest.mark.parametrize("text", ["", "0", "-5", "abc", "1d", "h", "inf", "nan"])
def test_a_bad_time_limit_says_what_it_wanted(text):
    with pytest.raises(argparse.ArgumentTypeError, match="must be"):
        duration_seconds(text)


def test_deadline_stops_where_the_next_episode_might_not_end_in_time(monkeypatch):
    now = [1000.0]
    monkeypatch.setattr("sb3_maxdiff.experiments.run.options.time.time", lambda: now[0])
    deadline = Deadline(1100.0)
    now[0] = 1030.0
    assert not deadline.episode_ended()  # 70 s left > 1.5 * 30 s + 10 s
    now[0] = 1050.0  # 50 s left < 1.5 * 30 s (the longest stretch) + 10 s
    assert deadline.episode_ended()
    assert Deadline(None).left() == float("inf") and not Deadline(None).episode_ended()
    with pytest.raises(TimeLimitReached, match="the evaluation of x \\(45 s\\) would not end before it"):
        deadline.check(45.0, "the evaluation of x")
    clock = EvaluationClock(deadline, "the evaluation of x", most_steps=None)  # no projection: only the margin
    now[0] = 1089.0
    clock.step()
    now[0] = 1091.0  # 9 s left
    with pytest.raises(TimeLimitReached, match="stopped before the time limit 2 steps into the evaluation of x"):
        clock.step()


def smoke_batch() -> list[RunSpec]:
    specs = build_specs("point-mass-beta", "smoke", [0, 1], settings=["beta=1"], methods=["maxdiff", "nnmppi"])
    return [RunSpec(**{**spec.to_json(), "eval_env_ids": tuple(spec.eval_env_ids)}) for spec in specs]


def test_a_run_stopped_by_its_time_limit_checkpoints_and_the_same_call_resumes_it(tmp_path, monkeypatch):
    specs, out = smoke_batch(), str(tmp_path)
    ends = []

    def stop_at_the_second_episode_end(self):
        ends.append(1)
        return len(ends) == 2

    monkeypatch.setattr(Deadline, "episode_ended", stop_at_the_second_episode_end)
    with pytest.raises(TimeLimitReached, match=r"stopped before the time limit at \d+ of 300 steps per agent"):
        execute_group(specs, out, options=ExecutionOptions(deadline=1e12))
    directory = batch_dir(out, specs)
    checkpoint = json.loads(open(os.path.join(directory, "checkpoint.json")).read())
    assert 0 < checkpoint["agent_timesteps"] < 300 and sum(checkpoint["episodes"]) >= 2
    assert not any(is_finished(out, spec) for spec in specs)
    # the progress bar of the resuming call starts at the checkpoint (4 agents)
    assert training_steps_done(out, specs) == checkpoint["timesteps"] == 4 * checkpoint["agent_timesteps"]
    monkeypatch.undo()
    results = execute_group(specs, out, options=ExecutionOptions(deadline=None))
    for spec, result in zip(specs, results):
        assert result["resumed_from_steps"] == checkpoint["agent_timesteps"]
        assert (
            json.loads((tmp_path / spec.relpath / "resumes.json").read_text())[0]["agent_timesteps"]
            == result["resumed_from_steps"]
        )
    assert not os.path.exists(directory)


def test_no_evaluation_starts_that_would_not_end_before_the_limit(tmp_path, monkeypatch):
    specs, out = smoke_batch(), str(tmp_path)
    evaluated = []
    real_check = Deadline.check

    def no_time_for_a_second_evaluation(self, needed, what):
        if what.startswith("the evaluation"):
            if evaluated:
                raise TimeLimitReached(f"stopped before the time limit: {what}")
            evaluated.append(what)
        return real_check(self, needed, what)

    monkeypatch.setattr(Deadline, "check", no_time_for_a_second_evaluation)
    with pytest.raises(TimeLimitReached, match="the evaluation of beta=1 / nnmppi / seed 0"):
        execute_group(specs, out, options=ExecutionOptions(deadline=1e12))
    assert [is_finished(out, spec) for spec in specs] == [True, False, False, False]
    assert all((tmp_path / spec.relpath / "model.zip").exists() for spec in specs)  # trained, saved, evaluated later
    assert training_steps_done(out, specs[1:]) == 3 * 300


@pytest.mark.parametrize(
    "batch_eval, what", [(True, "the batched evaluation"), (False, "the evaluation of beta=1 / maxdiff / seed 0")]
)
def test_an_evaluation_that_would_not_end_before_the_limit_stops_early_and_leaves_nothing_behind(
    tmp_path, monkeypatch, straight_batch, batch_eval, what
):
    """
    An evaluation is not checkpointed: it stops as soon as its rate says it would not end in time (each step takes
    one second of a fake clock here, 100 steps per agent), and the same call with a longer limit evaluates the saved
    models from the start, as if it had never been stopped.
    """
    import shutil

    out = str(tmp_path / "runs")
    shutil.copytree(straight_batch[0], out)
    specs = smoke_batch()
    for spec in specs:
        os.remove(os.path.join(out, spec.relpath, "result.json"))
    now = [1000.0]

    def one_second_a_call() -> float:
        now[0] += 1.0
        return now[0]

    monkeypatch.setattr("sb3_maxdiff.experiments.run.options.time", types.SimpleNamespace(time=one_second_a_call))
    options = ExecutionOptions(batch_eval=batch_eval, deadline=now[0] + 100.0)  # 100 steps need 100 s, plus the margin
    with pytest.raises(TimeLimitReached, match=f"{what} would need about 8[0-9] s more \(1[5-7] of at most 100 steps"):
        execute_group(specs, out, options=options)
    assert now[0] < 1000.0 + 20.0  # stopped once the projection was made, not at the limit
    assert not any(is_finished(out, spec) for spec in specs)
    options = dataclasses.replace(options, deadline=now[0] + 4 * 100.0 + 4 * 15.0)  # time enough, one run at a time too
    results = execute_group(specs, out, options=options)
    if batch_eval:
        assert [result["eval_returns"] for result in results] == [result["eval_returns"] for result in straight_batch[1]]
    assert all(is_finished(out, spec) for spec in specs)


def test_no_run_starts_training_in_the_last_minute_before_the_limit(tmp_path):
    """The next run of a worker whose last run stopped at the limit would only build a model and checkpoint a step."""
    specs, out = smoke_batch()[:1], str(tmp_path)
    with pytest.raises(TimeLimitReached, match="less than 60 s left to start training"):
        execute_group(specs, out, options=ExecutionOptions(deadline=time.time() + 65.0))
    assert training_steps_done(out, specs) == 0
    assert not list(tmp_path.rglob("checkpoint*")) and not list(tmp_path.rglob("model.zip"))
    execute_group(specs, out, options=ExecutionOptions(deadline=time.time() + 3600.0))
    assert is_finished(out, specs[0])


def test_the_late_pace_is_timed_over_the_last_three_quarters_of_each_calls_steps(tmp_path):
    """Building, graph captures and the first updates fall in a call's first quarter: its pace leaves them out."""
    model = NNMPPI("sb3_maxdiff/PointMass-beta1-v0", seed=0, horizon=2, n_samples=8, learning_starts=1000)
    for steps, timed in ((40, 30), (20, 15)):  # a second call (a resumed run) is timed after 5 of its own 20 steps
        hook = TrainingHook(str(tmp_path), 0, Progress(None))
        model.learn(steps, callback=hook, reset_num_timesteps=False)
        pace = hook.late_pace()["late_train_pace"]
        assert pace["agent_steps"] == timed and pace["seconds"] > 0


def test_the_progress_bar_of_a_resumed_call_starts_where_the_checkpoints_left_off():
    pytest.importorskip("tqdm")
    display = ProgressDisplay(total_steps=1000, total_runs=2, steps_before=400)
    display.steps(50)
    assert display.bar.n == 450 and display.bar.total == 1000
    display.close()


def test_run_exits_with_status_3_when_runs_are_left_at_the_time_limit(tmp_path, capsys):
    args = ["run", "point-mass-beta", "--budget", "smoke", "--settings", "beta=1", "--methods", "nnmppi", "--seeds", "1"]
    assert experiments_main([*args, "--out", str(tmp_path), "--time-limit", "1s"]) == EXIT_TIME_LIMIT == 3
    printed = capsys.readouterr().out
    assert printed.startswith("time limit 1 s: stops by ")
    assert "0/1 runs finished" in printed and "run the same command again to resume them" in printed
    assert experiments_main([*args, "--out", str(tmp_path)]) == 0


def test_time_limit_and_batch_cells_are_local(capsys):
    for option in (["--batch-cells"], ["--time-limit", "10"]):
        with pytest.raises(SystemExit):
            experiments_main(["run", "point-mass-beta", "--budget", "smoke", "--ray-address", "local", *option])
        assert "leave out --ray-address" in capsys.readouterr().err


def test_batched_evaluation_plans_each_agent_on_its_own_and_says_so(tmp_path):
    """
    --batch-eval: one planner call per step for every run of the batch. An agent's evaluation depends on its own
    model and environment alone: with another agent beside it, its returns stay the same to the last digit.
    """
    import shutil

    specs, out = smoke_batch(), str(tmp_path)
    first = execute_group(specs, out, options=ExecutionOptions(batch_eval=True))
    assert [result["evaluation"] for result in first] == ["batched"] * 4
    assert all(len(result["eval_returns"][spec.env_id]) == spec.eval_episodes for spec, result in zip(specs, first))
    # another NN-MPPI agent in row 1 (seed 1's model in seed 0's folder): row 0's evaluation does not move
    shutil.copy(tmp_path / specs[3].relpath / "model.zip", tmp_path / specs[1].relpath / "model.zip")
    for spec in specs:
        os.remove(tmp_path / spec.relpath / "result.json")
    second = execute_group(specs, out, options=ExecutionOptions(batch_eval=True))
    assert second[0]["eval_returns"] == first[0]["eval_returns"] and second[2]["eval_returns"] == first[2]["eval_returns"]
    assert second[1]["eval_returns"] != first[1]["eval_returns"]
    # without the option, one agent at a time, as the published runs were evaluated
    for spec in specs:
        os.remove(tmp_path / spec.relpath / "result.json")
    assert [result["evaluation"] for result in execute_group(specs, out)] == ["one agent at a time"] * 4


def test_batched_evaluation_plans_each_episode_of_each_agent_from_a_fresh_warm_start(tmp_path, monkeypatch):
    """
    --batch-eval: where an agent's episode ends, its next plan starts from a zero warm start (``episode_start``), as
    in the one-at-a-time evaluation: with two evaluation episodes, each agent's flag is up at its first step and again
    after its first episode (and once more after its last, while the batch waits for the others' episodes to end).
    """
    specs, out = [RunSpec(**{**spec.to_json(), "eval_episodes": 2}) for spec in smoke_batch()], str(tmp_path)
    execute_group(specs, out)
    for spec in specs:
        os.remove(tmp_path / spec.relpath / "result.json")
    flags, predict = [], MPPIPolicy.predict

    def recording(self, observation, state=None, episode_start=None, deterministic=False):
        flags.append(np.asarray(episode_start, dtype=bool).copy())
        return predict(self, observation, state, episode_start, deterministic)

    monkeypatch.setattr(MPPIPolicy, "predict", recording)
    execute_group(specs, out, options=ExecutionOptions(batch_eval=True))
    starts = np.array(flags)
    assert starts[0].all()
    assert all(2 <= count <= 3 for count in starts.sum(axis=0)), [np.flatnonzero(row) for row in starts.T]


def _parameters(path) -> dict[str, Any]:
    """The policy's state dict saved in ``path``."""
    from stable_baselines3.common.save_util import load_from_zip_file

    _, params, _ = load_from_zip_file(path, device="cpu")
    state: dict[str, Any] = params["policy"]  # type: ignore[assignment]  # SB3 annotates each entry as a tensor
    return state


@pytest.mark.parametrize(
    "preset, setting, methods, seeds",
    [
        ("swimmer-methods", "heavy", ["maxdiff", "nnmppi"], [0, 1]),  # a mixed batch: every episode ends together
        ("point-mass-beta", "beta=1", ["maxdiff"], [3]),  # one run
        ("alpha-auto", "beta=0.01", ["maxdiff-auto"], [0]),  # alpha="auto": its value resumes with the model
    ],
)
def test_a_run_stopped_by_its_time_limit_resumes_as_if_it_had_never_stopped(
    tmp_path, monkeypatch, preset, setting, methods, seeds
):
    """Stopped at its second episode end and resumed: the same episodes, parameters and evaluation as without the stop."""
    import numpy as np

    specs = build_specs(preset, "smoke", seeds, settings=[setting], methods=methods)
    specs = [RunSpec(**{**spec.to_json(), "eval_env_ids": tuple(spec.eval_env_ids)}) for spec in specs]
    straight, stopped = str(tmp_path / "straight"), str(tmp_path / "stopped")
    uninterrupted = execute_group(specs, straight)
    ends = []
    monkeypatch.setattr(Deadline, "episode_ended", lambda self: ends.append(1) or len(ends) == 2)
    with pytest.raises(TimeLimitReached, match=r"at 200 of \d+ steps per agent"):  # the checkpoint's step
        execute_group(specs, stopped, options=ExecutionOptions(deadline=1e12))
    monkeypatch.undo()
    resumed = execute_group(specs, stopped)
    for spec, first, second in zip(specs, uninterrupted, resumed):
        assert second["resumed_from_steps"] == 200 and first["resumed_from_steps"] == 0
        assert json.loads((tmp_path / "stopped" / spec.relpath / "resumes.json").read_text())[0]["exact"] is True
        assert _monitor_rows(straight, spec) and [(row["r"], row["l"]) for row in _monitor_rows(straight, spec)] == [
            (row["r"], row["l"]) for row in _monitor_rows(stopped, spec)
        ]
        assert second["eval_returns"] == first["eval_returns"]
        params = [_parameters(os.path.join(out, spec.relpath, "model.zip")) for out in (straight, stopped)]
        assert params[0].keys() == params[1].keys()
        for key in params[0]:
            np.testing.assert_array_equal(params[0][key].numpy(), params[1][key].numpy(), err_msg=key)


def test_a_run_may_resume_on_another_device_and_notes_it(tmp_path, monkeypatch):
    """The device is where a run trains, not what it is: a resume with another --device is taken, and noted."""
    import dataclasses

    import torch as th

    (spec,) = build_specs("point-mass-beta", "smoke", [0], settings=["beta=1"], methods=["maxdiff"])
    spec = dataclasses.replace(spec, eval_env_ids=tuple(spec.eval_env_ids))
    ends = []
    monkeypatch.setattr(Deadline, "episode_ended", lambda self: ends.append(1) or len(ends) == 2)
    with pytest.raises(TimeLimitReached):
        execute_group([spec], str(tmp_path), options=ExecutionOptions(deadline=1e12))
    monkeypatch.undo()
    changed = dataclasses.replace(spec, steps=spec.steps + 1, device="cuda")
    with pytest.raises(ValueError, match="holds a run started with other settings"):
        execute_group([changed], str(tmp_path))
    elsewhere = dataclasses.replace(spec, device="cuda")  # SB3 falls back to the CPU where there is no GPU
    (result,) = execute_group([elsewhere], str(tmp_path))
    run_dir = tmp_path / spec.relpath
    assert result["resumed_from_steps"] == 200
    assert json.loads((run_dir / "spec.json").read_text())["device"] == "cpu"  # the settings it started with
    (note,) = json.loads((run_dir / "resumes.json").read_text())
    assert note["device"] == ("cuda:0" if th.cuda.is_available() else "cpu")
    assert note["exact"] is not th.cuda.is_available()  # exact only where it stayed on the kind of device it started on


@pytest.fixture(scope="module")
def straight_batch(tmp_path_factory) -> tuple[str, list[dict]]:
    """The smoke batch trained and evaluated (batched) with the default options: its folder and results."""
    out = str(tmp_path_factory.mktemp("straight"))
    return out, execute_group(smoke_batch(), out, options=ExecutionOptions(batch_eval=True))


def assert_same_runs(first: tuple[str, list[dict]], second: tuple[str, list[dict]]) -> None:
    """The same episodes, evaluation returns and final parameters, run by run."""
    import numpy as np

    for spec, one, other in zip(smoke_batch(), first[1], second[1]):
        assert one["eval_returns"] == other["eval_returns"]
        assert [(row["r"], row["l"]) for row in _monitor_rows(first[0], spec)] == [
            (row["r"], row["l"]) for row in _monitor_rows(second[0], spec)
        ]
        params = [_parameters(os.path.join(out, spec.relpath, "model.zip")) for out in (first[0], second[0])]
        for key in params[0]:
            np.testing.assert_array_equal(params[0][key].numpy(), params[1][key].numpy(), err_msg=key)


def test_a_batch_stepped_in_threads_trains_and_evaluates_as_one_after_the_other(tmp_path, straight_batch):
    """--env-threads: the same episodes, parameters and batched evaluation as the environments stepped in turn."""
    threaded = str(tmp_path / "threaded")
    assert_same_runs(
        straight_batch,
        (threaded, execute_group(smoke_batch(), threaded, options=ExecutionOptions(batch_eval=True, env_threads=3))),
    )


def test_a_batch_steps_in_the_calling_thread_and_trains_as_in_a_dummy_vec_env(tmp_path, monkeypatch, straight_batch):
    """The default batch env is a ThreadedVecEnv of one thread (infos copied, not deep-copied): the same episodes,
    parameters and evaluation as SB3's DummyVecEnv of the same environments."""
    from stable_baselines3.common.vec_env import DummyVecEnv

    from sb3_maxdiff.common.vec_env import ThreadedVecEnv
    from sb3_maxdiff.experiments.run import environments, training

    default = environments.batch_env([lambda: environments.make_env("sb3_maxdiff/PointMass-beta1-v0", smoke_batch()[0])])
    assert isinstance(default, ThreadedVecEnv) and default.stepper.n_threads == 1
    built = []

    def dummy_env(env_fns: list, env_threads: int = 1) -> DummyVecEnv:
        built.append(env_threads)
        return DummyVecEnv(env_fns)

    monkeypatch.setattr(environments, "batch_env", dummy_env)
    monkeypatch.setattr(training, "batch_env", dummy_env)
    dummy = str(tmp_path / "dummy")
    assert_same_runs(straight_batch, (dummy, execute_group(smoke_batch(), dummy, options=ExecutionOptions(batch_eval=True))))
    assert built == [1]


def test_a_batch_with_overlapped_updates_stops_resumes_and_ends_as_one_without(tmp_path, monkeypatch, straight_batch):
    """--overlap-updates, stopped by the time limit at its second episode end and resumed: the same episodes,
    parameters and evaluation as a straight run without it."""
    specs, overlapped = smoke_batch(), str(tmp_path / "overlapped")
    options = ExecutionOptions(batch_eval=True, overlap_updates=True)
    ends = []
    monkeypatch.setattr(Deadline, "episode_ended", lambda self: ends.append(1) or len(ends) == 2)
    with pytest.raises(TimeLimitReached):
        execute_group(specs, overlapped, options=dataclasses.replace(options, deadline=1e12))
    monkeypatch.undo()
    resumed = execute_group(specs, overlapped, options=options)
    assert [result["resumed_from_steps"] for result in resumed] == [200] * len(specs)
    assert_same_runs(straight_batch, (overlapped, resumed))


def test_overlap_updates_reaches_the_models(tmp_path, monkeypatch):
    from sb3_maxdiff.experiments.commands import run_command

    seen = []
    monkeypatch.setattr(run_command, "run_specs", lambda specs, out, jobs, options, *rest: seen.append(options) or ([], []))
    experiments_main(
        ["run", "point-mass-beta", "--budget", "smoke", "--seeds", "1", "--out", str(tmp_path), "--overlap-updates"]
    )
    assert seen[0].overlap_updates is True
    assert seen[0].model_kwargs(MaxDiffMPPI) == {"cuda_graph": False, "overlap_updates": True}
    assert ExecutionOptions().model_kwargs(NNMPPI)["overlap_updates"] is False


def test_env_threads_reaches_the_runs_and_must_be_positive(tmp_path, monkeypatch, capsys):
    from sb3_maxdiff.experiments.commands import run_command

    seen = []
    monkeypatch.setattr(run_command, "run_specs", lambda specs, out, jobs, options, *rest: seen.append(options) or ([], []))
    args = ["run", "point-mass-beta", "--budget", "smoke", "--seeds", "1", "--out", str(tmp_path)]
    experiments_main([*args, "--env-threads", "4"])
    assert seen[0].env_threads == 4
    with pytest.raises(SystemExit):
        experiments_main([*args, "--env-threads", "0"])
    assert "--env-threads" in capsys.readouterr().err


def test_a_signal_stops_training_with_a_checkpoint_and_then_the_evaluation(tmp_path, monkeypatch):
    """A SIGTERM (as kill, timeout or a scheduler send) stops training at the next step with a checkpoint, and an
    evaluation at its next step; the same call then resumes each."""
    import signal

    from sb3_maxdiff.experiments.run.options import StopRequest
    from sb3_maxdiff.experiments.run.training import Progress

    specs, out = smoke_batch(), str(tmp_path)
    steps, stop_at = [0], [150]  # environment steps of the 4 agents: 150 is in the first episode's middle

    def count_and_maybe_signal(self):
        steps[0] += 1
        if steps[0] == stop_at[0]:
            StopRequest.handle(signal.SIGTERM)

    monkeypatch.setattr(Progress, "__call__", count_and_maybe_signal)
    monkeypatch.setattr(StopRequest, "signal_name", None)
    with pytest.raises(TimeLimitReached, match=r"stopped on SIGTERM at 38 of 300 steps per agent, checkpoint in"):
        execute_group(specs, out)  # no time limit: the signal alone stops it
    checkpoint = json.loads(open(os.path.join(batch_dir(out, specs), "checkpoint.json")).read())
    assert checkpoint["agent_timesteps"] == 38  # the step after the signal's is not kept
    # resumed, then stopped again in the evaluation of the first run (4 x 262 training steps, then 50 of its 100)
    monkeypatch.setattr(StopRequest, "signal_name", None)
    steps[0], stop_at[0] = 0, 4 * 262 + 50
    with pytest.raises(TimeLimitReached, match="stopped on SIGTERM during the evaluation of beta=1 / maxdiff / seed 0"):
        execute_group(specs, out)
    assert all((tmp_path / spec.relpath / "model.zip").exists() for spec in specs)
    assert not any(is_finished(out, spec) for spec in specs)
    with pytest.raises(TimeLimitReached, match="stopped on SIGTERM before training"):
        execute_group(build_specs("point-mass-beta", "smoke", [5], settings=["beta=1"], methods=["nnmppi"]), out)
    monkeypatch.setattr(StopRequest, "signal_name", None)
    results = execute_group(specs, out)
    assert [result["resumed_from_steps"] for result in results] == [38] * 4
    assert all(is_finished(out, spec) for spec in specs)


def _children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (Linux /proc)."""
    children = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as file:
                    fields = file.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                children.append(int(entry))
    return children


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as file:
            return file.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.slow
@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="reads the process tree from Linux's /proc")
def test_sigterm_to_run_stops_its_worker_with_a_checkpoint_and_exits_with_status_3(tmp_path):
    """Before: the worker process trained on, alone, after ``run`` was killed; the same command started beside it then
    trained the same run twice in one folder."""
    import signal
    import subprocess
    import sys
    import time

    from helpers import SUBPROCESS_TIMEOUT

    run = ["run", "point-mass-beta", "--budget", "smoke", "--settings", "beta=1", "--methods", "nnmppi", "--seeds", "1"]
    command = [sys.executable, "-m", "sb3_maxdiff.experiments", *run, "--steps", "100000", "--out", str(tmp_path)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    workers: list[int] = []
    try:
        started = time.time()
        # wait until the worker has trained its first episode (100 steps)
        while not any(len(path.read_text().splitlines()) > 2 for path in tmp_path.rglob("monitor.csv")):
            assert process.poll() is None and time.time() - started < SUBPROCESS_TIMEOUT, process.communicate()[0]
            time.sleep(0.2)
        workers = _children(process.pid)
        assert workers
        process.send_signal(signal.SIGTERM)
        # a worker left training would hold the output pipe open: the wait would end only with the timeout
        printed = process.communicate(timeout=300)[0]
    finally:
        for pid in [process.pid, *workers]:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
    assert process.returncode == EXIT_TIME_LIMIT, printed
    assert "SIGTERM: each run stops at its next step" in printed and "stopped on SIGTERM at" in printed
    assert "run the same command again to resume them" in printed
    # the worker (and the resource tracker) end with run: give them a few seconds to be gone
    deadline = time.time() + 30
    while any(_alive(pid) for pid in workers) and time.time() < deadline:
        time.sleep(0.2)
    assert not any(_alive(pid) for pid in workers)
    (checkpoint,) = tmp_path.rglob("checkpoint.json")
    assert 100 <= json.loads(checkpoint.read_text())["agent_timesteps"] < 100_000


def test_maxdiff_runs_with_the_authors_jitter_batch_with_nnmppi_runs():
    """The path entropy's settings have one list (MaxDiffMPPI.ENTROPY_PARAMETERS): the jitter is one of them."""
    import dataclasses

    from sb3_maxdiff import MaxDiffMPPI
    from sb3_maxdiff.experiments.define.specs import build_specs
    from sb3_maxdiff.experiments.run.batching import ENTROPY_KWARGS, PER_AGENT_KWARGS, batch_key

    assert set(ENTROPY_KWARGS) | set(PER_AGENT_KWARGS) >= set(MaxDiffMPPI.ENTROPY_PARAMETERS)
    maxdiff, nnmppi = build_specs("swimmer-methods", "smoke", [0], settings=["heavy"], methods=["maxdiff", "nnmppi"])
    jittered = dataclasses.replace(maxdiff, algo_kwargs={**maxdiff.algo_kwargs, "entropy_jitter": "random"})
    assert batch_key(jittered) == batch_key(maxdiff) == batch_key(nnmppi)
