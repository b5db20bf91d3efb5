import csv
import functools
import json
import os
import pathlib
import socket
import subprocess
import sys
import warnings

import numpy as np
import pytest
from helpers import SUBPROCESS_TIMEOUT

from sb3_maxdiff.experiments.__main__ import main as experiments_main
from sb3_maxdiff.experiments.analyse.results import load_runs
from sb3_maxdiff.experiments.define.presets import BUDGETS, PRESETS, cell_kwargs, get_budget
from sb3_maxdiff.experiments.define.specs import RESULT_FILE, RunSpec, build_specs, is_finished
from sb3_maxdiff.experiments.define.zoo_files import literal_policy_kwargs
from sb3_maxdiff.experiments.run import execution, training
from sb3_maxdiff.experiments.run.execution import execute_group, execute_run
from sb3_maxdiff.experiments.run.options import ExecutionOptions
from sb3_maxdiff.experiments.run.runner import run_specs


def _result(out, spec):
    with open(os.path.join(out, spec.relpath, RESULT_FILE)) as file:
        return json.load(file)


def _monitor_rows(out, spec):
    with open(os.path.join(out, spec.relpath, "monitor.csv")) as file:
        return list(csv.DictReader(line for line in file if not line.startswith("#")))


class Killed(Exception):
    """Stands for the process being killed mid-run."""


def kill_after_progress_calls(monkeypatch, n_calls: int) -> None:
    """Raise :class:`Killed` at the ``n_calls``-th progress call (one per environment step and environment)."""
    calls = {"n": 0}

    def step_then_die(self):
        calls["n"] += 1
        if calls["n"] == n_calls:
            raise Killed

    monkeypatch.setattr(training.Progress, "__call__", step_then_die)


@pytest.mark.parametrize("budget", BUDGETS)
def test_every_preset_resolves_its_hyperparameters(budget):
    for preset in PRESETS.values():
        specs = build_specs(preset.name, budget, [0])
        assert len(specs) == len(preset.cells)
        for spec in specs:
            assert spec.steps == get_budget(budget).steps["point-mass" if "PointMass" in spec.env_id else "mujoco"]
            assert isinstance(spec.algo_kwargs.get("policy_kwargs", {}), dict)
            json.dumps(spec.to_json())  # plain data, for worker processes and Ray


def test_preset_hyperparameters_are_the_published_ones():
    cells = {(c.setting, c.method): c for c in PRESETS["point-mass-beta"].cells}
    maxdiff = cell_kwargs(cells[("beta=0.001", "maxdiff")], get_budget("paper"))
    assert maxdiff["alpha"] == {"values": [0.2, 25.0], "boundaries": [500]}
    assert maxdiff["horizon"] == 30 and maxdiff["n_samples"] == 500 and maxdiff["policy_kwargs"] == {"net_arch": [128, 128]}
    assert cell_kwargs(cells[("beta=1", "sac")], get_budget("paper"))["ent_coef"] == 4.0
    single = {(c.setting, c.method): c for c in PRESETS["single-shot"].cells}
    swimmer = cell_kwargs(single[("swimmer", "maxdiff")], get_budget("paper"))
    assert swimmer["alpha"] == 50.0 and swimmer["n_samples"] == 1000 and swimmer["temperature"] == 0.1
    assert swimmer["window"] is True and swimmer["gradient_steps"] == 10
    alphas = [cell.overrides["alpha"] for cell in PRESETS["swimmer-alpha"].cells]
    assert min(alphas) == 1.0 and max(alphas) == 1000.0


def test_bad_names_are_rejected():
    with pytest.raises(ValueError, match="preset must be one of"):
        build_specs("nope", "smoke", [0])
    with pytest.raises(ValueError, match="budget must be one of"):
        build_specs("point-mass-beta", "huge", [0])
    with pytest.raises(ValueError, match=r"settings of preset 'point-mass-beta' are .*unknown \['beta=2'\]"):
        build_specs("point-mass-beta", "smoke", [0], settings=["beta=2"])
    with pytest.raises(ValueError, match="policy_kwargs must be of the form"):
        literal_policy_kwargs("dict(activation_fn=nn.Tanh)")
    with pytest.raises(ValueError, match="policy_kwargs must be of the form"):
        literal_policy_kwargs("dict(**{'net_arch': [8]})")  # was read as {None: {'net_arch': [8]}}
    with pytest.raises(ValueError, match="steps must be a positive number of environment steps, got 0"):
        build_specs("point-mass-beta", "smoke", [0], steps=0)


def test_steps_override_is_stored_apart_from_the_budget(capsys):
    budget_specs = build_specs("point-mass-beta", "reduced", [0], settings=["beta=0.01"])
    specs = build_specs("point-mass-beta", "reduced", [0], settings=["beta=0.01"], steps=20_000)
    assert [spec.steps for spec in budget_specs] == [10_000] * 3 and [spec.steps for spec in specs] == [20_000] * 3
    assert {spec.budget for spec in specs} == {"reduced-20000-steps"}
    # everything but the steps and the label is the budget's
    for ours, theirs in zip(specs, budget_specs):
        assert ours.algo_kwargs == theirs.algo_kwargs and ours.eval_episodes == theirs.eval_episodes
        assert ours.relpath == theirs.relpath.replace("/reduced/", "/reduced-20000-steps/")
    argv = ["run", "point-mass-beta", "--budget", "reduced", "--steps", "20000", "--settings", "beta=1", "--list"]
    assert experiments_main(argv) == 0
    assert "todo  point-mass-beta/reduced-20000-steps/beta=1/maxdiff/seed_0" in capsys.readouterr().out


