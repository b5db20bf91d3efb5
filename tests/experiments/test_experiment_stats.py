import json
import math
import os
import pathlib
import re

import numpy as np
import pytest
from scipy import stats as scipy_stats

from sb3_maxdiff.experiments.analyse.results import run_value_at, value_at
from sb3_maxdiff.experiments.analyse.stats import (
    compare,
    compare_seeds,
    format_pvalue,
    mann_whitney_pvalue,
    nan_mean_std,
    summarize,
    welch_ttest,
)

FIXED = [
    ([1.0, 2.0, 3.0, 4.0, 5.0], [2.0, 4.0, 6.0, 8.0, 10.0, 12.0]),
    ([-56.5, -60.1, -49.8, -70.2], [-24.1, -20.3, -30.0, -22.2, -25.5]),
    ([0.1, 0.2, 0.15], [0.1, 0.2, 0.16]),
    (list(np.random.default_rng(0).normal(0, 1, 100)), list(np.random.default_rng(1).normal(0.3, 3, 40))),
]


@pytest.mark.parametrize("a, b", FIXED)
def test_welch_matches_scipy(a, b):
    ours = welch_ttest(a, b)
    reference = scipy_stats.ttest_ind(a, b, equal_var=False)
    assert ours.statistic == pytest.approx(reference.statistic, rel=1e-10)
    assert ours.pvalue == pytest.approx(reference.pvalue, rel=1e-8)
    assert ours.dof == pytest.approx(reference.df, rel=1e-10)


def test_welch_known_answer():
    """a = [0, 2], b = [3, 5]: variances 2, so t = -3 / sqrt(2) and dof = 2, where Student's t has the
    closed-form two-sided tail p = 1 - |t| / sqrt(t^2 + 2)."""
    result = welch_ttest([0.0, 2.0], [3.0, 5.0])
    t = -3 / math.sqrt(2)
    assert result.statistic == pytest.approx(t)
    assert result.dof == pytest.approx(2.0)
    assert result.pvalue == pytest.approx(1 - abs(t) / math.sqrt(t**2 + 2))


def test_welch_undefined_cases():
    assert math.isnan(welch_ttest([1.0], [2.0, 3.0]).pvalue)
    assert math.isnan(welch_ttest([1.0, 1.0], [1.0, 1.0]).pvalue)
    # one side constant, the other not: still defined
    assert welch_ttest([1.0, 1.0, 1.0], [2.0, 3.0, 4.0]).pvalue == pytest.approx(
        scipy_stats.ttest_ind([1.0, 1.0, 1.0], [2.0, 3.0, 4.0], equal_var=False).pvalue
    )


def test_compare_pools_episodes_and_averages_seeds():
    a = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.5]]
    b = [[0.0, 1.0, 0.5], [2.0, 2.5, 3.0]]
    result = compare(a, b)
    pooled = scipy_stats.ttest_ind(np.concatenate(a), np.concatenate(b), equal_var=False)
    per_seed = scipy_stats.ttest_ind([np.mean(s) for s in a], [np.mean(s) for s in b], equal_var=False)
    assert result.pooled.pvalue == pytest.approx(pooled.pvalue)
    assert result.per_seed.pvalue == pytest.approx(per_seed.pvalue)
    assert result.per_seed.pvalue > result.pooled.pvalue  # fewer samples, weaker evidence


def test_summarize_and_format():
    summary = summarize([1.0, 3.0])
    assert (summary.mean, summary.std, summary.n) == (2.0, math.sqrt(2.0), 2)  # the sample std, ddof 1
    assert math.isnan(summarize([]).mean) and math.isnan(summarize([4.0]).std) and summarize([4.0]).mean == 4.0
    assert format_pvalue(0.0004) == "<0.001"
    assert format_pvalue(0.001) == "0.001" and format_pvalue(0.00786) == "0.00786"  # at and above the threshold
    assert format_pvalue(0.01234) == "0.0123"
    assert format_pvalue(math.nan) == "n/a"


def test_compare_seeds_drops_seeds_without_a_value():
    result = compare_seeds([1.0, 2.0, math.nan, 3.0], [4.0, 6.0, 8.0])
    assert (result.a.n, result.b.n) == (3, 3) and result.a.mean == 2.0 and result.b.std == 2.0
    assert result.welch == welch_ttest([1.0, 2.0, 3.0], [4.0, 6.0, 8.0])
    assert result.mann_whitney == mann_whitney_pvalue([1.0, 2.0, 3.0], [4.0, 6.0, 8.0]) == 0.1


