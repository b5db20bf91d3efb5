"""
Summarise the finished runs under a results folder: for every (preset, budget) a ``REPORT.md`` (mean
+/- std per method and setting, Welch's t-tests on pooled episodes and on per-seed means, the published
numbers beside ours) and paper-style figures (learning curves with mean +/- std across seeds, bar
charts of the final evaluation), written next to the runs.

    python -m sb3_maxdiff.experiments report results
"""

import argparse
import itertools
import math
import os
from collections import defaultdict
from typing import Any

import numpy as np

from sb3_maxdiff.experiments.analyse.results import Run, episode_length, run_value_at, select_runs, window_mean
from sb3_maxdiff.experiments.analyse.stats import compare, compare_seeds, format_pvalue, nan_mean_std, summarize, welch_ttest
from sb3_maxdiff.experiments.define.presets import METHOD_LABELS, PRESETS, Preset


def _cells(runs: list[Run]) -> dict[tuple[str, str], list[Run]]:
    cells: dict[tuple[str, str], list[Run]] = defaultdict(list)
    for run in runs:
        cells[(run.spec.setting, run.spec.method)].append(run)
    return cells


def _ordered(preset: Preset | None, runs: list[Run]) -> tuple[list[str], list[str]]:
    """Settings and methods in the preset's order (the order found for unknown presets)."""
    settings = list(dict.fromkeys(run.spec.setting for run in runs))
    methods = list(dict.fromkeys(run.spec.method for run in runs))
    if preset is not None:
        settings = [s for s in preset.settings if s in settings] + [s for s in settings if s not in preset.settings]
        methods = [m for m in preset.methods if m in methods] + [m for m in methods if m not in preset.methods]
    return settings, methods


def _fmt(mean: float, std: float, digits: int = 1) -> str:
    if math.isnan(mean):
        return "n/a"
    return f"{mean:.{digits}f}" if math.isnan(std) else f"{mean:.{digits}f} +/- {std:.{digits}f}"


def _welch_cell(result: Any) -> str:
    return (
        "n/a"
        if math.isnan(result.pvalue)
        else f"t = {result.statistic:.2f}, dof = {result.dof:.1f}, p = {format_pvalue(result.pvalue)}"
    )


def _eval_by_env(runs: list[Run]) -> dict[str, list[list[float]]]:
    """Evaluation environment -> per-seed lists of episode returns."""
    by_env: dict[str, list[list[float]]] = defaultdict(list)
    for run in sorted(runs, key=lambda run: run.spec.seed):
        for env_id, returns in run.result.get("eval_returns", {}).items():
            by_env[env_id].append(returns)
    return dict(by_env)


def _short(env_id: str) -> str:
    return env_id.split("/")[-1]