def test_first_seed_adds_seeds_to_a_cell(capsys):
    argv = ["run", "point-mass-beta", "--settings", "beta=1", "--methods", "sac", "--seeds", "2", "--first-seed", "10"]
    assert experiments_main([*argv, "--list"]) == 0
    listed = [line.split("/")[-1] for line in capsys.readouterr().out.splitlines()]
    assert listed == ["seed_10", "seed_11"]
    with pytest.raises(SystemExit):
        experiments_main([*argv[:-2], "--first-seed", "-1", "--list"])
    assert "--first-seed: must be a non-negative integer, got -1" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        experiments_main([*argv[:-4], "--seeds", "two", "--list"])
    assert "--seeds: must be a positive integer, got two" in capsys.readouterr().err


def test_a_seeds_run_is_the_same_whichever_range_it_is_listed_in():
    """A sweep resumed with a later --first-seed (the seeds before it done elsewhere) runs each seed as the first did."""
    whole = build_specs("single-shot-jitter", "reduced", range(10, 20), steps=30_000)
    rest = build_specs("single-shot-jitter", "reduced", range(14, 20), steps=30_000)
    assert [spec.seed for spec in rest] == list(range(14, 20))
    assert [spec for spec in whole if spec.seed >= 14] == rest
    assert {spec.relpath for spec in rest} <= {spec.relpath for spec in whole}


@pytest.mark.slow
def test_smoke_preset_runs_resumes_and_reports(tmp_path, capsys):
    """One setting of a preset's smoke budget with the local executor, a rerun that skips it, a report, an export."""
    out, settings = str(tmp_path), ["beta=0.01"]
    assert (
        experiments_main(["run", "point-mass-beta", "--budget", "smoke", "--settings", *settings, "--out", out, "--jobs", "2"])
        == 0
    )
    specs = build_specs("point-mass-beta", "smoke", range(2), settings=settings)
    assert len(specs) == 6 and all(is_finished(out, spec) for spec in specs)
    for spec in specs:
        result = _result(out, spec)
        assert len(result["eval_returns"][spec.env_id]) == 1
        lengths = [int(row["l"]) for row in _monitor_rows(out, spec)]  # 100-step episodes, or fewer (out of bounds)
        assert lengths and max(lengths) <= 100 and sum(lengths) <= 300
        assert os.path.exists(os.path.join(out, spec.relpath, "model.zip"))

    # a rerun skips every finished run; a run whose result is lost is evaluated again from its saved model
    os.remove(os.path.join(out, specs[0].relpath, RESULT_FILE))
    mtimes = {spec.relpath: os.path.getmtime(os.path.join(out, spec.relpath, RESULT_FILE)) for spec in specs[1:]}
    capsys.readouterr()
    assert experiments_main(["run", "point-mass-beta", "--budget", "smoke", "--settings", *settings, "--out", out]) == 0
    assert "6/6 runs finished (5 were already on disk)" in capsys.readouterr().out
    assert all(os.path.getmtime(os.path.join(out, path, RESULT_FILE)) == mtime for path, mtime in mtimes.items())
    # what the result says of the training is the training's own record: from step 0, and its time (as for a batch)
    assert _result(out, specs[0])["resumed_from_steps"] == 0 and "train_seconds" in _result(out, specs[0])

    assert experiments_main(["report", out]) == 0
    folder = tmp_path / "point-mass-beta" / "smoke"
    report = (folder / "REPORT.md").read_text()
    assert "| beta=0.01 | PointMassUnbounded-beta0_01-v0 | MaxDiff | 2 | 2 |" in report
    assert "MaxDiff vs NN-MPPI" in report and "-269.9 +/- 257.0" in report  # published numbers beside ours
    assert "## Ergodicity of the training paths" in report and "| beta=0.01 | MaxDiff | 2 |" in report
    assert "sample standard deviation (ddof 1" in report  # as tabulate
    for figure in ("multi_shot_learning_curves.png", "multi_shot_final.png"):
        assert (folder / figure).stat().st_size > 10_000

    # one setting and seed of the sweep to its own CSV; a filter that matches nothing names what there is
    episodes = tmp_path / "seed1.csv"
    assert experiments_main(["export", out, "--settings", "beta=0.01", "--seeds", "1", "--out", str(episodes)]) == 0
    with open(episodes) as file:
        rows = list(csv.DictReader(file))
    assert {(row["setting"], row["seed"]) for row in rows} == {("beta=0.01", "1")}
    assert {row["method"] for row in rows} == {"maxdiff", "nnmppi", "sac"}
    (sac_seed1,) = [spec for spec in specs if (spec.seed, spec.method) == (1, "sac")]
    train = [float(row["return"]) for row in rows if row["method"] == "sac" and row["kind"] == "train"]
    assert train == [float(row["r"]) for row in _monitor_rows(out, sac_seed1)]
    for bad, message in ((["--seeds", "0", "7"], "--seeds [7] not among"), (["--settings", "beta=3"], "found settings")):
        with pytest.raises(SystemExit):
            experiments_main(["export", out, *bad, "--out", str(tmp_path / "none.csv")])
        assert message in capsys.readouterr().err


