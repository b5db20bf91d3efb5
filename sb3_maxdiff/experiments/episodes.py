"""
Per-episode CSV files of finished runs, and the per-seed tables computed from them, so that every number of a
write-up can be recomputed from a file kept in the repository rather than from a results folder.

    python -m sb3_maxdiff.experiments export results --budget reduced-50000-steps --out episodes.csv
    python -m sb3_maxdiff.experiments export results --budget reduced --settings beta=0.01 --seeds 0 1 2 --out b.csv
    python -m sb3_maxdiff.experiments tabulate episodes.csv --steps 10000 20000 50000
    python -m sb3_maxdiff.experiments tabulate sweep.csv episodes.csv --steps 50000 --by-setting
    python -m sb3_maxdiff.experiments export results --budget reduced-50000-steps --out episodes.csv --models kept/swimmer

``export`` writes one row per training episode (its return, length, the step count at its end and, where the run
recorded them, its ergodicity diagnostics) and per evaluation episode; for single-shot runs, one row per window
(its return, the step count at its end, x and the distance travelled along x since the start), which ``tabulate``
reads as the last window's return, the return so far (the window returns summed) and the distance at each step
count. ``tabulate`` gives, per method, each
seed's last training return and running maximum over full-length episodes at the given step counts, its final
evaluation and diagnostics, then mean +/- std over seeds (ddof 1) and Welch's and the Mann-Whitney test between
each pair of methods; several files are read as one, and ``--by-setting`` compares each method in each setting
(MaxDiff at several alphas, say, beside the methods of another file). ``--models PREFIX`` keeps the exported runs'
final models beside the file, as ``PREFIX_<method>_seed<i>.zip`` (``PREFIX_<setting>_<method>_seed<i>.zip`` where the
export holds several settings), each without its optimizer's moments: the policy, its settings and step count, enough
to evaluate, transfer or go on learning (from fresh Adam moments), at a third of the size.
"""

import argparse
import csv
import functools
import itertools
import math
import os
import re
import zipfile
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np

from sb3_maxdiff.experiments.algos import get_algo
from sb3_maxdiff.experiments.presets import METHOD_LABELS
from sb3_maxdiff.experiments.results import Run, episode_length, load_runs, select_runs, value_at, window_mean
from sb3_maxdiff.experiments.specs import ERGODICITY_FILE, MODEL_FILE, RESULT_FILE, WINDOWS_FILE, read_windows
from sb3_maxdiff.experiments.stats import compare_seeds, format_pvalue, summarize
from sb3_maxdiff.experiments.transfer import CSV_FIELDS as TRANSFER_FIELDS

DIAGNOSTICS = ("msd_exponent", "autocorr_time", "episode_coverage", "coverage")
# joins a method and its setting in the group names of per_seed_values(..., by_setting=True)
SETTING_SEPARATOR = "@"
# the episode length that counts for the running maximum in a file that does not mark its full-length episodes
DEFAULT_FULL_LENGTH = 1000
EPISODE_COLUMNS = ("setting", "method", "seed", "episode", "steps", "return", "length", "full_length", "kind", *DIAGNOSTICS)
WINDOW_COLUMNS = ("setting", "method", "seed", "window", "steps", "window_return", "x_position", "x_distance")
# what SB3 writes of an object's address in a model file's description of its classes, new in every process
MEMORY_ADDRESS = re.compile(rb" at 0x[0-9a-fA-F]+")


def _diagnostics_by_step(run_dir: str) -> dict[int, dict[str, str]]:
    path = os.path.join(run_dir, ERGODICITY_FILE)
    if not os.path.exists(path):
        return {}
    return {round(float(row["timesteps"])): row for row in read_windows(path)}


