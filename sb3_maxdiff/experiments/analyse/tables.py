"""
The per-seed tables computed from the CSV files of :mod:`~sb3_maxdiff.experiments.analyse.episodes` (and of ``transfer
--csv``), the ``tabulate`` command's work.

    python -m sb3_maxdiff.experiments tabulate episodes.csv --steps 10000 20000 50000
    python -m sb3_maxdiff.experiments tabulate sweep.csv episodes.csv --steps 50000 --by-setting

``tabulate`` gives, per method, each seed's last training return and running maximum over full-length episodes at the
given step counts, its final evaluation and diagnostics, then mean +/- std over seeds (ddof 1) and Welch's and the
Mann-Whitney test between each pair of methods; several files are read as one, and ``--by-setting`` compares each
method in each setting (MaxDiff at several alphas, say, beside the methods of another file). A single-shot file is read
as the last window's return, the return so far (the window returns summed) and the distance at each step count.
"""

import csv
import itertools
import math
import os
from collections import defaultdict
from collections.abc import Sequence

import numpy as np

from sb3_maxdiff.experiments.analyse.episodes import DEFAULT_FULL_LENGTH, DIAGNOSTICS, SETTING_SEPARATOR, WINDOW_COLUMNS
from sb3_maxdiff.experiments.analyse.results import value_at, window_mean
from sb3_maxdiff.experiments.analyse.stats import compare_seeds, format_pvalue, summarize
from sb3_maxdiff.experiments.define.presets import METHOD_LABELS
from sb3_maxdiff.experiments.run.transfer import CSV_FIELDS as TRANSFER_FIELDS


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


# the quantity of each kind of evaluation episode: the final policy's, and an actor-critic run's actor alone
EVALUATION_QUANTITIES = {"eval": "final evaluation (mean per seed)", "actor eval": "actor evaluation (mean per seed)"}


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
    paper's training curves read that way, over 5). Evaluation episodes give "final evaluation (mean per seed)",
    and those of a run's actor alone (kind ``actor eval``) "actor evaluation (mean per seed)". A file that
    ``transfer --csv`` wrote gives, per environment it evaluated on, "evaluation on <env> (mean per seed)" for each
    (algorithm, seed); a file of single-shot windows
    (``export`` of single-shot runs) gives the return of the last window finished by each step count and the distance
    travelled along x by then.
    """
    if window is not None and window < 1:
        raise ValueError(f"window must be a positive number of episodes, got {window}")
    episodes: dict[tuple[str, int], list[dict[str, str]]] = defaultdict(list)
    evaluations: dict[tuple[str, int], dict[str, list[float]]] = defaultdict(dict)
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
        for kind, kind_returns in evaluations.get((method, seed), {}).items():
            returns[EVALUATION_QUANTITIES[kind]] = float(np.mean(kind_returns))
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
    evaluations: dict[tuple[str, int], dict[str, list[float]]],
) -> None:
    """The training rows and evaluation returns (by kind: ``eval``, and ``actor eval`` for the actor alone of a run
    with an actor-critic) of an episode file, by (group, seed); ``source`` refuses a (group, seed) already read from
    another file."""
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
            elif row["kind"] in EVALUATION_QUANTITIES:
                evaluations[key].setdefault(row["kind"], []).append(float(row["return"]))


def _read_rows(
    rows: csv.DictReader,
    path: str,
    by_setting: bool,
    source: dict[tuple[str, int], str],
    into: dict[tuple[str, int], list[dict[str, str]]],
) -> None:
    """
    The rows of one file by (group, seed) into ``into``; ``source`` refuses a (group, seed) read from another file, and
    a group by method alone refuses a seed the file holds in two settings (two runs).
    """
    settings: dict[tuple[str, int], str] = {}
    for row in rows:
        if by_setting and not row.get("setting"):
            raise ValueError(f"{path} has no setting column: group its runs by method alone")
        group = f"{row['method']}{SETTING_SEPARATOR}{row['setting']}" if by_setting else row["method"]
        key = (group, int(row["seed"]))
        setting = settings.setdefault(key, row.get("setting") or "")
        if setting != (row.get("setting") or ""):
            raise ValueError(
                f"{path} holds seed {key[1]} of {group_label(group)} in two settings ({setting}, {row.get('setting')}): "
                "group by setting as well (--by-setting)"
            )
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
    # an episode's end is the exported step count where there is one: a resumed run's episodes cut by a stop do not
    # add up to its steps (the cut episode is not in the file, while its steps are)
    ends = np.array([int(float(row["steps"])) for row in rows]) if rows[0].get("steps") else None
    if rows[0].get("length"):
        lengths = np.array([int(float(row["length"])) for row in rows])
    elif ends is not None:  # only the step count at each episode's end
        lengths = np.diff(ends, prepend=0)
    else:
        raise ValueError("an exported episode row needs a 'length' or a 'steps' column; it has " + ", ".join(rows[0]))
    ends = np.cumsum(lengths) if ends is None else ends
    returns = np.array([float(row["return"]) for row in rows])
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