def test_interrupted_run_continues_from_its_checkpoint(tmp_path, monkeypatch):
    (spec,) = build_specs("point-mass-beta", "smoke", [0], settings=["beta=1"], methods=["nnmppi"])
    spec = RunSpec(**{**spec.to_json(), "checkpoint_every": 100, "eval_env_ids": tuple(spec.eval_env_ids)})
    out = str(tmp_path)

    kill_after_progress_calls(monkeypatch, 250)
    with pytest.raises(Killed):
        execute_run(spec, out)
    run_dir = tmp_path / spec.relpath
    checkpoint = json.loads((run_dir / "checkpoint.json").read_text())
    assert {key: checkpoint[key] for key in ("timesteps", "agent_timesteps", "episodes")} == {
        "timesteps": 200,
        "agent_timesteps": 200,
        "episodes": [2],
    }
    assert len(checkpoint["visited_cells"][0]) > 0  # the coverage carries on after the restart
    assert len(_monitor_rows(out, spec)) == 2  # the third episode never finished
    monkeypatch.undo()

    result = execute_run(spec, out)
    assert result["resumed_from_steps"] == 200
    assert [int(row["l"]) for row in _monitor_rows(out, spec)] == [100, 100, 100]
    with open(run_dir / "ergodicity.csv") as file:
        rows = list(csv.DictReader(file))
    assert [float(row["timesteps"]) for row in rows] == [100.0, 200.0, 300.0]  # one row per episode, none twice
    coverage = [float(row["coverage"]) for row in rows]
    assert coverage == sorted(coverage) and result["ergodicity"]["coverage"] == coverage[-1]
    assert result["ergodicity"]["episodes"] == 3
    assert not list(run_dir.glob("checkpoint*"))  # removed once the final model is saved
    from sb3_maxdiff import NNMPPI

    assert NNMPPI.load(run_dir / "model.zip").num_timesteps == 300


def test_changed_settings_are_not_mixed_into_a_run(tmp_path):
    (spec,) = build_specs("point-mass-beta", "smoke", [0], settings=["beta=1"], methods=["sac"])
    os.makedirs(tmp_path / spec.relpath)
    changed = {**spec.to_json(), "steps": 999}
    (tmp_path / spec.relpath / "spec.json").write_text(json.dumps(changed))
    with pytest.raises(ValueError, match="holds a run started with other settings"):
        execute_run(spec, str(tmp_path))


@pytest.mark.slow
def test_single_shot_smoke_and_report(tmp_path):
    out = str(tmp_path)
    assert (
        experiments_main(["run", "single-shot", "--budget", "smoke", "--seeds", "2", "--settings", "swimmer", "--out", out])
        == 0
    )
    runs = load_runs(out)[("single-shot", "smoke")]
    assert len(runs) == 6
    for run in runs:
        assert len(run.result["window_returns"]) == 3 and run.result["eval_returns"] == {}
        assert run.result["late_train_pace"]["agent_steps"] == 225  # 300 steps, timed after the first 75
    assert experiments_main(["report", out, "--running-max"]) == 0
    report = (tmp_path / "single-shot" / "smoke" / "REPORT.md").read_text()
    assert "| swimmer | MaxDiff | 2 |" in report and "terminal window return" in report
    assert (tmp_path / "single-shot" / "smoke" / "single_shot_final.png").exists()

    from sb3_maxdiff.experiments.analyse.tables import per_seed_values

    windows = str(tmp_path / "windows.csv")
    assert experiments_main(["export", out, "--out", windows]) == 0
    with open(windows) as file:
        assert len(list(csv.DictReader(file))) == 6 * 3
    values = per_seed_values(windows, [300])
    for run in runs:
        method, seed = run.spec.method, run.spec.seed
        assert values["x distance at 300"][method][seed] == run.result["final_distance"]
        assert values["window return at 300"][method][seed] == run.result["window_returns"][-1]
    assert experiments_main(["tabulate", windows, "--steps", "200", "300"]) == 0


def test_export_takes_single_shot_and_multi_shot_runs_one_kind_at_a_time(tmp_path, capsys):
    out, windows = str(tmp_path), str(tmp_path / "windows.csv")
    args = ["--budget", "smoke", "--seeds", "1", "--methods", "nnmppi", "--out", out]
    settings = ["ant multi-shot", "ant single-shot"]
    assert experiments_main(["run", "ant-halfcheetah", "--settings", *settings, *args]) == 0
    with pytest.raises(SystemExit):
        experiments_main(["export", out, "--out", windows])
    assert "single-shot settings ['ant single-shot'] and multi-shot settings ['ant multi-shot']" in capsys.readouterr().err
    assert experiments_main(["export", out, "--out", windows, "--settings", "ant single-shot"]) == 0
    assert "3 rows written" in capsys.readouterr().out