def test_nan_mean_std_over_seeds_of_a_curve():
    values = np.array([[1.0, 2.0, math.nan, math.nan], [3.0, math.nan, math.nan, 5.0]])
    mean, std = nan_mean_std(values)
    np.testing.assert_array_equal(mean, [2.0, 2.0, math.nan, 5.0])
    np.testing.assert_array_equal(std, [math.sqrt(2.0), math.nan, math.nan, math.nan])  # one seed: no std


def test_value_at_holds_last_finished_episode():
    steps, returns = np.array([1000, 2000, 2500]), np.array([-5.0, -9.0, -1.0])
    values = value_at(steps, returns, np.array([500, 1000, 1999, 2000, 3000]))
    assert np.isnan(values[0])
    assert list(values[1:]) == [-5.0, -5.0, -9.0, -1.0]
    running = value_at(steps, returns, np.array([2000, 3000]), running_max=True)
    assert list(running) == [-5.0, -1.0]


def test_curve_table_puts_ours_beside_the_published_training_returns():
    from sb3_maxdiff.experiments.analyse.report import curve_table
    from sb3_maxdiff.experiments.analyse.results import Run
    from sb3_maxdiff.experiments.define.presets import PRESETS
    from sb3_maxdiff.experiments.define.specs import build_specs

    specs = build_specs("point-mass-beta", "reduced", [0, 1], settings=["beta=0.01"], methods=["maxdiff"])
    steps = np.arange(1000, 10_001, 1000)
    curves = [np.full(10, -900.0), np.full(10, -900.0)]
    curves[0][3], curves[0][9] = -300.0, -500.0  # seed 0: best -300 at 4k steps, last -500
    curves[1][9] = -700.0
    runs = [Run(spec, steps, curve, {}) for spec, curve in zip(specs, curves)]
    (row,) = [line for line in curve_table(PRESETS["point-mass-beta"], runs) if line.startswith("| beta=0.01")]
    # mean of the last 5: seed 0 (4 x -900 - 500) / 5 = -820, seed 1 -860
    assert (
        row == "| beta=0.01 | MaxDiff | 10,000 | 2 | -600.0 +/- 141.4 | -500.0 +/- 282.8 | -840.0 +/- 28.3 | -560 |"
    )  # ddof 1


def test_per_seed_tests_compare_methods_on_training_returns_and_diagnostics():
    from sb3_maxdiff.experiments.analyse.report import per_seed_tests
    from sb3_maxdiff.experiments.analyse.results import Run
    from sb3_maxdiff.experiments.define.presets import PRESETS
    from sb3_maxdiff.experiments.define.specs import build_specs

    specs = build_specs("point-mass-beta", "reduced", [0, 1, 2], settings=["beta=0.01"], methods=["maxdiff", "nnmppi"])
    steps = np.arange(1000, 10_001, 1000)
    last = {"maxdiff": [-300.0, -500.0, -400.0], "nnmppi": [-900.0, -700.0, -1000.0]}
    msd = {"maxdiff": [0.5, 0.6, 0.7], "nnmppi": [1.0, 1.2, 1.1]}
    runs = []
    for spec in specs:
        curve = np.full(10, -2000.0)
        curve[-1] = last[spec.method][spec.seed]
        runs.append(Run(spec, steps, curve, {"ergodicity": {"msd_exponent": msd[spec.method][spec.seed]}}))
    lines = per_seed_tests(PRESETS["point-mass-beta"], runs)
    (raw,) = [line for line in lines if "10,000 steps, raw" in line]
    expected = scipy_stats.ttest_ind(last["maxdiff"], last["nnmppi"], equal_var=False)
    assert raw.startswith("| beta=0.01 | training return at 10,000 steps, raw | MaxDiff vs NN-MPPI |")
    assert "| -400.0 +/- 100.0 (n = 3) | -866.7 +/- 152.8 (n = 3) |" in raw  # sample std
    assert f"t = {expected.statistic:.2f}" in raw and f"p = {format_pvalue(expected.pvalue)}" in raw
    (exponent,) = [line for line in lines if "| MSD exponent |" in line]
    expected = scipy_stats.ttest_ind(msd["maxdiff"], msd["nnmppi"], equal_var=False)
    assert f"t = {expected.statistic:.2f}" in exponent and "0.60 +/- 0.10 (n = 3)" in exponent
    # the diagnostics nobody logged get no row; 20k is past the runs' end, so no row either
    assert not [line for line in lines if "coverage" in line or "20,000" in line]


