"""
Two checkouts of this repository timed against each other, e.g. a commit before a restructuring and after it:
``benchmarks/run.py`` and ``benchmarks/agents.py`` of each tree, run from that tree in alternating fresh
processes (old, new, old, new, ...), so that a slow spell of the machine hits both alike::

    git worktree add ../before <commit>
    python benchmarks/compare_trees.py ../before . --rounds 3

Prints, per figure, the median over the rounds of each tree and the ratio new / old (below 1: the new tree
is faster). ``--configs point-mass --calls 30 --run-only --with-baseline`` narrows it to one configuration of
``run.py`` and adds the figures of ``benchmarks/baseline.py`` timed in the same processes: where that file is the
same in both trees, its ratio shows how much the two trees' processes differ on their own.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

RUN_FIGURES = ("plan_ms", "update_ms_10000", "step_ms_10000", "step_ms_1000000")
BASELINE_FIGURES = ("baseline_plan_ms", "baseline_update_ms_10000", "baseline_step_ms_1000000")


def time_tree(
    tree: Path,
    out: Path,
    configs: tuple[str, ...] = ("point-mass", "swimmer"),
    calls: int = 10,
    run_only: bool = False,
    with_baseline: bool = False,
) -> dict[str, float]:
    """One round of the benchmarks run from ``tree`` (its own code and scripts): figure name -> ms."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    common = ["--configs", *configs, "--calls", str(calls), "--threads", "1"]
    run_json, agents_json = out / "run.json", out / "agents.json"
    run = [sys.executable, "benchmarks/run.py", *common, "--no-scaling", "--bf16-seconds", "0.5", "--json", str(run_json)]
    agents = [sys.executable, "benchmarks/agents.py", *common, "--agents", "1", "4", "--json", str(agents_json)]
    for command in [run] if run_only else [run, agents]:
        subprocess.run(command, cwd=tree, env=env, check=True, capture_output=True)
    names = RUN_FIGURES + (BASELINE_FIGURES if with_baseline else ())
    figures = {}
    for row in json.loads(run_json.read_text())["configs"]:
        figures.update({f"{row['config']} {name}": row[name] for name in names})
    if run_only:
        return figures
    for row in json.loads(agents_json.read_text())["rows"]:
        figures[f"{row['config']} N={row['n_agents']} batched ms/agent-step"] = row["batched_ms_per_agent_step"]
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("old", type=Path, help="checkout timed first in each round")
    parser.add_argument("new", type=Path, help="checkout timed second in each round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--configs", nargs="+", default=["point-mass", "swimmer"], help="configurations of run.py")
    parser.add_argument("--calls", type=int, default=10, help="timed calls per figure in each process (median)")
    parser.add_argument("--run-only", action="store_true", help="time run.py only (not agents.py)")
    parser.add_argument("--with-baseline", action="store_true", help="add run.py's figures of benchmarks/baseline.py")
    args = parser.parse_args()
    options = dict(configs=tuple(args.configs), calls=args.calls, run_only=args.run_only, with_baseline=args.with_baseline)
    times: dict[str, dict[str, list[float]]] = {"old": {}, "new": {}}
    with tempfile.TemporaryDirectory() as scratch:
        for round_index in range(args.rounds):
            for label, tree in (("old", args.old), ("new", args.new)):
                out = Path(scratch) / f"{label}_{round_index}"
                out.mkdir()
                for name, value in time_tree(tree.resolve(), out, **options).items():
                    times[label].setdefault(name, []).append(value)
                print(f"round {round_index + 1}/{args.rounds}: {label} done", file=sys.stderr)
    print(f"| figure (ms, median of {args.rounds} alternating runs) | old | new | new / old |")
    print("|---|---|---|---|")
    for name, old_values in times["old"].items():
        old, new = statistics.median(old_values), statistics.median(times["new"][name])
        print(f"| {name} | {old:.2f} | {new:.2f} | {new / old:.3f} |")


if __name__ == "__main__":
    main()