@pytest.fixture
def ray_head():
    """A Ray head node on this machine (``ray start --head``), the way a cluster is started; its address."""
    pytest.importorskip("ray")
    ray_cli = os.path.join(os.path.dirname(sys.executable), "ray")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [ray_cli, "start", "--head", "--node-ip-address", "127.0.0.1", "--port", str(port), "--num-cpus", "2"]
    # without token authentication, so that this test's driver needs no token file; workers at normal priority (Ray's
    # default niceness of 15 starves them beside other work: this test took 282 s instead of 39 s on a busy 2-core machine)
    env = {**os.environ, "RAY_AUTH_MODE": "disabled", "RAY_worker_niceness": "0"}
    subprocess.run(
        [*command, "--include-dashboard", "false", "--disable-usage-stats"], check=True, capture_output=True, env=env
    )
    try:
        yield f"127.0.0.1:{port}"
    finally:
        import ray

        ray.shutdown()
        # not waited for: `ray stop` kills the head's processes in three rounds with two seconds' wait after each, and
        # nothing after this test needs them gone
        subprocess.Popen([ray_cli, "stop", "--force"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


@pytest.mark.slow
def test_smoke_preset_through_ray_matches_local(tmp_path, ray_head, capsys):
    """
    One setting and seed of the smoke budget (MaxDiff and SB3's SAC: the planner and a stock algorithm) sent to a Ray
    cluster, a rerun that skips them, a report; same results as locally.
    """
    local, remote = str(tmp_path / "local"), str(tmp_path / "ray")
    args = ["run", "point-mass-beta", "--budget", "smoke", "--settings", "beta=0.01", "--methods", "maxdiff", "sac"]
    args += ["--seeds", "1"]
    assert experiments_main([*args, "--out", remote, "--ray-address", ray_head]) == 0
    capsys.readouterr()
    assert experiments_main([*args, "--out", remote, "--ray-address", ray_head]) == 0
    assert "2/2 runs finished (2 were already on disk)" in capsys.readouterr().out
    assert experiments_main(["report", remote]) == 0
    assert (tmp_path / "ray" / "point-mass-beta" / "smoke" / "REPORT.md").exists()
    # runs on a CUDA device ask Ray for a GPU each (Ray hides GPUs from tasks that ask for none): this cluster has none
    cuda_specs = build_specs("point-mass-beta", "smoke", [0], settings=["beta=1"], methods=["nnmppi"], device="cuda")
    with pytest.raises(ValueError, match=r"each run asks Ray for 1 GPU \(device cuda\), but the cluster at .* has 0"):
        run_specs(cuda_specs, str(tmp_path / "cuda"), ray_address=ray_head)

    assert experiments_main([*args, "--out", local, "--jobs", "1"]) == 0
    for spec in build_specs("point-mass-beta", "smoke", [0], settings=["beta=0.01"], methods=["maxdiff", "sac"]):
        assert _result(remote, spec)["eval_returns"] == _result(local, spec)["eval_returns"]
        episodes = [[(row["r"], row["l"]) for row in _monitor_rows(out, spec)] for out in (remote, local)]
        assert episodes[0] == episodes[1]


@pytest.mark.slow
def test_transfer_preset_evaluates_on_both_tails(tmp_path):
    out = str(tmp_path)
    args = ["run", "swimmer-transfer", "--budget", "smoke", "--seeds", "1", "--methods", "maxdiff", "--out", out]
    assert experiments_main(args) == 0
    runs = load_runs(out)[("swimmer-transfer", "smoke")]
    assert sorted(run.spec.setting for run in runs) == ["trained heavy", "trained light"]
    for run in runs:
        assert sorted(run.result["eval_returns"]) == ["sb3_maxdiff/Swimmer-heavy-v0", "sb3_maxdiff/Swimmer-light-v0"]
    assert experiments_main(["report", out]) == 0
    report = (tmp_path / "swimmer-transfer" / "smoke" / "REPORT.md").read_text()
    assert "| trained light | Swimmer-heavy-v0 | MaxDiff | 1 | 1 |" in report


def test_experiments_help_lists_the_commands(capsys):
    with pytest.raises(SystemExit) as exit_info:
        experiments_main(["--help"])
    assert exit_info.value.code == 0
    help_text = capsys.readouterr().out
    assert all(command in help_text for command in ("run", "report", "single-shot", "transfer"))
    with pytest.raises(SystemExit) as exit_info:
        experiments_main(["bogus"])
    assert exit_info.value.code == 2 and "invalid choice: 'bogus'" in capsys.readouterr().err


def test_smoke_preset_lists_and_runs_without_optuna_and_rl_zoo(tmp_path):
    # a plain install (no [zoo] extra): the runner must not need RL Zoo, Optuna or SQLAlchemy
    script = (
        "import sys\n"
        "for name in ('optuna', 'rl_zoo3', 'sqlalchemy'):\n"
        "    sys.modules[name] = None\n"
        "from sb3_maxdiff.experiments.__main__ import main\n"
        "common = ['point-mass-beta', '--budget', 'smoke', '--settings', 'beta=1', '--methods', 'nnmppi', '--seeds', '1',"
        f" '--out', {str(tmp_path)!r}]\n"
        "assert main(['run', *common, '--list']) == 0\n"
        "assert main(['run', *common]) == 0\n"
        f"assert main(['report', {str(tmp_path)!r}]) == 0\n"
        "assert 'sb3_maxdiff.zoo' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", script], check=True, timeout=SUBPROCESS_TIMEOUT)
    assert (tmp_path / "point-mass-beta" / "smoke" / "beta=1" / "nnmppi" / "seed_0" / "result.json").exists()


@pytest.mark.slow
def test_batched_seeds_write_the_files_of_separate_runs(tmp_path, capsys):
    """--batch-seeds: one process per MPPI cell, the per-seed files of separate runs; SAC runs alone."""
    out = str(tmp_path)
    args = ["run", "point-mass-beta", "--budget", "smoke", "--settings", "beta=1", "--seeds", "3", "--out", out]
    assert experiments_main([*args, "--methods", "maxdiff", "sac", "--batch-seeds", "--jobs", "1"]) == 0
    specs = build_specs("point-mass-beta", "smoke", range(3), settings=["beta=1"], methods=["maxdiff", "sac"])
    for spec in specs:
        result = _result(out, spec)
        assert len(result["eval_returns"][spec.env_id]) == 1
        lengths = [int(row["l"]) for row in _monitor_rows(out, spec)]
        assert lengths and max(lengths) <= 100 and sum(lengths) <= 300
        run_dir = tmp_path / spec.relpath
        assert (run_dir / "model.zip").exists()
        if spec.method == "maxdiff":
            assert result["batched_seeds"] == [0, 1, 2] and result["train_seconds"] > 0
            # the pace after the first quarter of the 300 steps per agent: the other 225, in part of the seconds
            pace = result["late_train_pace"]
            assert pace["agent_steps"] == 225 and 0 < pace["seconds"] < result["train_seconds"]
            assert result["ergodicity"]["episodes"] >= 1
            from sb3_maxdiff import MaxDiffMPPI

            agent = MaxDiffMPPI.load(run_dir / "model.zip")
            assert not agent.independent_agents and agent.num_timesteps == 300
        else:
            assert "batched_seeds" not in result
    maxdiff_runs = [spec for spec in specs if spec.method == "maxdiff"]
    returns = [[row["r"] for row in _monitor_rows(out, spec)] for spec in maxdiff_runs]
    assert returns[0] != returns[1]  # each seed its own environment and agent
    assert not list((tmp_path / maxdiff_runs[0].relpath).parent.glob("batch_*"))  # the batch folder is gone
    capsys.readouterr()
    assert experiments_main([*args, "--methods", "maxdiff", "sac", "--batch-seeds"]) == 0
    assert "6/6 runs finished (6 were already on disk)" in capsys.readouterr().out
    assert experiments_main(["report", out]) == 0


def test_interrupted_batch_continues_from_its_checkpoint(tmp_path, monkeypatch):
    from sb3_maxdiff.experiments.run.batching import batch_dir

    specs = build_specs("point-mass-beta", "smoke", [0, 1], settings=["beta=1"], methods=["nnmppi"])
    specs = [
        RunSpec(**{**spec.to_json(), "checkpoint_every": 100, "eval_env_ids": tuple(spec.eval_env_ids)}) for spec in specs
    ]
    out = str(tmp_path)

    kill_after_progress_calls(monkeypatch, 2 * 250)  # two agents: two progress calls per step
    with pytest.raises(Killed):
        execute_group(specs, out)
    checkpoint = json.loads((tmp_path / batch_dir(out, specs) / "checkpoint.json").read_text())
    assert checkpoint["agent_timesteps"] == 200 and checkpoint["timesteps"] == 400
    assert checkpoint["episodes"] == [2, 2] and all(len(cells) > 0 for cells in checkpoint["visited_cells"])
    assert [len(_monitor_rows(out, spec)) for spec in specs] == [2, 2]
    monkeypatch.undo()

    results = execute_group(specs, out)
    for spec, result in zip(specs, results):
        assert result["resumed_from_steps"] == 200 and result["batched_seeds"] == [0, 1]
        # the two episodes before the checkpoint kept once, then new ones (100 steps, or fewer out of bounds)
        lengths = [int(row["l"]) for row in _monitor_rows(out, spec)]
        assert lengths[:2] == [100, 100] and len(lengths) >= 3 and sum(lengths) <= 300
        with open(tmp_path / spec.relpath / "ergodicity.csv") as file:
            steps = [float(row["timesteps"]) for row in csv.DictReader(file)]
        assert steps[:2] == [100.0, 200.0] and len(steps) <= len(lengths) and 200.0 < steps[2] <= 300.0
        resumes = json.loads((tmp_path / spec.relpath / "resumes.json").read_text())
        # both episodes had just ended: every random stream put back
        assert resumes == [{"episodes": 2, "agent_timesteps": 200, "exact": True, "device": "cpu"}]
    assert not os.path.exists(batch_dir(out, specs))


def test_cuda_graph_is_an_execution_option_not_part_of_the_spec(tmp_path, monkeypatch):
    """
    The runner's ``cuda_graph`` reaches every NN-MPPI / MaxDiff model it builds or loads (on the CPU the model
    warns and plans eagerly), and a run may be resumed with or without it.
    """
    from stable_baselines3.common.save_util import load_from_zip_file

    from sb3_maxdiff.experiments.define.algos import get_algo
    from sb3_maxdiff.nnmppi.nnmppi import NNMPPI

    specs = build_specs("point-mass-beta", "smoke", [0, 1, 2], settings=["beta=1"], methods=["nnmppi"])
    specs = [
        RunSpec(**{**spec.to_json(), "checkpoint_every": 100, "eval_env_ids": tuple(spec.eval_env_ids)}) for spec in specs
    ]
    batch, single, out = specs[:2], specs[2], str(tmp_path)
    no_effect = "cuda_graph=True has no effect on device cpu"
    learned, learn = [], NNMPPI.learn

    def learn_and_record(self, *args, **kwargs):
        learned.append(self.cuda_graph)
        return learn(self, *args, **kwargs)

    monkeypatch.setattr(NNMPPI, "learn", learn_and_record)
    kill_after_progress_calls(monkeypatch, 2 * 250)
    with pytest.raises(Killed), pytest.warns(UserWarning, match=no_effect):
        execute_group(batch, out, options=ExecutionOptions(cuda_graph=True))  # a new batch model gets it
    assert learned == [True]
    monkeypatch.undo()
    monkeypatch.setattr(NNMPPI, "learn", learn_and_record)
    evaluate, evaluated = execution._evaluate, []

    def evaluate_and_record(model, spec, progress, deadline):
        evaluated.append(model.cuda_graph)
        return evaluate(model, spec, progress, deadline)

    monkeypatch.setattr(execution, "_evaluate", evaluate_and_record)
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message="cuda_graph")
        results = execute_group(batch, out)  # resumed without it: the checkpoint is loaded without it
    assert [result["resumed_from_steps"] for result in results] == [200, 200]
    assert learned == [True, False] and evaluated == [False, False]
    # a saved model evaluated with it; a new single run trained with it
    os.remove(os.path.join(out, batch[0].relpath, RESULT_FILE))
    with pytest.warns(UserWarning, match=no_effect):
        execute_run(batch[0], out, options=ExecutionOptions(cuda_graph=True))
        execute_run(single, out, options=ExecutionOptions(cuda_graph=True))
    assert evaluated == [False, False, True, True] and learned == [True, False, True]
    # how to run is never part of what is saved
    assert "cuda_graph" not in load_from_zip_file(os.path.join(out, single.relpath, "model.zip"))[0]
    assert ExecutionOptions(cuda_graph=True).model_kwargs(get_algo("sac")) == {}  # SAC has no planner to capture