def run_episode_rows(root: str, run: Run) -> list[dict[str, Any]]:
    """The CSV rows of one multi-shot run: its training episodes, then its evaluation episodes."""
    spec = run.spec
    diagnostics = _diagnostics_by_step(os.path.join(root, spec.relpath))
    lengths = run.curve_lengths if run.curve_lengths is not None else np.diff(run.curve_steps, prepend=0)
    rows = []
    for index, (steps, value, length) in enumerate(zip(run.curve_steps, run.curve_returns, lengths)):
        scores = diagnostics.get(int(steps), {})
        rows.append(
            {
                "setting": spec.setting,
                "method": spec.method,
                "seed": spec.seed,
                "episode": index,
                "steps": int(steps),
                "return": float(value),
                "length": int(length),
                "full_length": int(length >= episode_length(spec)),
                "kind": "train",
                **{name: scores.get(name, "") for name in DIAGNOSTICS},
            }
        )
    for env_id, returns in run.result.get("eval_returns", {}).items():
        kind = "eval" if env_id == spec.env_id else f"eval {env_id}"
        for index, value in enumerate(returns):
            rows.append(
                {
                    "setting": spec.setting,
                    "method": spec.method,
                    "seed": spec.seed,
                    "episode": index,
                    "return": value,
                    "kind": kind,
                }
            )
    return rows


def run_window_rows(root: str, run: Run) -> list[dict[str, Any]]:
    """The CSV rows of one single-shot run: its windows as its ``windows.csv`` has them."""
    spec = run.spec
    return [
        {
            "setting": spec.setting,
            "method": spec.method,
            "seed": spec.seed,
            "window": int(row["window"]),
            "steps": int(row["timesteps"]),
            **{name: float(row[name]) for name in ("window_return", "x_position", "x_distance")},
        }
        for row in read_windows(os.path.join(root, spec.relpath, WINDOWS_FILE))
    ]


def _keep(runs: list[Run], settings: list[str] | None, seeds: list[int] | None) -> list[Run]:
    """The runs of the given settings and seeds (all where None); an error names the ones there are."""
    found_settings: list[Any] = sorted({run.spec.setting for run in runs})
    found_seeds: list[Any] = sorted({run.spec.seed for run in runs})
    checks: list[tuple[str, list[Any] | None, list[Any]]] = [
        ("settings", settings, found_settings),
        ("seeds", seeds, found_seeds),
    ]
    for name, wanted, found in checks:
        missing = sorted(set(wanted or []) - set(found))
        if missing:
            raise ValueError(f"--{name} {missing} not among the finished runs; found {name} {found}")
    return [
        run for run in runs if (settings is None or run.spec.setting in settings) and (seeds is None or run.spec.seed in seeds)
    ]


def keep_final_models(root: str, runs: list[Run], prefix: str) -> list[str]:
    """
    Save the final model of each of ``runs`` (under ``root``) as ``prefix_<method>_seed<i>.zip`` (with the setting
    after the prefix where the runs have several), without its optimizer's moments; returns the paths. A file that
    already holds the same model is left as it is (an export run again does not rewrite the kept models).
    """
    several_settings = len({run.spec.setting for run in runs}) > 1
    written = []
    for run in runs:
        spec = run.spec
        name = f"{prefix}_{spec.setting}_{spec.method}" if several_settings else f"{prefix}_{spec.method}"
        model = get_algo(spec.method).load(os.path.join(root, spec.relpath, MODEL_FILE), device="cpu")
        for saved in model._get_torch_save_params()[0]:  # SB3's names of what it saves: "policy.optimizer", ...
            if saved.endswith("optimizer"):
                # Adam's moments: most of the file, needed only to resume learning exactly
                optimizer: Any = functools.reduce(getattr, saved.split("."), model)
                optimizer.state.clear()
        path = f"{name}_seed{spec.seed}.zip"
        fresh = f"{name}_seed{spec.seed}.new.zip"
        model.save(fresh)
        if os.path.exists(path) and _same_saved_model(path, fresh):
            os.remove(fresh)  # the model kept there already: the file stays as committed
        else:
            os.replace(fresh, path)
        written.append(path)
    return written


def _same_saved_model(path: str, other: str) -> bool:
    """
    Whether two SB3 model files hold the same model: the same members, byte for byte, but for the memory addresses
    that SB3 writes into its description of the classes (``<function ... at 0x7f...>``), which change in every process.
    """
    with zipfile.ZipFile(path) as first, zipfile.ZipFile(other) as second:
        if sorted(first.namelist()) != sorted(second.namelist()):
            return False
        return all(
            MEMORY_ADDRESS.sub(b"", first.read(name)) == MEMORY_ADDRESS.sub(b"", second.read(name))
            for name in first.namelist()
        )