def test_running_max_counts_full_length_episodes_only():
    # a first episode cut short at 118 steps scores -836, better than any full one: it must not be the best
    steps, returns = np.array([118, 1118, 2118, 3118]), np.array([-836.0, -1500.0, -1200.0, -1300.0])
    full = np.array([False, True, True, True])
    at = np.array([118, 1118, 3118])
    assert np.isnan(value_at(steps, returns, at, running_max=True, full=full)[0])
    assert list(value_at(steps, returns, at, running_max=True, full=full)[1:]) == [-1500.0, -1200.0]
    assert list(value_at(steps, returns, at, running_max=True)) == [-836.0, -836.0, -836.0]  # every episode counted
    assert list(value_at(steps, returns, at, full=full)) == [-836.0, -1500.0, -1300.0]  # raw: the last episode, any length


def test_report_reads_which_episodes_ran_their_full_length(tmp_path):
    from sb3_maxdiff.experiments.analyse.results import episode_length, load_runs
    from sb3_maxdiff.experiments.define.specs import build_specs

    spec = build_specs("point-mass-beta", "reduced", [0], settings=["beta=0.001"], methods=["nnmppi"])[0]
    assert episode_length(spec) == 1000 and episode_length(build_specs("point-mass-beta", "smoke", [0])[0]) == 100
    run_dir = tmp_path / spec.relpath
    run_dir.mkdir(parents=True)
    (run_dir / "result.json").write_text(json.dumps({"spec": spec.to_json()}))
    lines = [f"#{json.dumps({'t_start': 0.0, 'env_id': spec.env_id})}", "r,l,t"]
    lines += [f"{r},{length},0.0" for r, length in ((-836.0, 118), (-1500.0, 1000), (-1200.0, 1000))]
    (run_dir / "monitor.csv").write_text("\n".join(lines) + "\n")
    (run,) = load_runs(str(tmp_path))[("point-mass-beta", "reduced")]
    assert list(run.curve_full) == [False, True, True]
    assert list(run_value_at(run, np.array([1118, 2118]), running_max=True)) == [-1500.0, -1200.0]


def test_episode_ends_after_a_resume_count_the_unfinished_episode():
    from sb3_maxdiff.experiments.analyse.results import episode_ends

    lengths = [203, 1000, 332, 1000, 1000, 1000, 1000, 1000]
    assert list(episode_ends(lengths, [])) == [203, 1203, 1535, 2535, 3535, 4535, 5535, 6535]
    # stopped at step 5000 in the middle of the seventh episode: the next one starts at 5000
    resumed = [{"episodes": 6, "agent_timesteps": 5000}]
    assert list(episode_ends(lengths, resumed)) == [203, 1203, 1535, 2535, 3535, 4535, 6000, 7000]
    # and again at 6500, after one more episode
    resumed.append({"episodes": 7, "agent_timesteps": 6500})
    assert list(episode_ends(lengths, resumed)) == [203, 1203, 1535, 2535, 3535, 4535, 6000, 7500]
    # a checkpoint written as an episode ended leaves nothing out
    assert list(episode_ends(lengths, [{"episodes": 2, "agent_timesteps": 1203}])) == list(episode_ends(lengths, []))


