import csv
import dataclasses
import importlib.util
import json
import os
import pathlib
import sys
from types import ModuleType
from typing import Any

import numpy as np
import pytest
import torch as th
from helpers import process_state_kept, run_script

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _printed(command: list[str], capsys: pytest.CaptureFixture) -> str:
    """Run ``command`` (``[python, script, *args]``) in this process, without a new interpreter; what it printed."""
    run_script(pathlib.Path(command[1]), command[2:])
    return capsys.readouterr().out


def _small_point_mass(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """
    ``benchmarks/run.py`` as the module the other scripts import, its point-mass configuration shrunk for the length
    of a test (horizon 5, 50 samples, 32-unit layers): each figure is timed as in the real command, on less work.
    """
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    import run

    small = dataclasses.replace(run.CONFIGS["point-mass"], net_arch=[32, 32], horizon=5, n_samples=50)
    monkeypatch.setitem(run.CONFIGS, "point-mass", small)
    return run


def test_benchmark_script_runs_with_a_tiny_budget(tmp_path, capsys, monkeypatch):
    """The command of BENCHMARKS.md, with one call per figure, a small replay buffer and a small planner."""
    out = tmp_path / "bench.json"
    command = [sys.executable, str(ROOT / "benchmarks" / "run.py"), "--configs", "point-mass", "--calls", "1",
               "--buffer-size", "2000", "--fills", "500", "2000", "--bf16-seconds", "0", "--no-scaling",
               "--json", str(out)]  # fmt: skip
    run = _small_point_mass(monkeypatch)
    with process_state_kept(command[1:]):
        run.main()
    printed = capsys.readouterr().out
    assert "| point-mass |" in printed
    row = json.loads(out.read_text())["configs"][0]
    for key in ("plan_ms", "gemm_floor_ms", "mm_floor_ms", "plan_bf16_ms", "update_ms_2000", "step_ms_2000",
                "baseline_plan_ms", "baseline_step_ms_2000"):  # fmt: skip
        assert row[key] > 0, key
    # the printed tables carry the measured figures and the ratios made from them
    (line,) = [line for line in printed.splitlines() if line.startswith("| point-mass |") and line.count("|") == 12]
    cells = [cell.strip() for cell in line.split("|")[1:-1]]
    assert cells[1] == f"{row['plan_ms']:.2f}" and cells[3] == f"{row['plan_ms'] / row['gemm_floor_ms']:.2f}"
    assert cells[-1] == f"{row['step_ms_2000'] / row['step_ms_500']:.3f}"
    speedup = row["baseline_step_ms_2000"] / row["step_ms_2000"]
    assert any(line.startswith("| point-mass |") and line.endswith(f"| {speedup:.2f}x |") for line in printed.splitlines())


def test_agents_benchmark_runs_with_a_tiny_budget(tmp_path, capsys, monkeypatch):
    """The seed-batching command of BENCHMARKS.md, with one round, a small replay column and a small planner."""
    _small_point_mass(monkeypatch)
    out = tmp_path / "agents.json"
    command = [sys.executable, str(ROOT / "benchmarks" / "agents.py"), "--configs", "point-mass", "--agents", "2",
               "--calls", "1", "--fill", "500", "--cuda-graph", "--bf16", "--json", str(out)]  # fmt: skip
    printed = _printed(command, capsys)
    assert "| point-mass | 2 |" in printed and "graph speed-up" in printed and "bfloat16 speed-up" in printed
    (row,) = json.loads(out.read_text())["rows"]
    assert row["n_agents"] == 2
    for key in ("batched_ms_per_agent_step", "sequential_ms_per_agent_step", "speedup", "graphed_ms_per_agent_step",
                "bf16_ms_per_agent_step"):  # fmt: skip
        assert row[key] > 0, key
    assert row["bf16_speedup"] == pytest.approx(row["graphed_ms_per_agent_step"] / row["bf16_ms_per_agent_step"])
    assert row["speedup"] == pytest.approx(row["sequential_ms_per_agent_step"] / row["batched_ms_per_agent_step"])


@pytest.mark.slow
def test_profile_script_reports_each_part_of_a_step(tmp_path, capsys):
    """The profile command of BENCHMARKS.md on the CPU: one planner call and 5 updates per case, their figures."""
    out = tmp_path / "profile.json"
    command = [sys.executable, str(ROOT / "benchmarks" / "profile_step.py"), "--device", "cpu", "--config", "point-mass",
               "--cases", "1", "2", "--calls", "1", "--fill", "500", "--threads", "1", "--plan-parts",
               "--json", str(out)]  # fmt: skip
    printed = _printed(command, capsys)
    assert "| 2 | False | 5 updates |" in printed and "| 2 | False | plan: path entropy |" in printed
    rows = json.loads(out.read_text())["rows"]
    parts = ["plan", "5 updates", "plan: rollout", "plan: path entropy"]
    assert [(row["n_agents"], row["part"]) for row in rows] == [(n, part) for n in (1, 2) for part in parts]
    for row in rows:
        assert row["host_ms"] > 0 and row["kernel_launches"] == 0 and row["gpu_busy_ms"] == 0  # no CUDA on a CPU
    with pytest.raises(SystemExit) as exit_info:
        run_script(pathlib.Path(command[1]), [*command[2:-2], "--cases", "4:fast"])
    assert exit_info.value.code != 0 and "case must be N or N:graph with N >= 1, got '4:fast'" in capsys.readouterr().err


def test_plan_parts_are_the_rollout_and_entropy_of_one_planner_call():
    """The parts have the shapes of the planner call they stand for: every sample of every agent, every step."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        from profile_step import plan_parts
        from run import CONFIGS, make_algorithm
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    config = CONFIGS["point-mass"]
    model = make_algorithm(config, "cpu", 100, n_envs=3, independent_agents=True)
    parts = plan_parts(model)
    assert list(parts) == ["plan: rollout", "plan: path entropy"]
    returns, states = parts["plan: rollout"]()
    settings = model.policy.planner.settings
    assert returns.shape == (3, settings.n_samples) and states.shape == (3, settings.n_samples, settings.horizon, 4)
    # each agent's paths start where its environment is
    start = th.as_tensor(model._last_obs, dtype=th.float32)
    assert th.equal(states[:, :, 0], start[:, None].expand(3, settings.n_samples, 4))
    entropy, bonus = parts["plan: path entropy"]()
    assert entropy.shape == bonus.shape == (3, settings.n_samples) and th.isfinite(entropy).all()
    # without the random draw of the (default) jitter, the entropy is a function of the states alone
    entropy_bonus = model.policy.planner.entropy_bonus
    entropy_bonus.entropy = dataclasses.replace(entropy_bonus.entropy, jitter="diagonal")
    entropy, _ = plan_parts(model)["plan: path entropy"]()
    assert th.equal(entropy, model.policy.planner.entropy_bonus(states)[0])  # its entropy is that of the rollout's states
    model.policy.planner.entropy_bonus = None  # as NN-MPPI's planner has: the rollout alone
    assert list(plan_parts(model)) == ["plan: rollout"]


def test_threads_benchmark_runs_with_a_tiny_budget(capsys):
    """The threads command of the performance guide (docs/guide/performance.md), two timed steps per run on the point mass."""
    command = [sys.executable, str(ROOT / "benchmarks" / "threads.py"), "--env", "sb3_maxdiff/PointMass-beta1-v0",
               "--steps", "2", "--repeats", "1", "--threads", "1", "0"]  # fmt: skip
    printed = _printed(command, capsys)
    rows = [line for line in printed.splitlines() if line.startswith("| 1 |") or line.startswith("| default (")]
    assert len(rows) == 2 and all(float(row.split(" | ")[1]) > 0 for row in rows), printed


def test_compare_trees_reports_medians_and_ratios(tmp_path, monkeypatch, capsys):
    """The alternating comparison of two checkouts, with the timing itself replaced by known figures."""
    import importlib.util

    path = pathlib.Path(__file__).parent.parent.parent / "benchmarks" / "compare_trees.py"
    spec = importlib.util.spec_from_file_location("compare_trees", path)
    compare = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(compare)
    calls = []

    def fake_time_tree(tree, out, **options):
        calls.append(tree.name)
        figures = {"old": [40.0, 50.0, 45.0], "new": [30.0, 20.0, 25.0]}[tree.name]
        return {"swimmer plan_ms": figures[(len(calls) - 1) // 2]}

    monkeypatch.setattr(compare, "time_tree", fake_time_tree)
    (tmp_path / "old").mkdir(), (tmp_path / "new").mkdir()
    monkeypatch.setattr(sys, "argv", ["compare_trees.py", str(tmp_path / "old"), str(tmp_path / "new"), "--rounds", "3"])
    compare.main()
    assert calls == ["old", "new"] * 3  # alternating
    assert "| swimmer plan_ms | 45.00 | 25.00 | 0.556 |" in capsys.readouterr().out


def test_mixed_batch_benchmark_runs_with_a_tiny_budget(tmp_path, capsys, monkeypatch):
    """The mixed-batch command of BENCHMARKS.md (one MaxDiff + NN-MPPI batch against two batches), one round."""
    _small_point_mass(monkeypatch)
    out = tmp_path / "mixed.json"
    command = [sys.executable, str(ROOT / "benchmarks" / "agents.py"), "--configs", "point-mass", "--agents", "2",
               "--calls", "1", "--fill", "500", "--mixed", "--json", str(out)]  # fmt: skip
    printed = _printed(command, capsys)
    assert "one mixed batch" in printed and "| point-mass | 2 |" in printed
    (row,) = json.loads(out.read_text())["rows"]
    ratio = row["two_batches_ms_per_agent_step"] / row["mixed_ms_per_agent_step"]
    assert row["speedup"] == pytest.approx(ratio)


def test_auto_alpha_benchmark_runs_with_a_tiny_budget(tmp_path, capsys):
    """The command of BENCHMARKS.md on what alpha="auto" costs, one timed call per figure."""
    out = tmp_path / "auto.json"
    command = [sys.executable, str(ROOT / "benchmarks" / "auto_alpha.py"), "--configs", "point-mass", "--agents", "2",
               "--calls", "1", "--threads", "1", "--json", str(out)]  # fmt: skip
    printed = _printed(command, capsys)
    (row,) = json.loads(out.read_text())
    assert row["agents"] == 2 and row["auto_over_fixed"] == pytest.approx(row["auto_step_ms"] / row["fixed_step_ms"])
    assert f"{row['auto_over_fixed']:10.3f}" in printed


def test_alpha_scales_measures_the_ratio_the_rule_targets(tmp_path, capsys):
    """The alpha_scales command of docs/guide/own_env.md, shortened: each row's ratio is alpha * std(S) / std(R)."""
    import csv

    out = tmp_path / "scales.csv"
    command = [sys.executable, str(ROOT / "benchmarks" / "alpha_scales.py"), "--bodies", "point-mass", "--steps", "140",
               "--seeds", "2", "--csv", str(out)]  # fmt: skip
    printed = _printed(command, capsys)
    rows = list(csv.DictReader(out.open()))
    assert {row["seed"] for row in rows} == {"0", "1"} and {float(row["alpha"]) for row in rows} == {0.5}
    assert all(float(row["return_spread"]) > 0 and float(row["entropy_spread"]) > 0 for row in rows)
    for seed in ("0", "1"):  # the printed ratio: the median of alpha * std(S) / std(R) over the second half of the run
        mine = [row for row in rows if row["seed"] == seed]
        late = mine[len(mine) // 2 :]
        ratio = np.median([float(r["alpha"]) * float(r["entropy_spread"]) / float(r["return_spread"]) for r in late])
        (line,) = [line for line in printed.splitlines() if line.split()[:2] == ["point-mass", seed]]
        assert float(line.split()[5]) == pytest.approx(ratio, abs=1e-3)


def test_controller_benchmark_times_ours_and_pytorch_mppis_where_installed(capsys):
    """The command of BENCHMARKS.md's controller table; pytorch_mppi is not a dependency, so CI times ours alone."""
    try:
        import pytorch_mppi  # noqa: F401

        extra = []
    except ImportError:
        extra = ["--ours-only"]
    command = [sys.executable, str(ROOT / "benchmarks" / "vs_pytorch_mppi.py"), "--samples", "50", "--horizons", "5",
               "--calls", "2", "--rounds", "1", "--warmup", "1", *extra]  # fmt: skip
    printed = _printed(command, capsys)
    (row,) = [line for line in printed.splitlines() if line.startswith("| 50 | 5 |")]
    cells = [cell.strip() for cell in row.split("|")[1:-1]]
    assert float(cells[3]) > 0 and float(cells[5]) > 0  # ours, plain MPPI and MaxDiff, in ms
    assert (cells[2] == "nan") == bool(extra)


def _small_saved_model(env_id: str, path: pathlib.Path) -> Any:
    """A small MaxDiff agent trained 30 steps on ``env_id`` and saved at ``path``."""
    from sb3_maxdiff import MaxDiffMPPI

    model = MaxDiffMPPI("MlpPolicy", env_id, horizon=5, n_samples=20, batch_size=8, learning_starts=10, seed=0,
                        policy_kwargs=dict(net_arch=[16]))  # fmt: skip
    model.learn(30)
    model.save(path)
    return model


def test_planner_precision_compares_the_two_dtypes_of_a_saved_model(tmp_path, capsys):
    """The command of BENCHMARKS.md's bfloat16 validation, on a small point-mass model."""
    env_id = "sb3_maxdiff/PointMass-beta0_01-v0"
    _small_saved_model(env_id, tmp_path / "small.zip")
    command = [sys.executable, str(ROOT / "benchmarks" / "planner_precision.py"), str(tmp_path / "small.zip"),
               "--env", env_id, "--stride", "200", "--step-calls", "1"]  # fmt: skip
    printed = _printed(command, capsys)
    (row,) = [line for line in printed.splitlines() if line.startswith("| small.zip |")]
    cells = [cell.strip() for cell in row.split("|")[1:-1]]
    assert int(cells[1]) >= 1 and 0 <= float(cells[2]) <= float(cells[3]) <= 2  # actions in [-1, 1]
    assert all(float(cell) > 0 for cell in cells[6:9])  # both steps timed, and their ratio


def _result(path: pathlib.Path, seed: int, method: str, train: float, evaluation: float, **batch) -> None:
    spec = {"seed": seed, "method": method, "steps": 1000, "max_episode_steps": None}
    result = {"spec": spec, "train_seconds": train, "eval_seconds": evaluation, "eval_returns": {"env": [1.0, 2.0]}}
    path.mkdir(parents=True)
    (path / "result.json").write_text(json.dumps({**result, **batch}))


def test_end_to_end_costs_are_the_runners_seconds_over_every_agents_steps(tmp_path):
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from runner_end_to_end import per_agent_step_costs

    # one mixed batch of 2 runs (1000 training steps each, 2 evaluation episodes of 1,000 steps each)
    runs = ["heavy / maxdiff / seed 0", "heavy / nnmppi / seed 0"]
    _result(tmp_path / "mixed" / "a", 0, "maxdiff", 8.0, 2.0, batched_runs=runs)
    _result(tmp_path / "mixed" / "b", 0, "nnmppi", 8.0, 2.0, batched_runs=runs)
    mixed = per_agent_step_costs(str(tmp_path / "mixed"))
    assert mixed["batches"] == [2]
    assert mixed["train_ms_per_agent_step"] == pytest.approx(1e3 * 8.0 / 2000)
    assert mixed["eval_ms_per_agent_step"] == pytest.approx(1e3 * 2.0 / 4000)
    # two batches of one seed each, one per method, with the same seeds: two batches, their seconds added
    _result(tmp_path / "apart" / "a", 0, "maxdiff", 5.0, 1.0, batched_seeds=[0])
    _result(tmp_path / "apart" / "b", 0, "nnmppi", 7.0, 3.0, batched_seeds=[0])
    apart = per_agent_step_costs(str(tmp_path / "apart"))
    assert apart["batches"] == [1, 1]
    assert apart["train_ms_per_agent_step"] == pytest.approx(1e3 * 12.0 / 2000)
    assert apart["eval_ms_per_agent_step"] == pytest.approx(1e3 * 4.0 / 4000)
    assert mixed["late_train_ms_per_agent_step"] is None and apart["late_train_ms_per_agent_step"] is None  # not timed


def test_end_to_end_late_pace_is_the_timed_seconds_over_every_agents_timed_steps(tmp_path):
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from runner_end_to_end import per_agent_step_costs

    runs = ["heavy / maxdiff / seed 0", "heavy / nnmppi / seed 0"]
    pace = {"agent_steps": 750, "seconds": 3.0}  # per agent of the batch, timed once for the batch
    for name, method in (("a", "maxdiff"), ("b", "nnmppi")):
        _result(tmp_path / "mixed" / name, 0, method, 8.0, 2.0, batched_runs=runs, late_train_pace=pace)
    assert per_agent_step_costs(str(tmp_path / "mixed"))["late_train_ms_per_agent_step"] == pytest.approx(1e3 * 3.0 / 1500)
    _result(tmp_path / "apart" / "a", 0, "maxdiff", 5.0, 1.0, batched_seeds=[0], late_train_pace=pace)
    _result(
        tmp_path / "apart" / "b",
        0,
        "nnmppi",
        7.0,
        3.0,
        batched_seeds=[0],
        late_train_pace={"agent_steps": 750, "seconds": 5.0},
    )
    assert per_agent_step_costs(str(tmp_path / "apart"))["late_train_ms_per_agent_step"] == pytest.approx(1e3 * 8.0 / 1500)
    _result(tmp_path / "part" / "a", 0, "maxdiff", 5.0, 1.0, batched_seeds=[0], late_train_pace=pace)
    _result(tmp_path / "part" / "b", 0, "nnmppi", 7.0, 3.0, batched_seeds=[0])  # one batch not timed: no figure
    assert per_agent_step_costs(str(tmp_path / "part"))["late_train_ms_per_agent_step"] is None


def test_end_to_end_costs_of_single_shot_runs_have_no_evaluation_figure(tmp_path):
    """A single-shot batch is not evaluated (no episodes): its training cost is given, its evaluation cost is None."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from runner_end_to_end import per_agent_step_costs

    runs = ["ant single-shot / maxdiff / seed 0", "ant single-shot / nnmppi / seed 0"]
    for name, method in (("a", "maxdiff"), ("b", "nnmppi")):
        _result(tmp_path / name, 0, method, 8.0, 2.6e-5, batched_runs=runs, eval_returns={})
    costs = per_agent_step_costs(str(tmp_path))
    assert costs["train_ms_per_agent_step"] == pytest.approx(1e3 * 8.0 / 2000)
    assert costs["eval_ms_per_agent_step"] is None


@pytest.mark.slow
def test_end_to_end_benchmark_runs_both_configurations(tmp_path, capsys):
    """
    The end-to-end command of BENCHMARKS.md on the point mass's smoke budget, one seed per method, the two
    configurations in the order asked for, the environments stepped in two threads.
    """
    out = tmp_path / "e2e.json"
    command = [sys.executable, str(ROOT / "benchmarks" / "runner_end_to_end.py"), "--preset", "point-mass-beta",
               "--setting", "beta=1", "--budget", "smoke", "--seeds", "1", "--steps", "60", "--quiet",
               "--configurations", "per-method", "mixed", "--env-threads", "2", "--overlap-updates",
               "--json", str(out)]  # fmt: skip
    printed = _printed(command, capsys)
    written = json.loads(out.read_text())
    rows = written["rows"]
    assert written["args"]["env_threads"] == 2 and written["args"]["overlap_updates"]
    assert [(row["configuration"], row["batches"]) for row in rows] == [
        ("a batch per method", [1, 1]),
        ("one mixed batch", [2]),
    ]
    assert all(row["train_ms_per_agent_step"] > 0 and row["eval_ms_per_agent_step"] > 0 for row in rows)
    assert "| one mixed batch | 2 |" in printed and "| a batch per method | 1 + 1 |" in printed


def test_end_to_end_benchmark_passes_its_options_to_the_runner():
    from runner_end_to_end import parse_args, runner_command

    args = parse_args(["--cuda-graph", "--env-threads", "8", "--overlap-updates", "--device", "cuda"])
    command = runner_command("--batch-cells", args, "out")
    assert command[command.index("--env-threads") + 1] == "8" and command[command.index("--device") + 1] == "cuda"
    assert {"--batch-cells", "--batch-eval", "--cuda-graph", "--overlap-updates"} <= set(command)
    plain = runner_command("--batch-seeds", parse_args([]), "out")
    assert "--batch-seeds" in plain and "--overlap-updates" not in plain and "--cuda-graph" not in plain


def test_env_threads_benchmark_times_each_setting(tmp_path, capsys):
    """The environment-stepping command of BENCHMARKS.md, tiny: 3 point masses, one after the other and 2 threads."""
    out = tmp_path / "env.json"
    command = [sys.executable, str(ROOT / "benchmarks" / "env_threads.py"), "--env", "sb3_maxdiff/PointMass-beta1-v0",
               "--envs", "3", "--threads", "2", "--steps", "20", "--rounds", "1", "--json", str(out)]  # fmt: skip
    printed = _printed(command, capsys)
    rows = json.loads(out.read_text())["rows"]
    assert [(row["n_envs"], row["setting"]) for row in rows] == [(3, "one after the other"), (3, "2 threads")]
    assert rows[0]["speedup"] == 1.0 and rows[1]["speedup"] == pytest.approx(
        rows[0]["ms_per_batch_step"] / rows[1]["ms_per_batch_step"]
    )
    assert "| 3 | 2 threads |" in printed
    assert "the infos of 3 environments: deep copies" in printed
    deep, dicts = json.loads(out.read_text())["info_copy_us"]["3"]
    assert deep > 0 and dicts > 0


def test_run_script_puts_back_what_a_script_changes(tmp_path, capsys):
    """The scripts above run in the test process: their torch threads, denormal flushing and seeds must not leak."""
    import torch as th

    from sb3_maxdiff.common.utils import flush_denormal_enabled

    script = tmp_path / "script.py"
    script.write_text(
        "import sys\nimport torch\ntorch.set_num_threads(1)\ntorch.manual_seed(123)\ntorch.set_flush_denormal(True)\n"
        "print(sys.argv[1:])\nif sys.argv[1] == 'fail':\n    sys.exit(3)\n"
    )
    threads = th.get_num_threads()
    th.set_num_threads(2)
    th.set_flush_denormal(False)
    try:
        state = th.get_rng_state()
        run_script(script, ["ok"])
        assert capsys.readouterr().out == "['ok']\n"
        assert th.get_num_threads() == 2 and not flush_denormal_enabled() and th.equal(th.get_rng_state(), state)
        with pytest.raises(SystemExit) as exit_info:
            run_script(script, ["fail"])
        assert exit_info.value.code == 3 and th.get_num_threads() == 2
    finally:
        th.set_num_threads(threads)


def test_overlap_updates_benchmark_times_both_settings(tmp_path, capsys):
    out = tmp_path / "overlap.json"
    command = [sys.executable, str(ROOT / "benchmarks" / "overlap_updates.py"), "--config", "point-mass", "--agents", "2",
               "--steps", "3", "--rounds", "2", "--fill", "500", "--json", str(out)]  # fmt: skip
    printed = _printed(command, capsys)
    assert "| point-mass | 2 | 1 |" in printed
    row = json.loads(out.read_text())
    assert [len(row["rounds"][name]) for name in ("without", "overlap_updates")] == [2, 2]
    assert row["speedup"] == pytest.approx(row["without_ms_per_agent_step"] / row["overlap_ms_per_agent_step"])


def _gpu_suite():
    spec = importlib.util.spec_from_file_location("gpu_suite", ROOT / "benchmarks" / "gpu_suite.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_gpu_suite_names_scripts_options_and_tests_that_exist():
    """Every step's script exists and defines each option the step passes; every test it runs exists."""
    suite = _gpu_suite()
    for step in suite.steps():
        line = suite.command(step, pathlib.Path("out"))
        if step.args[:2] == ["-m", "pytest"]:
            for test in suite.CUDA_TESTS:
                path, _, name = test.partition("::")
                assert (ROOT / path).exists() and (not name or f"def {name}(" in (ROOT / path).read_text()), test
            continue
        source = pathlib.Path(step.args[0]).read_text()
        options = [token for token in line[2:] if token.startswith("--")]
        assert options and all(f'"{option}"' in source for option in options), (step.name, options)
        if "--preset" in line:  # a preset the runner knows, with the setting (heavy by default) and method asked for
            from sb3_maxdiff.experiments.define.presets import PRESETS

            preset = PRESETS[line[line.index("--preset") + 1]]
            setting = line[line.index("--setting") + 1] if "--setting" in line else "heavy"
            method = line[line.index("--methods") + 1]
            assert setting in preset.settings and method in preset.methods, (step.name, setting, method)


def test_gpu_suite_runs_in_order_and_skips_what_would_not_fit(tmp_path, capsys):
    suite = _gpu_suite()
    plan = [
        suite.Step("first", ["-c", "print('one')"], 0.0, json=False),
        suite.Step("fails", ["-c", "import sys; sys.exit(3)"], 0.0, json=False),
        suite.Step("too_long", ["-c", "print('never')"], 1e6, json=False),
        suite.Step("last", ["-c", "print('two')"], 0.0, json=False),
        suite.Step(
            "env",
            ["-c", "import os; print(os.environ.get('SUITE_TEST', 'unset'))"],
            0.0,
            json=False,
            env=(("SUITE_TEST", "on"),),
        ),
        suite.Step("no_env", ["-c", "import os; print(os.environ.get('SUITE_TEST', 'unset'))"], 0.0, json=False),
    ]
    rows = suite.run_steps(plan, tmp_path, seconds=60.0)
    assert [(row["step"], row["status"]) for row in rows] == [
        ("first", 0), ("fails", 3), ("too_long", "skipped"), ("last", 0), ("env", 0), ("no_env", 0)
    ]  # fmt: skip
    assert (tmp_path / "first.log").read_text() == "one\n" and not (tmp_path / "too_long.log").exists()
    # a step's variables are its own: set for it, not left behind for the next one
    assert (tmp_path / "env.log").read_text() == "on\n" and (tmp_path / "no_env.log").read_text() == "unset\n"
    assert json.loads((tmp_path / "summary.json").read_text())["steps"] == rows
    assert "too_long: skipped" in capsys.readouterr().out
    slow = [suite.Step("slow", ["-c", "import time; time.sleep(30)"], 0.0, json=False)]
    assert suite.run_steps(slow, tmp_path, seconds=1.0)[0]["status"] == "timed out"


def test_checkpoint_buffer_benchmark_compares_the_two_pickles(capsys):
    """The command of BENCHMARKS.md's checkpoint section, tiny: the filled rows pickle smaller than the capacity."""
    printed = _printed([sys.executable, str(ROOT / "benchmarks" / "checkpoint_buffer.py"), "--agents", "2", "--rows",
                        "100", "--capacity", "5000"], capsys)  # fmt: skip
    sizes = {line.split(":")[0]: float(line.split(": ")[1].split(" MiB")[0]) for line in printed.splitlines()}
    assert sizes["filled rows (now)"] < sizes["whole capacity (before)"] / 10


def test_replay_draw_benchmark_times_both_ways_of_gathering_the_same_draw(capsys):
    """The command of BENCHMARKS.md's replay-draw section, tiny: both ways draw alike (checked inside) and are timed."""
    printed = _printed([sys.executable, str(ROOT / "benchmarks" / "replay_draw.py"), "--agents", "3", "--rows-per-draw",
                        "16", "--fills", "50", "200", "--calls", "3", "--learn-steps", "2", "--learn-fill", "50",
                        "--rounds", "1"], capsys)  # fmt: skip
    rows = [line.split("|")[1:-1] for line in printed.splitlines() if line.startswith("| ") and line[2].isdigit()]
    assert [int(row[0]) for row in rows] == [50, 200]
    assert all(float(row[1]) > 0 and float(row[2]) > 0 for row in rows)
    learn = [line.split("|")[1:-1] for line in printed.splitlines() if line.startswith("| `learn`")]
    assert len(learn) == 1 and float(learn[0][1]) > 0 and float(learn[0][2]) > 0


def test_predict_denormals_benchmark_plans_the_same_both_ways(capsys):
    """The command of BENCHMARKS.md's denormals section on a kept model, two plans per setting."""
    model = ROOT / "docs" / "reproduction" / "models" / "swimmer_alpha10_50k_seed0.zip"
    printed = _printed([sys.executable, str(ROOT / "benchmarks" / "predict_denormals.py"), "--model", str(model),
                        "--rounds", "1", "--plans", "2"], capsys)  # fmt: skip
    assert "same plans: True (2 plans)" in printed


def test_every_benchmark_script_is_run_by_a_test():
    """Each script of benchmarks/ is named by a test here (baseline.py is the module benchmarks/run.py times against)."""
    source = pathlib.Path(__file__).read_text()
    scripts = [path.name for path in sorted((ROOT / "benchmarks").glob("*.py")) if path.name != "baseline.py"]
    assert [name for name in scripts if f'"{name}"' not in source] == []


def test_terminal_value_benchmark_runs_with_a_tiny_budget(capsys):
    command = [sys.executable, str(ROOT / "benchmarks" / "terminal_value.py"), "--calls", "1", "--warmup-steps", "2"]
    printed = _printed(command, capsys)
    rows = [line for line in printed.splitlines() if line.startswith("| H=")]
    assert [row.split("|")[1].strip() for row in rows] == ["H=10 value", "H=10 critic", "H=40"]
    assert "step H=10 value / step H=40:" in printed and "step H=10 critic / step H=40:" in printed
    halfcheetah = _printed([*command, "--body", "halfcheetah"], capsys)
    rows = [line for line in halfcheetah.splitlines() if line.startswith("| H=")]
    assert [row.split("|")[1].strip() for row in rows] == ["H=10 critic", "H=10"]
    assert "step H=10 critic / step H=10:" in halfcheetah


def test_pendulum_critic_known_answer_runs_with_a_tiny_budget(tmp_path, capsys):
    out = tmp_path / "pendulum.csv"
    command = [sys.executable, str(ROOT / "benchmarks" / "pendulum_critic.py"), "--steps", "300", "--seeds", "0"]
    _printed([*command, "--eval-episodes", "1", "--out", str(out)], capsys)
    with out.open() as file:
        rows = list(csv.DictReader(file))
    assert [row["arm"] for row in rows] == ["sac", "planner", "planner-q"]
    assert all(float(row["eval_return"]) < 0 for row in rows)  # Pendulum's rewards are never positive
    assert rows[2]["actor_eval_return"] and not rows[1]["actor_eval_return"]  # only the critic arm has an actor
    _printed([*command, "--arms", "sac", "--eval-episodes", "1", "--out", str(out), "--resume"], capsys)
    assert len(out.read_text().splitlines()) == 4  # the row already there is not run again


def test_replay_frame_benchmark_runs_with_a_tiny_budget(capsys, monkeypatch):
    """The parts of a replay frame, where this machine renders; else the one line that says it cannot."""
    for variable in ("MUJOCO_GL", "PYOPENGL_PLATFORM"):  # the script sets the backend it finds: undone afterwards
        monkeypatch.setenv(variable, os.environ.get(variable, ""))
    command = [sys.executable, str(ROOT / "benchmarks" / "replay_frame.py"), "--frames", "1"]
    try:
        printed = _printed(command, capsys)
    except SystemExit as stop:
        assert "MuJoCo cannot render here" in str(stop)
        return
    rows = [line.split("|")[1].strip() for line in printed.splitlines() if line.startswith("| ") and "ms" not in line]
    assert rows == ["predict", "step", "render", "frame"]
    assert "frame 480x480" in printed and "a 1,000-step replay video: about" in printed


def test_planner_weights_reports_the_effective_sample_size_of_a_saved_models_plans(tmp_path, capsys):
    env_id = "sb3_maxdiff/PointMass-beta0_01-v0"
    model = _small_saved_model(env_id, tmp_path / "small.zip")
    before = {name: tensor.clone() for name, tensor in model.policy.state_dict().items()}
    command = [sys.executable, str(ROOT / "benchmarks" / "planner_weights.py"), str(tmp_path / "small.zip"),
               "--env", env_id, "--steps", "12"]  # fmt: skip
    printed = _printed(command, capsys)
    (row,) = [line for line in printed.splitlines() if line.startswith("| small.zip |")]
    cells = [cell.strip() for cell in row.split("|")[1:-1]]
    assert cells[1] == "20" and 1.0 <= float(cells[3]) <= 20.0 and 1.0 <= float(cells[4]) <= 20.0
    assert "(12 plans," in printed
    # no update: after its plans the model's parameters are those it was saved with
    spec = importlib.util.spec_from_file_location("planner_weights", ROOT / "benchmarks" / "planner_weights.py")
    assert spec is not None and spec.loader is not None
    planner_weights = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(planner_weights)
    planned, stats = planner_weights.plan_statistics(str(tmp_path / "small.zip"), env_id, 12, seed=0)
    assert stats.shape == (12, 6)
    for name, tensor in planned.policy.state_dict().items():
        assert th.equal(tensor, before[name]), name
