"""
Per-episode CSV files of finished runs, so that every number of a write-up can be recomputed from a file kept in the
repository rather than from a results folder (the ``export`` command; :mod:`~sb3_maxdiff.experiments.analyse.tables` reads
them).

    python -m sb3_maxdiff.experiments export results --budget reduced-50000-steps --out episodes.csv
    python -m sb3_maxdiff.experiments export results --budget reduced --settings beta=0.01 --seeds 0 1 2 --out b.csv
    python -m sb3_maxdiff.experiments export results --budget reduced-50000-steps --out episodes.csv --models kept/swimmer

``export`` writes one row per training episode (its return, length, the step count at its end and, where the run
recorded them, its ergodicity diagnostics) and per evaluation episode; for single-shot runs, one row per window
(its return, the step count at its end, x and the distance travelled along x since the start). ``--models PREFIX``
keeps the exported runs' final models beside the file, as ``PREFIX_<method>_seed<i>.zip``
(``PREFIX_<setting>_<method>_seed<i>.zip`` where the export holds several settings), each without its optimizer's
moments: the policy, its settings and step count, enough to evaluate, transfer or go on learning (from fresh Adam
moments), at a third of the size.
"""

import csv
import functools
import os
import re
import zipfile
from typing import Any

import numpy as np

from sb3_maxdiff.experiments.analyse.results import Run, episode_length, load_runs, select_runs
from sb3_maxdiff.experiments.define.algos import get_algo
from sb3_maxdiff.experiments.define.specs import ERGODICITY_FILE, MODEL_FILE, RESULT_FILE, WINDOWS_FILE, read_windows

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
    for name, key in (("eval", "eval_returns"), ("actor eval", "actor_eval_returns")):  # the actor alone: "q" runs
        for env_id, returns in run.result.get(key, {}).items():
            kind = name if env_id == spec.env_id else f"{name} {env_id}"
            rows += [
                {
                    "setting": spec.setting,
                    "method": spec.method,
                    "seed": spec.seed,
                    "episode": index,
                    "return": value,
                    "kind": kind,
                }
                for index, value in enumerate(returns)
            ]
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
        setting = spec.setting.replace(" ", "_")  # no space in a file name
        name = f"{prefix}_{setting}_{spec.method}" if several_settings else f"{prefix}_{spec.method}"
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