def test_a_resumed_run_exports_its_episodes_at_their_steps_with_their_diagnostics(tmp_path):
    """The episodes after a resume keep their lengths, end at the agent steps the diagnostics were written at."""
    from sb3_maxdiff.experiments.analyse.episodes import run_episode_rows
    from sb3_maxdiff.experiments.analyse.results import load_runs
    from sb3_maxdiff.experiments.define.specs import build_specs, read_resumes
    from sb3_maxdiff.experiments.run.checkpoints import record_resume

    spec = build_specs("point-mass-beta", "reduced", [0], settings=["beta=0.001"], methods=["maxdiff"])[0]
    run_dir = tmp_path / spec.relpath
    run_dir.mkdir(parents=True)
    (run_dir / "result.json").write_text(json.dumps({"spec": spec.to_json()}))
    lengths = [203, 1000, 332, 1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000]
    lines = [f"#{json.dumps({'t_start': 0.0, 'env_id': spec.env_id})}", "r,l,t"]
    lines += [f"{-1000.0 - index},{length},0.0" for index, length in enumerate(lengths)]
    (run_dir / "monitor.csv").write_text("\n".join(lines) + "\n")
    true_ends = [203, 1203, 1535, 2535, 3535, 4535, 6000, 7000, 8000, 9000, 10000]
    rows = ["timesteps,msd_exponent,autocorr_time,episode_coverage,coverage"]
    rows += [f"{end}.0,{0.5 + index / 100},{10 + index},0.01,{0.05 + index / 1000}" for index, end in enumerate(true_ends)]
    (run_dir / "ergodicity.csv").write_text("\n".join(rows) + "\n")
    record_resume(str(run_dir), 7, 6000)  # a first try, stopped later, then resumed from an earlier checkpoint
    record_resume(str(run_dir), 6, 5000)
    assert read_resumes(str(run_dir)) == [{"episodes": 6, "agent_timesteps": 5000, "exact": False}]

    (run,) = load_runs(str(tmp_path))[("point-mass-beta", "reduced")]
    assert list(run.curve_steps) == true_ends and list(run.curve_lengths) == lengths
    assert list(run_value_at(run, np.array([9999, 10_000]))) == [-1009.0, -1010.0]
    exported = run_episode_rows(str(tmp_path), run)
    assert [row["steps"] for row in exported] == true_ends and [row["length"] for row in exported] == lengths
    assert [row["msd_exponent"] for row in exported] == [str(0.5 + index / 100) for index in range(11)]


def test_tabulate_reads_a_resumed_runs_episode_ends_from_its_exported_steps(tmp_path):
    """
    A run stopped at 5,000 steps in its seventh episode and resumed: the episodes ending at 6,000 and 7,000 are read
    there (their lengths would sum to 5,535 and 6,535, one episode early).
    """
    from sb3_maxdiff.experiments.analyse.tables import per_seed_values

    lengths = [203, 1000, 332, 1000, 1000, 1000, 1000, 1000]
    ends = [203, 1203, 1535, 2535, 3535, 4535, 6000, 7000]
    rows = ["method,seed,episode,steps,return,length,full_length,kind"]
    rows += [f"a,0,{index},{end},{-100.0 - index},{length},1,train" for index, (end, length) in enumerate(zip(ends, lengths))]
    path = tmp_path / "episodes.csv"
    path.write_text("\n".join(rows) + "\n")
    values = per_seed_values(str(path), [5999, 6000, 6600, 7000])
    assert [values[f"last episode at {at:,}"]["a"][0] for at in (5999, 6000, 6600, 7000)] == [-105.0, -106.0, -106.0, -107.0]


def test_tabulate_reads_the_evaluation_of_the_planner_and_of_the_actor_alone(tmp_path):
    """A run with an actor-critic exports its actor's evaluation episodes apart (kind "actor eval")."""
    from sb3_maxdiff.experiments.analyse.tables import per_seed_values, tabulate

    rows = ["method,seed,episode,steps,return,length,full_length,kind", "a,0,0,1000,-5,1000,1,train"]
    rows += ["a,0,0,,10,1000,1,eval", "a,0,1,,20,1000,1,eval", "a,0,0,,-3,1000,1,actor eval", "a,0,1,,-1,1000,1,actor eval"]
    rows += ["b,0,0,1000,-7,1000,1,train", "b,0,0,,4,1000,1,eval"]
    path = tmp_path / "episodes.csv"
    path.write_text("\n".join(rows) + "\n")
    values = per_seed_values(str(path), [1000])
    assert values["final evaluation (mean per seed)"] == {"a": {0: 15.0}, "b": {0: 4.0}}
    assert values["actor evaluation (mean per seed)"] == {"a": {0: -2.0}}
    assert "### actor evaluation (mean per seed)" in "\n".join(tabulate(str(path), [1000]))


def test_mann_whitney_exact_two_sided():
    # U = 0 with 3 against 3: two of the 20 equally likely rank splits are as extreme, p = 0.1
    assert mann_whitney_pvalue([1.0, 2.0, 3.0], [4.0, 5.0, 6.0]) == pytest.approx(0.1)
    assert mann_whitney_pvalue([1.0, 5.0, 3.0], [4.0, 2.0, 6.0]) == pytest.approx(0.7)
    assert math.isnan(mann_whitney_pvalue([], [1.0])) and math.isnan(mann_whitney_pvalue([2.0], [2.0]))


