"""
The ``export`` and ``tabulate`` commands, thin over :func:`~sb3_maxdiff.experiments.analyse.episodes.export_episodes` and
:func:`~sb3_maxdiff.experiments.analyse.tables.tabulate`.
"""

import argparse

from sb3_maxdiff.experiments.analyse.episodes import export_episodes
from sb3_maxdiff.experiments.analyse.tables import tabulate


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