def export_episodes(
    root: str,
    path: str,
    budget: str | None = None,
    preset: str | None = None,
    settings: list[str] | None = None,
    seeds: list[int] | None = None,
    models: str | None = None,
    merge: bool = False,
) -> int:
    """
    Write the episodes of the runs under ``root`` (one preset and budget; only the given settings and seeds where
    these are given) to ``path``, or the windows of single-shot runs (one kind at a time); returns the number of rows.

    :param models: also keep the runs' final models under this prefix (see :func:`keep_final_models`)
    :param merge: keep the rows already in ``path`` of the runs (setting, method, seed) that ``root`` does not hold,
        e.g. runs exported from a results folder since lost, and write those of ``root`` in place of the rest
    """
    groups = select_runs(root, preset, budget)
    if not groups:
        finished = load_runs(root)
        wanted = ", ".join(f"{name} {value!r}" for name, value in (("preset", preset), ("budget", budget)) if value)
        raise ValueError(
            f"no finished run (a folder with {RESULT_FILE}) under {root}"
            + (f" for {wanted}" if wanted else "")
            + f"; finished runs found: {sorted(finished)}"
        )
    if len(groups) != 1:
        raise ValueError(
            f"export needs exactly one (preset, budget) under {root}, found {sorted(groups)}: pass --preset/--budget"
        )
    (runs,) = groups.values()
    runs = sorted(_keep(runs, settings, seeds), key=lambda run: (run.spec.setting, run.spec.method, run.spec.seed))
    single_shot = sorted({run.spec.setting for run in runs if run.spec.single_shot})
    if single_shot and len(single_shot) < len({run.spec.setting for run in runs}):
        multi_shot = sorted({run.spec.setting for run in runs if not run.spec.single_shot})
        raise ValueError(
            f"the runs hold single-shot settings {single_shot} and multi-shot settings {multi_shot}, whose files differ "
            f"(windows, episodes): export one kind at a time with --settings"
        )
    columns: tuple[str, ...]
    if single_shot:
        rows, columns = [row for run in runs for row in run_window_rows(root, run)], WINDOW_COLUMNS
    else:
        rows, columns = [row for run in runs for row in run_episode_rows(root, run)], EPISODE_COLUMNS
    if merge and os.path.exists(path):
        rows = _merged_rows(path, columns, rows)
    with open(path, "w", newline="") as file:
        writer = csv.DictWriter(file, fieldnames=columns, restval="")
        writer.writeheader()
        writer.writerows(rows)
    if models is not None:
        keep_final_models(root, runs, models)
    return len(rows)


def _run_key(row: dict[str, Any]) -> tuple[str, str, int]:
    return str(row["setting"]), str(row["method"]), int(row["seed"])