def test_tabulate_reads_episode_ends_when_lengths_are_missing(tmp_path):
    from sb3_maxdiff.experiments.analyse.tables import per_seed_values, tabulate

    path = tmp_path / "authors.csv"
    # seed 1's first episode is cut short at 150 steps: the best return, but not a full-length one
    rows = ["method,seed,episode,steps,return", "a,1,0,150,-100", "a,1,1,1150,-900", "a,1,2,2150,-700"]
    rows += ["b,1,0,1000,-800", "b,1,1,2000,-850", "a,2,0,1000,-500", "a,2,1,2000,-600", "b,2,0,1000,-300"]
    path.write_text("\n".join(rows) + "\n")
    values = per_seed_values(str(path), [1150, 2150])
    assert values["running max at 1,150"]["a"] == {1: -900.0, 2: -500.0}
    assert values["running max at 2,150"]["a"] == {1: -700.0, 2: -500.0}
    assert values["last episode at 2,150"]["b"] == {1: -850.0, 2: -300.0}
    text = "\n".join(tabulate(str(path), [2150]))
    assert "| 1 | -700 | -850 |" in text and "-600 +/- 141 (n = 2)" in text
    assert "a vs b: Welch p = " in text and "Mann-Whitney p = " in text


def test_tabulate_counts_the_episodes_export_marked_full_length(tmp_path):
    from sb3_maxdiff.experiments.analyse.tables import per_seed_values

    path = tmp_path / "episodes.csv"
    # episodes of 200 steps that export marked as full-length (an environment whose episodes are 200 steps long)
    rows = ["method,seed,episode,steps,return,length,full_length,kind", "a,0,0,200,-50,200,1,train"]
    rows += ["a,0,1,300,-10,100,0,train", "a,0,2,500,-90,200,1,train"]
    path.write_text("\n".join(rows) + "\n")
    assert per_seed_values(str(path), [500])["running max at 500"]["a"] == {0: -50.0}  # the mark, not 1000 steps
    assert per_seed_values(str(path), [500], full_length=100)["running max at 500"]["a"] == {0: -10.0}  # asked for
    path.write_text("\n".join(row.rsplit(",", 2)[0] + "," + row.rsplit(",", 1)[1] for row in rows) + "\n")  # no mark
    assert math.isnan(per_seed_values(str(path), [500])["running max at 500"]["a"][0])  # none reaches 1000 steps


def test_tabulate_names_the_columns_a_foreign_file_lacks(tmp_path):
    from sb3_maxdiff.experiments.analyse.tables import tabulate

    path = tmp_path / "other.csv"
    path.write_text("variant,seed,episode,return\nx,0,0,-5\n")
    with pytest.raises(ValueError, match=r"lacks the column\(s\) \['method'\].*its columns are \['variant'"):
        tabulate(str(path), [1000])


def test_tabulate_compares_a_method_across_settings_of_several_files(tmp_path, capsys):
    from sb3_maxdiff.experiments.analyse.tables import per_seed_values
    from sb3_maxdiff.experiments.commands.episode_commands import tabulate_main

    rows = {
        "sweep.csv": ["setting,method,seed,episode,steps,return,length,kind", "alpha=1,maxdiff,0,0,1000,-5,1000,train",
                      "alpha=10,maxdiff,0,0,1000,7,1000,train", "alpha=10,maxdiff,0,0,1000,8,1000,eval"],
        "heavy.csv": ["setting,method,seed,episode,steps,return,length,kind", "heavy,maxdiff,0,0,1000,9,1000,train",
                      "heavy,nnmppi,0,0,1000,2,1000,train"],
    }  # fmt: skip
    for name, lines in rows.items():
        (tmp_path / name).write_text("\n".join(lines) + "\n")
    paths = [str(tmp_path / name) for name in rows]
    values = per_seed_values(paths, [1000], by_setting=True)["last episode at 1,000"]
    assert values == {"maxdiff@alpha=1": {0: -5.0}, "maxdiff@alpha=10": {0: 7.0}, "maxdiff@heavy": {0: 9.0},
                      "nnmppi@heavy": {0: 2.0}}  # fmt: skip
    assert tabulate_main([*paths, "--steps", "1000", "--by-setting"]) == 0
    assert "| seed | MaxDiff, alpha=1 | MaxDiff, alpha=10 | MaxDiff, heavy | NN-MPPI, heavy |" in capsys.readouterr().out
    # grouped by method alone, seed 0 of MaxDiff would mix three runs: refused, in one file as across two
    with pytest.raises(SystemExit):
        tabulate_main([*paths, "--steps", "1000"])
    assert "sweep.csv holds seed 0 of MaxDiff in two settings (alpha=1, alpha=10)" in capsys.readouterr().err
    (tmp_path / "light.csv").write_text(
        "setting,method,seed,episode,steps,return,length,kind\nlight,maxdiff,0,0,1000,3,1000,train\n"
    )
    with pytest.raises(SystemExit):
        tabulate_main([str(tmp_path / "heavy.csv"), str(tmp_path / "light.csv"), "--steps", "1000"])
    assert "seed 0 of MaxDiff is in both" in capsys.readouterr().err
    (tmp_path / "plain.csv").write_text("method,seed,steps,return\nmaxdiff,0,1000,1\n")
    with pytest.raises(ValueError, match="no setting column"):
        per_seed_values(str(tmp_path / "plain.csv"), [1000], by_setting=True)
    # a file given twice, however spelled, would count its runs twice even grouped by setting
    again = os.path.join(str(tmp_path), ".", "heavy.csv")
    with pytest.raises(ValueError, match=r"heavy.csv given more than once"):
        per_seed_values([*paths, again], [1000], by_setting=True)