def test_runner_refuses_gpu_options_that_cannot_apply(capsys):
    run = ["run", "point-mass-beta", "--budget", "smoke", "--list"]
    for extra, message in [
        (["--cuda-graph"], "--cuda-graph captures the planner on a CUDA device: add --device cuda (got --device cpu)"),
        (["--gpus-per-run", "0.5"], "--gpus-per-run is a request to Ray: use it with --ray-address"),
        (["--gpus-per-run", "1.5", "--ray-address", "local"], "--gpus-per-run: must be a fraction in (0, 1] or a whole"),
        (["--gpus-per-run", "0", "--ray-address", "local"], "number of GPUs, got 0"),
        (["--gpus-per-run", "half", "--ray-address", "local"], "number of GPUs, got half"),
    ]:
        with pytest.raises(SystemExit):
            experiments_main([*run, *extra])
        assert message in capsys.readouterr().err
    assert experiments_main([*run, "--device", "cuda:1", "--cuda-graph"]) == 0  # listing needs no GPU
    with pytest.raises(ValueError, match="gpus_per_run is a Ray resource request"):
        run_specs(build_specs("point-mass-beta", "smoke", [0], methods=["sac"]), "unused", gpus_per_run=0.5)


def test_batch_seeds_and_ray_do_not_mix(capsys):
    with pytest.raises(SystemExit):
        experiments_main(["run", "point-mass-beta", "--budget", "smoke", "--batch-seeds", "--ray-address", "local"])
    assert "--batch-seeds runs locally" in capsys.readouterr().err


