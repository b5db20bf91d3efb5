import importlib.util
import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest
from helpers import SUBPROCESS_TIMEOUT, registered_episodes_of, run_script

from sb3_maxdiff import synthesis
from sb3_maxdiff.envs import ANT, HALF_CHEETAH, SWIMMER_HEAVY, SWIMMER_LIGHT, point_mass_id
from sb3_maxdiff.experiments.define.presets import PRESETS, cell_kwargs, get_budget, published_kwargs

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_demo_runs_with_a_tiny_budget(tmp_path, capsys):
    steps = 120  # fewer than an episode's 1000: the episodes that end are those that left the box
    run_script(ROOT / "examples" / "demo_point_mass.py", ["--steps", str(steps), "--samples", "50", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert (tmp_path / "point_mass_paths_and_returns.png").stat().st_size > 10_000
    results = json.loads((tmp_path / "returns.json").read_text())
    for method in ("MaxDiff", "NN-MPPI"):
        result = results[method]
        assert sum(len(path) for path in result["paths"]) == steps  # one (x, y) point per step
        assert len(result["paths"]) in (len(result["returns"]), len(result["returns"]) + 1)
        assert len(result["steps"]) == len(result["returns"])
        # the diagnostics are those of the finished episodes, one each
        assert len(result["msd_exponent"]) == len(result["autocorr_time"]) == len(result["returns"])
        if result["returns"]:
            assert 0.0 < result["coverage"] <= 1.0 and "coverage of the +/-5 box" in out
        else:
            assert result["coverage"] == 0.0 and "no finished episode" in out


def test_demo_refuses_a_planner_without_samples(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        run_script(ROOT / "examples" / "demo_point_mass.py", ["--samples", "0", "--out", str(tmp_path)])
    assert exit_info.value.code == 2
    assert "--samples must be a positive number of planner samples, got 0" in capsys.readouterr().err


@pytest.mark.expensive
def test_quickstart(tmp_path):
    subprocess.run(
        [sys.executable, str(ROOT / "examples" / "quickstart.py")], check=True, cwd=tmp_path, timeout=SUBPROCESS_TIMEOUT
    )
    assert (tmp_path / "maxdiff_point_mass.zip").exists()


def test_swimmer_demo_runs_the_kept_agents_tests_the_runs_and_trains(tmp_path, capsys):
    """
    The kept swimmers (seed 0 of run 1, seeds 0-4 of run 2, per method) load and plan, the three 5-seed runs and
    runs 2 and 3 together are tested from their CSVs, a MaxDiff agent trains live on the point mass; the figure and
    summary are written.
    """
    options = ["--replay", "--steps", "2", "--frames", "2", "--jobs", "1", "--no-render", "--train-steps", "10"]
    options += ["--out", str(tmp_path)]
    run_script(ROOT / "examples" / "demo_swimmer.py", options)
    printed = capsys.readouterr().out
    assert (tmp_path / "swimmer_paths_and_curves.png").stat().st_size > 10_000
    summary = json.loads((tmp_path / "swimmer_returns.json").read_text())
    assert set(summary) == {"MaxDiff", "NN-MPPI", "live", "tests"}
    for name in ("MaxDiff", "NN-MPPI"):
        kept = [(values["run"], values["seed"]) for values in summary[name]]
        assert kept == [("run 1", 0)] + [("run 2", seed) for seed in range(5)]
        assert all(abs(values["x_travelled"]) < 1.0 and values["return"] == values["return"] for values in summary[name])
    # the live training: the point mass with beta = 0.01; no 1000-step episode finished in 10 steps
    assert summary["live"] == {"env": "sb3_maxdiff/PointMassUnbounded-beta0_01-v0", "steps": 10, "returns": []}
    assert "MaxDiff trained here on the point mass (beta = 0.01) for 10 steps: episode returns none finished" in printed
    assert list(summary["tests"]) == [
        "run 1 (CPU, 2026-11-25)",
        "run 2 (GPU, 2026-11-27)",
        "run 3 (CPU, 2026-11-28)",
        "runs 2 and 3 (seeds 0-9)",
    ]
    # run 1: every MaxDiff seed above every NN-MPPI seed on both quantities, 5 against 5; runs 2 and 3: four of five;
    # runs 2 and 3 together: 10 against 10, seeds 0-9 once each
    expected = [(5, 0.0079, 0.0079), (5, 0.1508, 0.1508), (5, 0.0952, 0.0952), (10, 0.0173, 0.0211)]
    for test, (seeds, p_training, p_evaluation) in zip(summary["tests"].values(), expected):
        training, evaluation = test.values()
        assert all(len(found["MaxDiff"]) == len(found["NN-MPPI"]) == seeds for found in (training, evaluation))
        assert (round(training["p"], 4), round(evaluation["p"], 4)) == (p_training, p_evaluation)
    assert (
        "run 1 (CPU, 2026-11-25), training return at 50,000, 5 seeds each: MaxDiff 102.7 +/- 29.7 vs NN-MPPI 25.9" in printed
    )
    assert "run 2 (GPU, 2026-11-27), training return at 50,000, 5 seeds each: MaxDiff 76.0 +/- 43.7 vs NN-MPPI 27.2" in printed
    assert "run 3 (CPU, 2026-11-28), training return at 50,000, 5 seeds each: MaxDiff 62.2 +/- 35.1 vs NN-MPPI 19.4" in printed
    assert (
        "runs 2 and 3 (seeds 0-9), final evaluation, 10 seeds each: MaxDiff 76.9 +/- 34.0 vs NN-MPPI 26.7 +/- 6.9, "
        "Mann-Whitney p = 0.021" in printed
    )


def test_swimmer_demo_by_default_shows_the_recorded_episodes(tmp_path, capsys):
    """The README's first command: nothing trained or planned, the kept agents' recorded episodes, each line labelled."""
    run_script(ROOT / "examples" / "demo_swimmer.py", ["--no-render", "--out", str(tmp_path)])
    printed = capsys.readouterr().out
    summary = json.loads((tmp_path / "swimmer_returns.json").read_text())
    assert set(summary) == {"MaxDiff", "NN-MPPI", "tests"} and (tmp_path / "swimmer_paths_and_curves.png").exists()
    for name in ("MaxDiff", "NN-MPPI"):
        kept = [(values["run"], values["seed"]) for values in summary[name]]
        assert kept == [("run 1", 0)] + [("run 2", seed) for seed in range(5)]
    lines = [line for line in printed.splitlines() if "(kept, 50k steps" in line]
    assert len(lines) == 12 and all("recorded episode" in line for line in lines)
    # the swimmers that learned travel metres in their 1,000-step episode; the recording holds whole episodes
    assert max(values["x_travelled"] for values in summary["MaxDiff"]) > 2.0


def test_the_swimmer_demo_refuses_to_pool_runs_that_share_a_seed(monkeypatch, tmp_path):
    """Pooling two files that hold the same seed would mix two runs: the demo's test names the seed and both files."""
    monkeypatch.setattr(os, "environ", dict(os.environ))  # the demo picks MuJoCo's renderer on import
    spec = importlib.util.spec_from_file_location("demo_swimmer", ROOT / "examples" / "demo_swimmer.py")
    assert spec is not None and spec.loader is not None
    demo_swimmer = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(demo_swimmer)
    path = demo_swimmer.RUNS[demo_swimmer.RUN_2][0]
    copy = shutil.copy(path, tmp_path / "same_seeds.csv")
    with pytest.raises(ValueError, match=r"seed 0 of MaxDiff is in both .*retrain_50k.csv and .*same_seeds.csv"):
        demo_swimmer.test_from_csv(path, str(copy))
    pooled = demo_swimmer.test_from_csv(path, demo_swimmer.RUNS[demo_swimmer.RUN_3][0])
    assert [len(pooled["final evaluation"][name]) for name in ("MaxDiff", "NN-MPPI")] == [10, 10]


def test_kept_swimmer_agents_are_the_runs_final_models():
    """Each kept agent is a 50k-step model of the heavy-tail runs, saved without Adam's moments (small files)."""
    from sb3_maxdiff import NNMPPI, MaxDiffMPPI

    kept = ROOT / "docs" / "reproduction" / "models"
    for name, algo in (("maxdiff", MaxDiffMPPI), ("nnmppi", NNMPPI)):
        paths = [ROOT / "examples" / "models" / f"swimmer_heavy_{name}_seed0.zip"]
        paths += [kept / f"swimmer_heavy_retrain_50k_{name}_seed{seed}.zip" for seed in range(5)]
        for path in paths:
            assert path.stat().st_size < 1_000_000
            model = algo.load(path, device="cpu")
            assert model.num_timesteps == 50_000 and not model.policy.optimizer.state
            assert model.observation_space.shape == (10,)


def test_synthesis_example_runs_with_a_tiny_budget(tmp_path, capsys):
    """The trajectory-synthesis examples (known dynamics, no learning): the figure and the alpha table."""
    run_script(ROOT / "examples" / "synthesis.py", ["--steps", "10", "--out", str(tmp_path)])
    printed = capsys.readouterr().out
    assert (tmp_path / "synthesis_examples.png").stat().st_size > 10_000
    rows = [line for line in printed.splitlines() if line.startswith(("| 0 |", "| 1 |", "| 10 |", "| 100 |"))]
    assert len(rows) == 4


def test_alpha_sweep_figure_reads_the_committed_runs(tmp_path, capsys):
    """The sweep figure from the CSVs and kept models: every series present, the means those of REPRODUCTION.md."""
    run_script(ROOT / "examples" / "alpha_sweep_figure.py", ["--out", str(tmp_path)])
    printed = capsys.readouterr().out
    assert (tmp_path / "alpha_sweep_heavy_swimmer.png").stat().st_size > 10_000
    assert "final evaluation, mean per alpha: 1: 35.3, 10: 42.0, 100: 92.3, 1000: -61.7; NN-MPPI 21.4" in printed
    assert "auto (settled alpha: value) 51: 58.7, 51: 99.1, 56: 16.8, 68: 99.6, 96: 29.4" in printed


def test_paper_envs_example_builds_every_environment(capsys):
    run_script(ROOT / "examples" / "paper_envs.py", [])
    rows = [line.split()[0] for line in capsys.readouterr().out.splitlines() if "200 random steps" in line]
    assert rows == [point_mass_id("0.01"), SWIMMER_HEAVY, SWIMMER_LIGHT, ANT, HALF_CHEETAH]


def test_single_shot_example_plans_with_the_single_shot_presets_settings(tmp_path, capsys):
    """The light-tail Swimmer, never reset, with the settings of the runner's single-shot MaxDiff cell."""
    csv = tmp_path / "windows.csv"
    ended = run_script(ROOT / "examples" / "single_shot_swimmer.py", ["--steps", "40", "--samples", "8", "--csv", str(csv)])
    cell = PRESETS["single-shot"].cell("swimmer", "maxdiff")
    assert {**ended["settings"], "n_samples": 1000} == cell_kwargs(cell, get_budget("paper"))
    model = ended["model"]
    assert model.num_timesteps == 40 and model.policy.planner.settings.n_samples == 8
    assert model.env.envs[0].spec.id == cell.env_id == SWIMMER_LIGHT and model.env.envs[0].spec.max_episode_steps is None
    assert (
        csv.read_text().startswith("window,timesteps,window_return") and "final distance along x:" in capsys.readouterr().out
    )


def test_transfer_example_trains_on_the_heavy_tail_and_evaluates_on_both(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    with registered_episodes_of(50, SWIMMER_HEAVY, SWIMMER_LIGHT):  # evaluated on 50-step episodes
        ended = run_script(ROOT / "examples" / "transfer_swimmer.py", ["--steps", "20", "--episodes", "1", "--samples", "4"])
    assert ended["settings"] == published_kwargs("maxdiff", SWIMMER_HEAVY) and ended["model"].num_timesteps == 20
    printed = capsys.readouterr().out
    for env_id in (SWIMMER_HEAVY, SWIMMER_LIGHT):
        assert f"trained on heavy, evaluated on {env_id}: " in printed
    assert (tmp_path / "swimmer_heavy.zip").exists()


@pytest.mark.slow
def test_synthesis_history_example_prints_its_three_tables(monkeypatch, capsys):
    # the example's planner with 5 steps and 20 samples (its own 20 and 200 are not what this test checks)
    controller = synthesis.MPPIController
    monkeypatch.setattr(
        synthesis, "MPPIController", lambda *args, **kwargs: controller(*args, **{**kwargs, "horizon": 5, "n_samples": 20})
    )
    # 410 steps: the long lags reach 400; 2 seeds: a standard deviation over seeds
    run_script(ROOT / "examples" / "synthesis_history.py", ["--steps", "410", "--seeds", "2", "--histories", "20",
                                                            "--alphas", "10"])  # fmt: skip
    printed = capsys.readouterr().out
    assert "nan" not in printed
    for title in ("Free single integrator", "Quadratic potential", "Bimodal potential"):
        assert title in printed
    assert len([line for line in printed.splitlines() if line.startswith("| 20 |")]) == 1  # the free integrator's row


def test_every_example_is_run_by_a_test():
    """An example no test runs breaks unseen when the API moves: each one is named by a test of this file or the README's."""
    tests = "".join((ROOT / "tests" / "tooling" / name).read_text() for name in ("test_examples.py", "test_readme.py"))
    untested = [path.name for path in sorted((ROOT / "examples").glob("*.py")) if f'"{path.name}"' not in tests
                and f"examples/{path.name}" not in tests]  # fmt: skip
    assert not untested, f"examples no test runs: {untested}"