def test_window_mean_averages_the_last_episodes_finished_by_the_step(tmp_path, capsys):
    from sb3_maxdiff.experiments.analyse.results import window_mean
    from sb3_maxdiff.experiments.analyse.tables import per_seed_values
    from sb3_maxdiff.experiments.commands.episode_commands import tabulate_main

    ends, returns = np.array([1000, 2000, 3000, 4000]), np.array([10.0, 20.0, 30.0, 70.0])
    assert window_mean(ends, returns, 3999, 2) == 25.0  # episodes ending at 2000 and 3000; 4000 not yet finished
    assert window_mean(ends, returns, 4000, 2) == 50.0
    assert window_mean(ends, returns, 2000, 5) == 15.0  # fewer than the window have finished
    assert math.isnan(window_mean(ends, returns, 999, 5))
    path = tmp_path / "runs.csv"
    path.write_text(
        "method,seed,episode,steps,return\n" + "".join(f"a,0,{i},{e},{r}\n" for i, (e, r) in enumerate(zip(ends, returns)))
    )
    values = per_seed_values(str(path), [4000], window=3)
    assert values["mean of the last 3 episodes at 4,000"]["a"] == {0: 40.0}
    assert "mean of the last 3 episodes at 4,000" not in per_seed_values(str(path), [4000])
    with pytest.raises(SystemExit):
        tabulate_main([str(path), "--steps", "4000", "--window", "0"])
    assert "window must be a positive number of episodes, got 0" in capsys.readouterr().err


def test_tabulate_reads_the_files_of_transfer_by_environment(tmp_path, capsys):
    from sb3_maxdiff.experiments.analyse.tables import per_seed_values
    from sb3_maxdiff.experiments.commands.episode_commands import tabulate_main
    from sb3_maxdiff.experiments.run.transfer import TransferResult, append_transfer_csv

    path = str(tmp_path / "transfer.csv")
    for algo, seed, returns in [("maxdiff", 0, [10.0, 30.0]), ("maxdiff", 1, [40.0]), ("nnmppi", 0, [5.0, 7.0])]:
        append_transfer_csv(path, f"{algo}_{seed}.zip", algo, "Light-v0", seed, TransferResult(0.0, 0.0, returns))
    append_transfer_csv(path, "maxdiff_0.zip", "maxdiff", "Heavy-v0", 0, TransferResult(0.0, 0.0, [-3.0]))
    values = per_seed_values(path, [])
    assert values["evaluation on Light-v0 (mean per seed)"] == {"maxdiff": {0: 20.0, 1: 40.0}, "nnmppi": {0: 6.0}}
    assert values["evaluation on Heavy-v0 (mean per seed)"] == {"maxdiff": {0: -3.0}}
    assert tabulate_main([path]) == 0
    assert "| 1 | 40 | nan |" in capsys.readouterr().out
    append_transfer_csv(path, "another.zip", "nnmppi", "Light-v0", 0, TransferResult(0.0, 0.0, [1.0]))
    with pytest.raises(ValueError, match=re.escape("two models for NN-MPPI seed 0 on Light-v0: nnmppi_0.zip and another.zip")):
        per_seed_values(path, [])