def test_swimmer_runs_record_ergodicity_and_sac_zoo_runs(tmp_path):
    out = str(tmp_path)
    common = ["--budget", "smoke", "--settings", "heavy", "--seeds", "1", "--out", out]
    assert experiments_main(["run", "swimmer-methods", "--methods", "maxdiff", "sac-zoo", *common]) == 0
    for method in ("maxdiff", "sac-zoo"):
        run_dir = tmp_path / "swimmer-methods" / "smoke" / "heavy" / method / "seed_0"
        with open(run_dir / "ergodicity.csv") as file:
            rows = list(csv.DictReader(file))
        assert [float(row["timesteps"]) for row in rows] == [100.0, 200.0, 300.0]
        # the swimmer's (x, y) on a 40 x 40 grid: a 100-step episode stays within a few cells of the start
        assert 0 < float(rows[-1]["coverage"]) < 0.01
        result = json.loads((run_dir / RESULT_FILE).read_text())
        assert result["ergodicity"]["episodes"] == 3
    assert experiments_main(["report", out]) == 0
    report = (tmp_path / "swimmer-methods" / "smoke" / "REPORT.md").read_text()
    assert "| heavy | SAC (RL Zoo) |" in report and "40 x 40 cells" in report
    # every episode, with its diagnostics, in one CSV; the per-seed tables computed back from it
    episodes = str(tmp_path / "episodes.csv")
    assert experiments_main(["export", out, "--out", episodes]) == 0
    with open(episodes) as file:
        rows = list(csv.DictReader(file))
    train = [row for row in rows if row["kind"] == "train"]
    assert [(row["method"], row["steps"], row["length"], row["full_length"]) for row in train[:3]] == [
        ("maxdiff", "100", "100", "1"),
        ("maxdiff", "200", "100", "1"),
        ("maxdiff", "300", "100", "1"),
    ]
    assert all(float(row["msd_exponent"]) > 0 and float(row["coverage"]) > 0 for row in train)
    evaluations = [row for row in rows if row["kind"] == "eval"]
    assert len(train) == 6 and len(evaluations) == 2
    by_method = {row["method"]: float(row["return"]) for row in evaluations}
    assert (
        by_method["sac-zoo"]
        == _result(out, build_specs("swimmer-methods", "smoke", [0], ["heavy"], ["sac-zoo"])[0])["eval_returns"][
            "sb3_maxdiff/Swimmer-heavy-v0"
        ][0]
    )
    from sb3_maxdiff.experiments.analyse.tables import per_seed_values

    values = per_seed_values(episodes, [200], full_length=100)
    assert values["last episode at 200"]["maxdiff"][0] == float(train[1]["return"])
    assert values["running max at 200"]["maxdiff"][0] == max(float(row["return"]) for row in train[:2])
    assert values["final evaluation (mean per seed)"]["sac-zoo"][0] == by_method["sac-zoo"]
    assert set(values) >= {"msd_exponent (median over episodes)", "coverage (end of training)"}


