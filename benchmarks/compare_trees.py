"""
Two checkouts of this repository timed against each other, e.g. a commit before a restructuring and after it:
``benchmarks/run.py`` and ``benchmarks/agents.py`` of each tree, run from that tree in alternating fresh
processes (old, new, old, new, ...), so that a slow spell of the machine hits both alike::

    git worktree add ../before <commit>
    python benchmarks/compare_trees.py ../before . --rounds 3

Prints, per figure, the median over the rounds of each tree and the ratio new / old (below 1: the new tree
is faster).
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
COMMON = ["--configs", "point-mass", "swimmer", "--calls", "10", "--threads", "1"]


def time_tree(tree: Path, out: Path) -> dict[str, float]:
    """One round of both benchmarks run from ``tree`` (its own code and scripts): figure name -> ms."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    run_json, agents_json = out / "run.json", out / "agents.json"
    run = [sys.executable, "benchmarks/run.py", *COMMON, "--no-scaling", "--bf16-seconds", "0.5", "--json", str(run_json)]
    agents = [sys.executable, "benchmarks/agents.py", *COMMON, "--agents", "1", "4", "--json", str(agents_json)]
    for command in (run, agents):
        subprocess.run(command, cwd=tree, env=env, check=True, capture_output=True)
    figures = {}
    for row in json.loads(run_json.read_text())["configs"]:
        figures.update({f"{row['config']} {name}": row[name] for name in RUN_FIGURES})
    for row in json.loads(agents_json.read_text())["rows"]:
        figures[f"{row['config']} N={row['n_agents']} batched ms/agent-step"] = row["batched_ms_per_agent_step"]
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("old", type=Path, help="checkout timed first in each round")
    parser.add_argument("new", type=Path, help="checkout timed second in each round")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    times: dict[str, dict[str, list[float]]] = {"old": {}, "new": {}}
    with tempfile.TemporaryDirectory() as scratch:
        for round_index in range(args.rounds):
            for label, tree in (("old", args.old), ("new", args.new)):
                out = Path(scratch) / f"{label}_{round_index}"
                out.mkdir()
                for name, value in time_tree(tree.resolve(), out).items():
                    times[label].setdefault(name, []).append(value)
                print(f"round {round_index + 1}/{args.rounds}: {label} done", file=sys.stderr)
    print(f"| figure (ms, median of {args.rounds} alternating runs) | old | new | new / old |")
    print("|---|---|---|---|")
    for name, old_values in times["old"].items():
        old, new = statistics.median(old_values), statistics.median(times["new"][name])
        print(f"| {name} | {old:.2f} | {new:.2f} | {new / old:.3f} |")


if __name__ == "__main__":
    main()