def test_tabulate_reads_single_shot_windows_at_the_step_counts(tmp_path):
    from sb3_maxdiff.experiments.analyse.episodes import WINDOW_COLUMNS
    from sb3_maxdiff.experiments.analyse.tables import per_seed_values, tabulate

    path = tmp_path / "windows.csv"
    rows = [",".join(WINDOW_COLUMNS)]
    rows += [
        "swimmer,maxdiff,0,1,1000,5.0,2.0,1.5",
        "swimmer,maxdiff,0,2,2000,7.5,4.0,3.5",
        "swimmer,maxdiff,0,3,3000,9.0,6.5,6.0",
    ]
    rows += ["swimmer,maxdiff,1,1,1000,1.0,0.0,-0.5", "swimmer,maxdiff,1,2,2000,2.0,1.0,0.5"]
    rows += ["swimmer,nnmppi,0,1,1000,0.5,0.7,0.2", "swimmer,nnmppi,0,2,2000,-1.0,0.2,-0.3"]
    path.write_text("\n".join(rows) + "\n")
    values = per_seed_values(str(path), [999, 2000, 2500, 3000])
    assert values["window return at 2,000"] == {"maxdiff": {0: 7.5, 1: 2.0}, "nnmppi": {0: -1.0}}
    assert values["return so far at 2,000"] == {"maxdiff": {0: 12.5, 1: 3.0}, "nnmppi": {0: -0.5}}  # windows summed
    assert values["return so far at 2,500"]["maxdiff"][0] == 12.5 and values["return so far at 3,000"]["maxdiff"][0] == 21.5
    assert values["x distance at 2,500"] == {"maxdiff": {0: 3.5, 1: 0.5}, "nnmppi": {0: -0.3}}  # the window ended by then
    assert values["x distance at 3,000"]["maxdiff"] == {0: 6.0, 1: 0.5}
    assert math.isnan(values["window return at 999"]["maxdiff"][0])  # no window has ended yet
    text = "\n".join(tabulate(str(path), [3000]))
    assert "### x distance at 3,000" in text and "| 1 | 0.5 | nan |" in text and "3.25 +/- 3.89 (n = 2)" in text
    assert "| mean +/- std | 3.25 +/- 3.89 (n = 2) | -0.3 (n = 1) |" in text  # one seed: no spread, no nan


def _fake_finished_run(root, seed: int, first_return: float, lengths=(1000, 1000), eval_returns=None) -> None:
    """
    A finished point-mass run of ``seed`` under ``root`` (episodes of 1000 steps in full): its spec, training episodes
    of ``lengths`` steps (returns ``first_return``, ``first_return + 1``, ...) and ``eval_returns`` by environment.
    """
    from sb3_maxdiff.experiments.define.specs import build_specs

    spec = build_specs("point-mass-beta", "reduced", [seed], settings=["beta=0.001"], methods=["maxdiff"])[0]
    run_dir = root / spec.relpath
    run_dir.mkdir(parents=True)
    result = {"spec": spec.to_json(), **({"eval_returns": eval_returns} if eval_returns else {})}
    (run_dir / "result.json").write_text(json.dumps(result))
    lines = [f"#{json.dumps({'t_start': 0.0, 'env_id': spec.env_id})}", "r,l,t"]
    lines += [f"{first_return + index},{length},0.0" for index, length in enumerate(lengths)]
    (run_dir / "monitor.csv").write_text("\n".join(lines) + "\n")