def test_export_without_a_finished_run_says_what_it_looked_for(tmp_path, capsys):
    """A sweep still training (checkpoints, no result.json) has nothing to export: the error names the filter."""
    cell = tmp_path / "swimmer-stock" / "reduced-50000-steps" / "stock" / "maxdiff" / "seed_0"
    cell.mkdir(parents=True)
    (cell / "monitor.csv").write_text('#{"t_start": 0}\nr,l,t\n1.0,1000,1.0\n')
    args = ["export", str(tmp_path), "--preset", "swimmer-stock", "--budget", "reduced-50000-steps"]
    with pytest.raises(SystemExit):
        experiments_main([*args, "--out", str(tmp_path / "episodes.csv")])
    error = capsys.readouterr().err
    assert "no finished run (a folder with result.json)" in error
    assert "preset 'swimmer-stock', budget 'reduced-50000-steps'" in error
    assert not (tmp_path / "episodes.csv").exists()


def test_a_batch_seeds_each_environment_with_its_own_seed(tmp_path):
    """Environment i of a batch starts as a run of seed i alone would (SB3 alone would seed it with seed 0 + i)."""
    import gymnasium as gym

    from sb3_maxdiff.experiments.run.environments import training_env

    specs = build_specs("point-mass-beta", "smoke", [3, 7], settings=["beta=1"], methods=["nnmppi"])
    env = training_env(specs, [str(tmp_path / "a"), str(tmp_path / "b")], resume=False)
    env.seed(3 + 10)  # what set_random_seed(first seed + steps done) does on resuming at step 10
    first = env.reset()
    for row, seed in zip(first, (13, 17)):
        alone, _ = gym.make(specs[0].env_id, max_episode_steps=100).reset(seed=seed)
        np.testing.assert_array_equal(row, alone)


def test_runs_are_grouped_by_cell_only_when_batching():
    specs = build_specs("point-mass-beta", "smoke", range(3), settings=["beta=1"], methods=["maxdiff", "sac"])
    from sb3_maxdiff.experiments.run.batching import group_runs

    assert group_runs(specs) == [[spec] for spec in specs]
    batched = group_runs(specs, batch_seeds=True)
    assert [[spec.seed for spec in group] for group in batched] == [[0, 1, 2], [0], [1], [2]]
    assert [group[0].method for group in batched] == ["maxdiff", "sac", "sac", "sac"]
    with pytest.raises(ValueError, match="a group of several runs must be NN-MPPI / MaxDiff runs that can share"):
        execute_group([spec for spec in specs if spec.method == "sac"][:2], "unused")