def _merged_rows(path: str, columns: tuple[str, ...], rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows of ``path`` of the runs that ``rows`` do not hold, and ``rows``, in the order of (setting, method, seed)."""
    with open(path, newline="") as file:
        reader = csv.DictReader(file)
        if tuple(reader.fieldnames or ()) != columns:
            raise ValueError(
                f"--merge needs {path} to have the columns this export writes, {list(columns)}; it has "
                f"{list(reader.fieldnames or ())}"
            )
        kept = [row for row in reader]
    exported = {_run_key(row) for row in rows}
    merged = [row for row in kept if _run_key(row) not in exported] + rows
    return sorted(merged, key=_run_key)  # stable: each run's rows keep their order


def _float(text: str | None) -> float:
    return math.nan if text in (None, "") else float(text)


def group_label(group: str) -> str:
    """The name a table shows for a group of :func:`per_seed_values`: the method's, and its setting where grouped so."""
    method, _, setting = group.partition(SETTING_SEPARATOR)
    label = METHOD_LABELS.get(method, method)
    return f"{label}, {setting}" if setting else label


def _full_length(rows: list[dict[str, str]], lengths: np.ndarray, full_length: int | None) -> np.ndarray:
    """Which episodes ran their full length: ``length >= full_length`` if given, else the rows' ``full_length`` flags
    (written by ``export`` from each run's own episode length), else ``length >= 1000``."""
    if full_length is None and all(row.get("full_length") not in (None, "") for row in rows):
        return np.array([bool(int(row["full_length"])) for row in rows])
    return lengths >= (DEFAULT_FULL_LENGTH if full_length is None else full_length)


def per_seed_values(
    paths: str | Sequence[str],
    steps: list[int],
    full_length: int | None = None,
    by_setting: bool = False,
    window: int | None = None,
) -> dict[str, dict[str, dict[int, float]]]:
    """
    quantity -> group -> seed -> value, from per-episode CSV files: this module's, or ones with the columns method,
    seed, return, length or steps (the step count at the episode's end), and kind (``train`` or ``eval``; train
    if absent). The episodes that count for the running maximum are those ``export`` marked as full-length, or
    with ``full_length`` (or in a file without the mark) those of ``full_length`` (1000) steps or more. A group is a
    method, or with ``by_setting`` a method in one setting (``"maxdiff@alpha=10"``; see :func:`group_label`). A (group, seed)
    found in two files is refused (the files would mix two runs), as is a file given twice (its runs would count twice).
    With ``window``, also the mean return of the last ``window`` training episodes finished by each step count (the
    paper's training curves read that way, over 5). A file that ``transfer --csv`` wrote gives, per environment it
    evaluated on, "evaluation on <env> (mean per seed)" for each (algorithm, seed); a file of single-shot windows
    (``export`` of single-shot runs) gives the return of the last window finished by each step count and the distance
    travelled along x by then.
    """
    if window is not None and window < 1:
        raise ValueError(f"window must be a positive number of episodes, got {window}")
    episodes: dict[tuple[str, int], list[dict[str, str]]] = defaultdict(list)
    evaluations: dict[tuple[str, int], list[float]] = defaultdict(list)
    transferred: dict[str, dict[tuple[str, int], list[float]]] = defaultdict(lambda: defaultdict(list))
    windows: dict[tuple[str, int], list[dict[str, str]]] = defaultdict(list)
    source: dict[tuple[str, int], str] = {}
    paths = [paths] if isinstance(paths, str) else list(paths)
    real = [os.path.realpath(path) for path in paths]
    repeated = sorted({path for path, resolved in zip(paths, real) if real.count(resolved) > 1})
    if repeated:
        raise ValueError(f"{', '.join(repeated)} given more than once: its runs would be counted twice")
    for path in paths:
        with open(path) as file:
            reader = csv.DictReader(file)
            if tuple(reader.fieldnames or ()) == TRANSFER_FIELDS:
                _read_transfer_rows(reader, path, transferred, by_setting)
            elif tuple(reader.fieldnames or ()) == WINDOW_COLUMNS:
                _read_rows(reader, path, by_setting, source, windows)
            else:
                _read_episode_rows(reader, path, by_setting, source, episodes, evaluations)
    values: dict[str, dict[str, dict[int, float]]] = defaultdict(lambda: defaultdict(dict))
    for (method, seed), rows in episodes.items():
        returns, diagnostics = _training_values(rows, steps, full_length, window)
        if evaluations.get((method, seed)):
            returns["final evaluation (mean per seed)"] = float(np.mean(evaluations[(method, seed)]))
        for quantity, value in {**returns, **diagnostics}.items():
            values[quantity][method][seed] = value
    for env_id, by_key in transferred.items():
        for (method, seed), episode_returns in by_key.items():
            values[f"evaluation on {env_id} (mean per seed)"][method][seed] = float(np.mean(episode_returns))
    for (method, seed), rows in windows.items():
        for quantity, value in _window_values(rows, steps).items():
            values[quantity][method][seed] = value
    return values


def _window_values(rows: list[dict[str, str]], steps: list[int]) -> dict[str, float]:
    """
    quantity -> value of one single-shot run's windows: the last window's return, the return so far (every window's
    return summed) and the distance by each step.
    """
    ends = np.array([int(row["steps"]) for row in rows])
    at_steps = np.array(steps, dtype=int)
    window_returns = np.array([float(row["window_return"]) for row in rows])
    columns = {
        "window return": window_returns,
        "return so far": np.cumsum(window_returns),
        "x distance": np.array([float(row["x_distance"]) for row in rows]),
    }
    return {
        f"{name} at {at:,}": float(value)
        for name, column in columns.items()
        for at, value in zip(steps, value_at(ends, column, at_steps))
    }


def _read_episode_rows(
    reader: csv.DictReader,
    path: str,
    by_setting: bool,
    source: dict[tuple[str, int], str],
    episodes: dict[tuple[str, int], list[dict[str, str]]],
    evaluations: dict[tuple[str, int], list[float]],
) -> None:
    """The training rows and evaluation returns of an episode file, by (group, seed); ``source`` refuses a (group,
    seed) already read from another file."""
    missing = [name for name in ("method", "seed", "return") if name not in (reader.fieldnames or [])]
    if missing or not {"length", "steps"} & set(reader.fieldnames or []):
        raise ValueError(
            f"{path} lacks the column(s) {missing or ['length or steps']}: tabulate reads files with the columns "
            f"method, seed, return, length or steps (and optionally kind, setting), as `export` writes them, the "
            f"single-shot windows `export` writes, or the files of `transfer --csv`; its columns are {reader.fieldnames}"
        )
    grouped: dict[tuple[str, int], list[dict[str, str]]] = defaultdict(list)
    _read_rows(reader, path, by_setting, source, grouped)
    for key, rows in grouped.items():
        for row in rows:
            if row.get("kind", "train") == "train":
                episodes[key].append(row)
            elif row["kind"] == "eval":
                evaluations[key].append(float(row["return"]))


def _read_rows(
    rows: csv.DictReader,
    path: str,
    by_setting: bool,
    source: dict[tuple[str, int], str],
    into: dict[tuple[str, int], list[dict[str, str]]],
) -> None:
    """The rows of one file by (group, seed) into ``into``; ``source`` refuses a (group, seed) read from another file."""
    for row in rows:
        if by_setting and not row.get("setting"):
            raise ValueError(f"{path} has no setting column: group its runs by method alone")
        group = f"{row['method']}{SETTING_SEPARATOR}{row['setting']}" if by_setting else row["method"]
        key = (group, int(row["seed"]))
        if source.setdefault(key, path) != path:
            raise ValueError(
                f"seed {key[1]} of {group_label(group)} is in both {source[key]} and {path}"
                + ("" if by_setting else "; group by setting as well if they are different runs")
            )
        into[key].append(row)


def _training_values(
    rows: list[dict[str, str]], steps: list[int], full_length: int | None, window: int | None
) -> tuple[dict[str, float], dict[str, float]]:
    """quantity -> value of one run's training episodes: its returns at the step counts, and its path diagnostics."""
    values, diagnostics = {}, {}
    if rows[0].get("length"):
        lengths = np.array([int(float(row["length"])) for row in rows])
    else:  # only the step count at each episode's end
        lengths = np.diff([int(float(row["steps"])) for row in rows], prepend=0)
    ends, returns = np.cumsum(lengths), np.array([float(row["return"]) for row in rows])
    at_steps = np.array(steps, dtype=int)
    last = value_at(ends, returns, at_steps)
    running = value_at(ends, returns, at_steps, running_max=True, full=_full_length(rows, lengths, full_length))
    for index, at in enumerate(steps):
        values[f"last episode at {at:,}"] = float(last[index])
        values[f"running max at {at:,}"] = float(running[index])
        if window is not None:
            values[f"mean of the last {window} episodes at {at:,}"] = window_mean(ends, returns, at, window)
    for name in DIAGNOSTICS[:2]:
        scored = [_float(row.get(name)) for row in rows]
        if not all(math.isnan(value) for value in scored):
            diagnostics[f"{name} (median over episodes)"] = float(np.nanmedian(scored))
    coverage = [_float(row.get("coverage")) for row in rows if row.get("coverage")]
    if coverage:
        diagnostics["coverage (end of training)"] = coverage[-1]
    return values, diagnostics


def _read_transfer_rows(
    reader: csv.DictReader, path: str, transferred: dict[str, dict[tuple[str, int], list[float]]], by_setting: bool
) -> None:
    """The episodes of a ``transfer --csv`` file, by evaluation environment, then (algorithm, seed)."""
    if by_setting:
        raise ValueError(f"{path} is a transfer file (one setting per environment): tabulate it without --by-setting")
    models: dict[tuple[str, str, int], str] = {}
    for row in reader:
        key = (row["algo"], int(row["seed"]))
        if models.setdefault((row["env"], *key), row["model"]) != row["model"]:
            raise ValueError(
                f"{path} holds two models for {group_label(key[0])} seed {key[1]} on {row['env']}: "
                f"{models[(row['env'], *key)]} and {row['model']}"
            )
        transferred[row["env"]][key].append(float(row["return"]))


def _mean_std(values: list[float]) -> str:
    summary = summarize([value for value in values if not math.isnan(value)])
    if not summary.n:
        return "n/a"
    if summary.n == 1:  # one seed has no spread to show
        return f"{summary.mean:.4g} (n = 1)"
    return f"{summary.mean:.4g} +/- {summary.std:.3g} (n = {summary.n})"


def tabulate(
    paths: str | Sequence[str],
    steps: list[int],
    full_length: int | None = None,
    by_setting: bool = False,
    window: int | None = None,
) -> list[str]:
    """
    Markdown: per-seed values of each quantity, their mean +/- std (ddof 1), and the tests between methods (or, with
    ``by_setting``, between each method in each setting), from one or several per-episode CSV files.
    """
    values = per_seed_values(paths, steps, full_length, by_setting, window)
    lines = []
    for quantity, by_method in values.items():
        methods = list(by_method)
        seeds = sorted({seed for per_seed in by_method.values() for seed in per_seed})
        lines += [f"### {quantity}", "", "| seed | " + " | ".join(group_label(m) for m in methods) + " |"]
        lines.append("|---" * (len(methods) + 1) + "|")
        for seed in seeds:
            cells = [f"{by_method[m].get(seed, math.nan):.4g}" for m in methods]
            lines.append(f"| {seed} | " + " | ".join(cells) + " |")
        lines.append("| mean +/- std | " + " | ".join(_mean_std(list(by_method[m].values())) for m in methods) + " |")
        lines.append("")
        for a, b in itertools.combinations(methods, 2):
            result = compare_seeds(list(by_method[a].values()), list(by_method[b].values()))
            lines.append(
                f"- {group_label(a)} vs {group_label(b)}: Welch p = {format_pvalue(result.welch.pvalue)}, "
                f"Mann-Whitney p = {format_pvalue(result.mann_whitney)}"
            )
        lines.append("")
    return lines


def export_main(argv: list[str] | None = None, prog: str | None = None) -> int:
    parser = argparse.ArgumentParser(prog=prog, description="Write the episodes of finished runs to one CSV file.")
    parser.add_argument("results", help="the --out folder of `run`")
    parser.add_argument("--out", required=True, help="CSV file to write")
    parser.add_argument("--preset", default=None, help="the preset (needed when the folder holds several)")
    parser.add_argument("--budget", default=None, help="the budget label (needed when the folder holds several)")
    parser.add_argument("--settings", nargs="+", default=None, help="only these settings of the preset (e.g. beta=0.01)")
    parser.add_argument("--seeds", type=int, nargs="+", default=None, help="only these seeds")
    parser.add_argument(
        "--models",
        default=None,
        metavar="PREFIX",
        help="also keep each run's final model as PREFIX_<method>_seed<i>.zip, without its optimizer's moments",
    )
    parser.add_argument(
        "--merge",
        action="store_true",
        help="keep the rows already in --out of runs the results folder does not hold (e.g. exported from a folder "
        "since lost); the runs it holds are written anew",
    )
    args = parser.parse_args(argv)
    try:
        count = export_episodes(
            args.results, args.out, args.budget, args.preset, args.settings, args.seeds, args.models, args.merge
        )
    except ValueError as error:
        parser.error(str(error))
    print(f"{count} rows written to {args.out}" + (f"; final models kept as {args.models}_*.zip" if args.models else ""))
    return 0


def tabulate_main(argv: list[str] | None = None, prog: str | None = None) -> int:
    parser = argparse.ArgumentParser(prog=prog, description="Per-seed tables and tests from per-episode CSV files.")
    parser.add_argument(
        "csv",
        nargs="+",
        help="CSVs written by `export` or `transfer --csv` (or with columns method, seed, return, length, kind), read as one",
    )
    parser.add_argument(
        "--steps", type=int, nargs="+", default=[], help="step counts of the training returns (none for transfer files)"
    )
    parser.add_argument(
        "--full-length",
        type=int,
        default=None,
        help="episode length that counts for the running max (default: the full-length mark of export's files, else 1000)",
    )
    parser.add_argument(
        "--by-setting", action="store_true", help="compare each method in each setting (e.g. MaxDiff at several alphas)"
    )
    parser.add_argument(
        "--window",
        type=int,
        default=None,
        metavar="N",
        help="also the mean return of the last N training episodes at each step count (the paper's curves: N = 5)",
    )
    args = parser.parse_args(argv)
    try:
        lines = tabulate(args.csv, args.steps, args.full_length, args.by_setting, args.window)
    except ValueError as error:
        parser.error(str(error))
    print("\n".join(lines))
    return 0