def multi_shot_tables(preset: Preset | None, runs: list[Run]) -> list[str]:
    """Markdown: final evaluation per cell, then the pairwise tests."""
    settings, methods = _ordered(preset, runs)
    cells = _cells(runs)
    published = preset.published_final if preset else {}
    lines = [
        "## Final evaluation",
        "",
        "Mean +/- std of the final policy's episode returns: pooled over all episodes of all seeds, and "
        "of the per-seed means.",
        "",
        "| setting | evaluated on | method | seeds | episodes | pooled episodes | per-seed means | published (paper budget) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    tests = []
    for setting in settings:
        evals = {method: _eval_by_env(cells.get((setting, method), [])) for method in methods}
        for env_id in sorted({env for by_env in evals.values() for env in by_env}):
            for method in methods:
                per_seed = evals[method].get(env_id, [])
                if not per_seed:
                    continue
                pooled = summarize([value for seed in per_seed for value in seed])
                means = summarize([float(np.mean(seed)) for seed in per_seed])
                paper = published.get((setting, method))
                paper_text = _fmt(*paper) if paper else "-"
                lines.append(
                    f"| {setting} | {_short(env_id)} | {METHOD_LABELS.get(method, method)} | {len(per_seed)} | "
                    f"{pooled.n} | {_fmt(pooled.mean, pooled.std)} | {_fmt(means.mean, means.std)} | {paper_text} |"
                )
            for a, b in itertools.combinations(methods, 2):
                if evals[a].get(env_id) and evals[b].get(env_id):
                    result = compare(evals[a][env_id], evals[b][env_id])
                    tests.append(
                        f"| {setting} | {_short(env_id)} | {METHOD_LABELS.get(a, a)} vs {METHOD_LABELS.get(b, b)} | "
                        f"{_welch_cell(result.pooled)} | {_welch_cell(result.per_seed)} |"
                    )
    if tests:
        lines += [
            "",
            "## Welch's t-tests (unpaired, two-sided)",
            "",
            "| setting | evaluated on | comparison | pooled episodes | per-seed means |",
            "|---|---|---|---|---|",
            *tests,
        ]
    return lines


def single_shot_tables(preset: Preset | None, runs: list[Run]) -> list[str]:
    """
    Markdown: terminal window return and final x distance per cell (n = seeds), beside the published distance at the
    runs' step count where the preset has it, and the tests.
    """
    settings, methods = _ordered(preset, runs)
    cells = _cells(runs)
    lines = [
        "## Single-shot: terminal window return and final distance along x",
        "",
        "| setting | method | seeds | steps | terminal window return | final x distance | published x distance |",
        "|---|---|---|---|---|---|---|",
    ]
    metrics: dict[tuple[str, str], tuple[list[float], list[float]]] = {}
    for setting, method in itertools.product(settings, methods):
        cell_runs = cells.get((setting, method), [])
        if not cell_runs:
            continue
        terminal = [run.result["window_returns"][-1] for run in cell_runs if run.result.get("window_returns")]
        distance = [run.result["final_distance"] for run in cell_runs]
        metrics[(setting, method)] = (terminal, distance)
        steps = max(run.spec.steps for run in cell_runs)
        published = preset.published_distance.get((setting, method), {}).get(steps) if preset is not None else None
        lines.append(
            f"| {setting} | {METHOD_LABELS.get(method, method)} | {len(cell_runs)} | {steps:,} | "
            f"{_fmt(*summarize(terminal)[:2])} | {_fmt(*summarize(distance)[:2])} | "
            f"{'n/a' if published is None else f'{published:.1f}'} |"
        )
    tests = []
    for setting in settings:
        for a, b in itertools.combinations(methods, 2):
            if (setting, a) in metrics and (setting, b) in metrics:
                window_test = welch_ttest(metrics[(setting, a)][0], metrics[(setting, b)][0])
                distance_test = welch_ttest(metrics[(setting, a)][1], metrics[(setting, b)][1])
                label = f"{METHOD_LABELS.get(a, a)} vs {METHOD_LABELS.get(b, b)}"
                tests.append(f"| {setting} | {label} | {_welch_cell(window_test)} | {_welch_cell(distance_test)} |")
    if tests:
        lines += [
            "",
            "## Welch's t-tests (unpaired, two-sided, n = seeds)",
            "",
            "| setting | comparison | terminal window return | final x distance |",
            "|---|---|---|---|",
            *tests,
        ]
    return lines


def curve_table(preset: Preset | None, runs: list[Run]) -> list[str]:
    """Markdown: our training return at the step counts the paper reports, beside the published mean."""
    if preset is None or not preset.published_curve:
        return []
    cells = _cells(runs)
    lines = [
        "## Training return at the paper's step counts",
        "",
        "Return of the last training episode finished by that step, the running maximum of the returns of "
        "the full-length episodes up to that step, and the mean of the last 5 episodes finished by that step "
        "(the Swimmer's published points are that mean, in the authors' data); mean +/- std over seeds, beside "
        "the published mean over the paper's seeds.",
        "",
        "| setting | method | steps | seeds | ours, raw | ours, running max | ours, mean of 5 | published |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for (setting, method), published in preset.published_curve.items():
        cell_runs = cells.get((setting, method), [])
        for steps, paper in sorted(published.items()):
            if not cell_runs or max(run.spec.steps for run in cell_runs) < steps:
                continue
            columns = []
            for running_max in (False, True):
                ours = [run_value_at(run, np.array([steps]), running_max)[0] for run in cell_runs]
                columns.append([float(value) for value in ours if not math.isnan(value)])
            windowed = [window_mean(run.curve_steps, run.curve_returns, steps, 5) for run in cell_runs]
            columns.append([value for value in windowed if not math.isnan(value)])
            lines.append(
                f"| {setting} | {METHOD_LABELS.get(method, method)} | {steps:,} | {len(columns[0])} | "
                + " | ".join(_fmt(*summarize(column)[:2]) for column in columns)
                + f" | {paper:.0f} |"
            )
    return lines if len(lines) > 6 else []


# The ergodicity diagnostics as tabulated: result key, label, digits (coverage is a fraction of cells and the
# exponent lies near 1 to 2: they need more digits than the autocorrelation time, in steps)
ERGODICITY_TABLE = (
    ("coverage", "coverage", 3),
    ("msd_exponent", "MSD exponent", 2),
    ("autocorr_time", "autocorrelation time", 1),
)


def ergodicity_table(preset: Preset | None, runs: list[Run]) -> list[str]:
    """Markdown: ergodicity diagnostics of the training paths per cell (mean +/- std over seeds)."""
    settings, methods = _ordered(preset, runs)
    cells = _cells(runs)
    rows = []
    for setting, method in itertools.product(settings, methods):
        summaries = [run.result["ergodicity"] for run in cells.get((setting, method), []) if "ergodicity" in run.result]
        if not summaries:
            continue
        columns = [
            _fmt(*summarize([summary[name] for summary in summaries if not math.isnan(summary[name])])[:2], digits)
            for name, _, digits in ERGODICITY_TABLE
        ]
        rows.append(f"| {setting} | {METHOD_LABELS.get(method, method)} | {len(summaries)} | " + " | ".join(columns) + " |")
    if not rows:
        return []
    grid = next(run.spec.cell.ergodicity for run in runs if "ergodicity" in run.result)
    assert grid is not None  # a run that logged the diagnostics has their grid
    return [
        "## Ergodicity of the training paths",
        "",
        f"Per seed: the fraction of the {grid['bins']} x {grid['bins']} cells of the box {grid['low']} to {grid['high']} "
        "that the (x, y) training paths visited, and "
        "the medians over its training episodes of the MSD exponent (1: diffusive, 2: ballistic) and of the "
        "integrated autocorrelation time (steps); mean +/- std over seeds.",
        "",
        "| setting | method | seeds | coverage | MSD exponent | autocorrelation time |",
        "|---|---|---|---|---|---|",
        *rows,
    ]


def _per_seed_quantities(preset: Preset | None, setting: str, cell_runs: list[Run]) -> dict[str, list[float]]:
    """
    One value per seed of each quantity compared between methods: the training return (raw and running
    maximum) at the paper's step counts for ``setting`` and at the end of the runs, and the ergodicity
    diagnostics. NaN where a seed has no value (no episode finished yet, no diagnostics).
    """
    published_steps = {
        steps
        for (cell_setting, _), curve in (preset.published_curve.items() if preset else [])
        if cell_setting == setting
        for steps in curve
    }
    last = min(run.spec.steps for run in cell_runs)
    quantities: dict[str, list[float]] = {}
    for steps in sorted(step for step in published_steps | {last} if step <= last):
        for running_max, kind in ((False, "raw"), (True, "running max")):
            quantities[f"training return at {steps:,} steps, {kind}"] = [
                float(run_value_at(run, np.array([steps]), running_max)[0]) for run in cell_runs
            ]
    for name, label, _ in ERGODICITY_TABLE:
        values = [float(run.result.get("ergodicity", {}).get(name, math.nan)) for run in cell_runs]
        if not all(math.isnan(value) for value in values):
            quantities[label] = values
    return quantities


def per_seed_tests(preset: Preset | None, runs: list[Run]) -> list[str]:
    """
    Markdown: Welch's test between each pair of methods on per-seed values (n = seeds) of the training
    returns and of the ergodicity diagnostics, with each side's mean +/- std.
    """
    settings, methods = _ordered(preset, runs)
    cells = _cells(runs)
    rows = []
    for setting in settings:
        by_method = {m: _per_seed_quantities(preset, setting, cells[(setting, m)]) for m in methods if cells.get((setting, m))}
        for a, b in itertools.combinations(by_method, 2):
            for quantity in [name for name in by_method[a] if name in by_method[b]]:
                result = compare_seeds(by_method[a][quantity], by_method[b][quantity])
                digits = next((digits for _, label, digits in ERGODICITY_TABLE if label == quantity), 1)
                rows.append(
                    f"| {setting} | {quantity} | {METHOD_LABELS.get(a, a)} vs {METHOD_LABELS.get(b, b)} | "
                    f"{_fmt(*result.a[:2], digits)} (n = {result.a.n}) | {_fmt(*result.b[:2], digits)} (n = {result.b.n}) | "
                    f"{_welch_cell(result.welch)} | {format_pvalue(result.mann_whitney)} |"
                )
    if not rows:
        return []
    return [
        "## Tests on per-seed values of training",
        "",
        "Each seed gives one value: its training return at the paper's step counts and at the end of the run "
        "(last finished episode, and running maximum over full-length episodes), and its ergodicity diagnostics. "
        "Mean +/- std over seeds of each side, Welch's unpaired two-sided test and the two-sided Mann-Whitney "
        "rank test (p).",
        "",
        "| setting | quantity | comparison | first method | second method | Welch | Mann-Whitney p |",
        "|---|---|---|---|---|---|---|",
        *rows,
    ]


def _curve_grid(runs: list[Run]) -> np.ndarray:
    step = runs[0].spec.window if runs[0].spec.single_shot else episode_length(runs[0].spec)
    return np.arange(step, max(run.spec.steps for run in runs) + 1, step)


def published_points(preset: Preset | None, setting: str, method: str, last_step: int) -> list[tuple[int, float]]:
    """The published training-curve points of a cell, (steps, mean return), up to ``last_step``."""
    curve = preset.published_curve.get((setting, method), {}) if preset is not None else {}
    return sorted((steps, value) for steps, value in curve.items() if steps <= last_step)


def plot_learning_curves(preset: Preset | None, runs: list[Run], path: str, running_max: bool = False) -> None:
    """
    One panel per setting: mean +/- std across seeds of the episode (window) return of each method, each
    seed's curve faintly, and the published points (crosses) where the preset has them.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    settings, methods = _ordered(preset, runs)
    cells = _cells(runs)
    columns = min(4, len(settings))
    rows = math.ceil(len(settings) / columns)
    figure, axes = plt.subplots(rows, columns, figsize=(4.2 * columns, 3.4 * rows), squeeze=False)
    kind = "running max of " if running_max else ""
    unit = "window" if runs[0].spec.single_shot else "episode"
    for axis, setting in zip(axes.flat, settings):
        for method in methods:
            cell_runs = cells.get((setting, method), [])
            if not cell_runs:
                continue
            grid = _curve_grid(cell_runs)
            values = np.array([run_value_at(run, grid, running_max) for run in cell_runs])
            mean, std = nan_mean_std(values)
            label = f"{METHOD_LABELS.get(method, method)} (n={len(cell_runs)})"
            (line,) = axis.plot(grid, mean, label=label)
            axis.fill_between(grid, mean - std, mean + std, color=line.get_color(), alpha=0.2)
            for seed_values in values:
                axis.plot(grid, seed_values, color=line.get_color(), alpha=0.3, linewidth=0.6)
            published = published_points(preset, setting, method, max(run.spec.steps for run in cell_runs))
            if published:
                steps, means = zip(*published)
                paper = f"{METHOD_LABELS.get(method, method)}, paper"
                axis.scatter(steps, means, marker="x", s=60, color=line.get_color(), label=paper, zorder=3)
        axis.set_title(setting)
        axis.set_xlabel("environment steps")
        axis.set_ylabel(f"{kind}{unit} return")
        axis.legend(fontsize=8)
    for axis in list(axes.flat)[len(settings) :]:
        axis.set_visible(False)
    figure.suptitle(
        f"{kind}{unit} return, mean +/- std across seeds" if kind else f"raw {unit} return, mean +/- std across seeds"
    )
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


def plot_final_bars(preset: Preset | None, runs: list[Run], path: str) -> None:
    """Bars of the final evaluation (multi-shot: pooled episodes; single-shot: final distance over seeds)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    settings, methods = _ordered(preset, runs)
    cells = _cells(runs)
    groups: list[tuple[str, dict[str, list[float]]]] = []
    for setting in settings:
        if runs[0].spec.single_shot:
            values = {m: [run.result["final_distance"] for run in cells.get((setting, m), [])] for m in methods}
            groups.append((setting, values))
            continue
        evals = {method: _eval_by_env(cells.get((setting, method), [])) for method in methods}
        env_ids = sorted({env for by_env in evals.values() for env in by_env})
        for env_id in env_ids:
            label = setting if len(env_ids) == 1 else f"{setting}\non {_short(env_id)}"
            groups.append((label, {m: [v for seed in evals[m].get(env_id, []) for v in seed] for m in methods}))
    width = 0.8 / len(methods)
    figure, axis = plt.subplots(figsize=(max(5.0, 1.6 * len(groups)), 3.8))
    for index, method in enumerate(methods):
        stats = [summarize(values.get(method, [])) for _, values in groups]
        positions = np.arange(len(groups)) + (index - (len(methods) - 1) / 2) * width
        axis.bar(
            positions,
            [s.mean for s in stats],
            width,
            yerr=[s.std for s in stats],
            capsize=3,
            label=METHOD_LABELS.get(method, method),
        )
    axis.set_xticks(np.arange(len(groups)), [label for label, _ in groups], fontsize=8)
    axis.set_ylabel("final x distance (per seed)" if runs[0].spec.single_shot else "evaluation return (pooled episodes)")
    axis.set_title("mean +/- std")
    axis.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


def write_report(root: str, preset_name: str, budget: str, runs: list[Run], running_max: bool = False) -> str:
    """Write ``REPORT.md`` and the figures for one (preset, budget); returns the report's path."""
    preset = PRESETS.get(preset_name)
    folder = os.path.join(root, preset_name, budget)
    os.makedirs(folder, exist_ok=True)
    seeds = sorted({run.spec.seed for run in runs})
    single = [run for run in runs if run.spec.single_shot]
    multi = [run for run in runs if not run.spec.single_shot]
    lines = [
        f"# {preset_name}, {budget} budget",
        "",
        preset.figure if preset else "",
        "",
        *([preset.notes, ""] if preset and preset.notes else []),
        f"{len(runs)} finished runs; seeds {seeds}; {sorted({run.spec.steps for run in runs})} environment steps per run; "
        f"{sorted({run.spec.eval_episodes for run in multi})} evaluation episodes per seed (multi-shot). "
        "Published numbers are at the paper budget, not necessarily at our step counts. "
        "Every std here is the sample standard deviation (ddof 1, as `tabulate` prints it; the paper's error bars "
        "are the population one, ddof 0).",
        "",
    ]
    figures = []
    for part, kind in ((multi, "multi_shot"), (single, "single_shot")):
        if not part:
            continue
        if kind == "multi_shot":
            lines += [
                *multi_shot_tables(preset, part),
                "",
                *curve_table(preset, part),
                "",
                *ergodicity_table(preset, part),
                "",
                *per_seed_tests(preset, part),
                "",
            ]
        else:
            lines += [*single_shot_tables(preset, part), "", *curve_table(preset, part), ""]
        curves, bars = f"{kind}_learning_curves.png", f"{kind}_final.png"
        plot_learning_curves(preset, part, os.path.join(folder, curves), running_max)
        plot_final_bars(preset, part, os.path.join(folder, bars))
        figures += [curves, bars]
    lines += ["## Figures", ""] + [f"![{name}]({name})" for name in figures]
    path = os.path.join(folder, "REPORT.md")
    with open(path, "w") as file:
        file.write("\n".join(lines).replace("\n\n\n", "\n\n") + "\n")
    return path


def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    parser = argparse.ArgumentParser(prog=prog, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("results", help="the --out folder of `run`")
    parser.add_argument("--preset", default=None, help="only this preset")
    parser.add_argument("--budget", default=None, help="only this budget")
    parser.add_argument("--running-max", action="store_true", help="plot the running maximum of the returns (as the paper)")
    args = parser.parse_args(argv)
    groups = select_runs(args.results, args.preset, args.budget)
    if not groups:
        print(f"no finished runs under {args.results}")
        return 1
    for (preset_name, budget), runs in sorted(groups.items()):
        print(write_report(args.results, preset_name, budget, runs, args.running_max))
    return 0