def test_the_run_spec_is_not_changed_by_training(tmp_path):
    """SB3 writes into the policy_kwargs it is given: the runner passes a copy, so result.json has the spec as run."""
    (spec,) = build_specs("point-mass-beta", "smoke", [0], settings=["beta=1"], methods=["sac"])
    before = json.dumps(spec.to_json())
    result = execute_run(spec, str(tmp_path))
    assert json.dumps(spec.to_json()) == before and json.dumps(result["spec"]) == before


def test_export_keeps_each_runs_final_model_without_its_optimizer_moments(tmp_path):
    """--models: each run's policy as it ended (the same actions), its settings, no Adam moments, a smaller file."""
    from sb3_maxdiff.experiments.define.algos import get_algo

    out = str(tmp_path / "runs")
    args = ["point-mass-beta", "--budget", "smoke", "--settings", "beta=1", "--methods", "maxdiff", "sac", "--seeds", "1"]
    assert experiments_main(["run", *args, "--out", out]) == 0
    prefix = str(tmp_path / "kept" / "point_mass")
    (tmp_path / "kept").mkdir()
    export = ["export", out, "--preset", "point-mass-beta", "--budget", "smoke", "--out", str(tmp_path / "episodes.csv")]
    assert experiments_main([*export, "--models", prefix]) == 0
    assert sorted(path.name for path in (tmp_path / "kept").iterdir()) == [
        "point_mass_maxdiff_seed0.zip",
        "point_mass_sac_seed0.zip",
    ]
    for spec in build_specs("point-mass-beta", "smoke", [0], ["beta=1"], ["maxdiff", "sac"]):
        algo = get_algo(spec.method)
        original = pathlib.Path(out) / spec.relpath / "model.zip"
        kept = pathlib.Path(f"{prefix}_{spec.method}_seed0.zip")
        assert kept.stat().st_size < original.stat().st_size
        full, light = algo.load(original, device="cpu"), algo.load(kept, device="cpu")
        optimizers = [name for name in light._get_torch_save_params()[0] if name.endswith("optimizer")]
        assert optimizers and all(not functools.reduce(getattr, name.split("."), light).state for name in optimizers)
        assert light.num_timesteps == full.num_timesteps
        obs = np.stack([full.observation_space.sample() for _ in range(3)])
        np.testing.assert_array_equal(light.predict(obs, deterministic=True)[0], full.predict(obs, deterministic=True)[0])
    # exported again: a kept file that already holds its model stays as it is; one that does not is rewritten
    kept = pathlib.Path(f"{prefix}_maxdiff_seed0.zip")
    stale = pathlib.Path(f"{prefix}_sac_seed0.zip")
    before, written_at = kept.read_bytes(), kept.stat().st_mtime_ns
    stale.write_bytes(before)  # the MaxDiff model where the SAC one belongs
    assert experiments_main([*export, "--models", prefix]) == 0
    assert kept.read_bytes() == before and kept.stat().st_mtime_ns == written_at
    assert stale.read_bytes() != before and get_algo("sac").load(stale, device="cpu").num_timesteps == full.num_timesteps
    assert len(list((tmp_path / "kept").iterdir())) == 2  # no file left beside them


def test_a_run_evaluated_in_a_later_process_keeps_its_training_time(tmp_path):
    """A run trained in one call and evaluated in another reports the training's seconds, not the model's load time."""
    (spec,) = build_specs("point-mass-beta", "smoke", [0], settings=["beta=1"], methods=["nnmppi"], steps=60)
    first = execute_run(spec, str(tmp_path))
    os.remove(os.path.join(tmp_path, spec.relpath, RESULT_FILE))  # trained, not yet evaluated, as after a stop
    again = execute_run(spec, str(tmp_path))
    assert again["train_seconds"] == first["train_seconds"] and again["resumed_from_steps"] == 0


def test_a_critic_run_evaluates_its_actor_alone_beside_the_planner(tmp_path):
    """A terminal_value="q" run (past-horizon's swimmer critic, smoke budget): both evaluations, exported by kind."""
    out = str(tmp_path)
    argv = ["run", "past-horizon", "--budget", "smoke", "--settings", "swimmer critic", "--out", out, "--seeds", "1"]
    assert experiments_main(argv) == 0
    (spec,) = build_specs("past-horizon", "smoke", [0], settings=["swimmer critic"])
    assert spec.algo_kwargs["terminal_value"] == "q" and spec.algo_kwargs["gamma"] == 0.999
    result = _result(out, spec)
    planner, actor = result["eval_returns"][spec.env_id], result["actor_eval_returns"][spec.env_id]
    assert len(planner) == len(actor) == spec.eval_episodes and planner != actor
    episodes = tmp_path / "critic.csv"
    assert experiments_main(["export", out, "--out", str(episodes)]) == 0
    with open(episodes) as file:
        kinds = [row["kind"] for row in csv.DictReader(file)]
    assert kinds.count("eval") == kinds.count("actor eval") == spec.eval_episodes