def test_export_merge_keeps_the_rows_of_runs_the_folder_no_longer_holds(tmp_path, capsys):
    """
    ``--merge``: the rows already in the file of runs the results folder lacks stay as they were (a folder lost after
    they were exported); the runs the folder holds replace theirs; without it the file holds the folder's runs alone.
    """
    import csv

    from sb3_maxdiff.experiments.__main__ import main as experiments_main

    lost, kept, out = tmp_path / "lost", tmp_path / "kept", str(tmp_path / "episodes.csv")
    for seed, first_return in ((0, -100.0), (1, -200.0)):
        _fake_finished_run(lost, seed, first_return)
    for seed, first_return in ((1, -300.0), (2, -400.0)):
        _fake_finished_run(kept, seed, first_return)

    def returns_by_seed() -> dict[int, list[float]]:
        found: dict[int, list[float]] = {}
        with open(out) as file:
            for row in csv.DictReader(file):
                found.setdefault(int(row["seed"]), []).append(float(row["return"]))
        return found

    assert experiments_main(["export", str(lost), "--out", out]) == 0
    assert returns_by_seed() == {0: [-100.0, -99.0], 1: [-200.0, -199.0]}
    assert experiments_main(["export", str(kept), "--out", out, "--merge"]) == 0
    assert "6 rows written" in capsys.readouterr().out
    assert returns_by_seed() == {0: [-100.0, -99.0], 1: [-300.0, -299.0], 2: [-400.0, -399.0]}
    # the folder lost comes back: its runs replace theirs, and the rows of the one it lacks move to their place in order
    assert experiments_main(["export", str(lost), "--out", out, "--merge"]) == 0
    assert returns_by_seed() == {0: [-100.0, -99.0], 1: [-200.0, -199.0], 2: [-400.0, -399.0]}
    with open(out) as file:
        assert [int(row["seed"]) for row in csv.DictReader(file)] == [0, 0, 1, 1, 2, 2]
    capsys.readouterr()
    assert experiments_main(["export", str(kept), "--out", out]) == 0
    assert returns_by_seed() == {1: [-300.0, -299.0], 2: [-400.0, -399.0]}
    # a file of other columns (single-shot windows, a foreign table) is neither merged into nor overwritten
    foreign = "setting,method,seed,window\nbeta=0.001,maxdiff,0,1\n"
    with open(out, "w") as file:
        file.write(foreign)
    with pytest.raises(SystemExit):
        experiments_main(["export", str(kept), "--out", out, "--merge"])
    error = capsys.readouterr().err
    assert "--merge needs" in error and "it has ['setting', 'method', 'seed', 'window']" in error
    with open(out) as file:
        assert file.read() == foreign


def test_export_marks_full_length_episodes_and_each_environments_evaluations(tmp_path):
    """An episode of the environment's full length is marked full (one step short is not); the evaluations on the
    run's own environment are ``eval``, those on another (a transfer) ``eval <env id>``."""
    import csv

    from sb3_maxdiff.experiments.analyse.episodes import export_episodes

    own = "sb3_maxdiff/PointMassUnbounded-beta0_001-v0"
    _fake_finished_run(
        tmp_path / "runs", 0, -5.0, lengths=(1000, 999, 1000), eval_returns={own: [1.0, 2.0], "Other-v0": [3.0]}
    )
    out = str(tmp_path / "episodes.csv")
    assert export_episodes(str(tmp_path / "runs"), out) == 6
    with open(out) as file:
        rows = [(row["kind"], row["return"], row["full_length"]) for row in csv.DictReader(file)]
    assert rows == [("train", "-5.0", "1"), ("train", "-4.0", "0"), ("train", "-3.0", "1"), ("eval", "1.0", ""),
                    ("eval", "2.0", ""), ("eval Other-v0", "3.0", "")]  # fmt: skip


def test_kept_final_models_are_rewritten_only_where_they_hold_another_model(tmp_path):
    """Exported again, a kept file that holds its run's model stays as it is (the bytes and the time it was written);
    one that holds another model is replaced by its run's."""
    from sb3_maxdiff import NNMPPI
    from sb3_maxdiff.experiments.analyse.episodes import keep_final_models
    from sb3_maxdiff.experiments.analyse.results import Run
    from sb3_maxdiff.experiments.define.specs import MODEL_FILE, build_specs

    specs = build_specs("point-mass-beta", "smoke", [0, 1], settings=["beta=1"], methods=["nnmppi"])
    runs = []
    for spec in specs:
        (tmp_path / spec.relpath).mkdir(parents=True)
        NNMPPI(spec.env_id, seed=spec.seed, horizon=2, n_samples=8).save(tmp_path / spec.relpath / MODEL_FILE)
        runs.append(Run(spec, np.array([]), np.array([]), {}))
    prefix = str(tmp_path / "point_mass")
    paths = keep_final_models(str(tmp_path), runs, prefix)
    assert paths == [prefix + "_nnmppi_seed0.zip", prefix + "_nnmppi_seed1.zip"]
    kept, other = map(pathlib.Path, paths)
    before, written_at = kept.read_bytes(), kept.stat().st_mtime_ns
    other.write_bytes(before)  # seed 0's model where seed 1's belongs
    assert keep_final_models(str(tmp_path), runs, prefix) == paths
    assert kept.read_bytes() == before and kept.stat().st_mtime_ns == written_at
    assert other.read_bytes() != before
    assert sorted(os.listdir(tmp_path)) == ["point-mass-beta", "point_mass_nnmppi_seed0.zip", "point_mass_nnmppi_seed1.zip"]
