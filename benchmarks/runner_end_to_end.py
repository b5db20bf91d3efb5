"""
End to end, from the runner's own timings: the MaxDiff and NN-MPPI seeds of one body trained as one mixed batch
(``run --batch-cells``) against the two batches of one method each that ``run --batch-seeds`` makes, then
evaluated (``--batch-eval``: each batch's agents together), one configuration after the other on the same
machine. Figures are per agent-step: training seconds (``train_seconds`` of ``result.json``: model building,
CUDA-graph capture and checkpoints included) over every agent's training steps; the same for the training steps after
the first quarter (``late_train_pace``: the pace of a long run, without those fixed costs; checkpoints included); and
evaluation seconds over every agent's evaluation steps (every evaluation episode counted at full length, 1,000 steps
where the run sets none, as the Swimmer's always are).

    python benchmarks/runner_end_to_end.py --device cuda --cuda-graph --seeds 10 --steps 2000   # 20 agents on a GPU
    python benchmarks/runner_end_to_end.py --seeds 2 --steps 300                               # 4 agents on a CPU
    python benchmarks/runner_end_to_end.py --device cuda --cuda-graph --configurations mixed --env-threads 16
    python benchmarks/runner_end_to_end.py --device cuda --cuda-graph --configurations mixed --env-threads 8 --overlap-updates

The defaults are the heavy-tail Swimmer of ``swimmer-methods`` (MaxDiff alpha 100 and NN-MPPI, the reduced budget's
5 evaluation episodes of 1,000 steps per seed).
"""

import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile
import time

CONFIGURATIONS = {"mixed": ("one mixed batch", "--batch-cells"), "per-method": ("a batch per method", "--batch-seeds")}


def runner_command(batching: str, args: argparse.Namespace, out: str) -> list[str]:
    """The ``run`` command that trains and evaluates every run with ``batching`` ("--batch-cells" or "--batch-seeds")."""
    return [
        sys.executable,
        "-m",
        "sb3_maxdiff.experiments",
        "run",
        args.preset,
        "--budget",
        args.budget,
        "--steps",
        str(args.steps),
        "--seeds",
        str(args.seeds),
        "--settings",
        args.setting,
        "--methods",
        *args.methods,
        batching,
        "--batch-eval",
        "--jobs",
        "1",
        "--threads",
        str(args.threads),
        "--env-threads",
        str(args.env_threads),
        "--device",
        args.device,
        "--out",
        out,
        *(["--cuda-graph"] if args.cuda_graph else []),
        *(["--overlap-updates"] if args.overlap_updates else []),
    ]


def run_configuration(batching: str, args: argparse.Namespace, out: str) -> float:
    """Run :func:`runner_command` in a child process; returns its wall-clock seconds."""
    command = runner_command(batching, args, out)
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=args.quiet, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} exited with status {done.returncode}:\n{(done.stderr or '')[-3000:]}")
    return time.perf_counter() - start


def per_agent_step_costs(out: str) -> dict:
    """
    Training and evaluation cost per agent-step of the runs under ``out`` (the runner's own timings; the runs of one
    batch share their batch's seconds), batch by batch and over all of them.
    """
    batches: dict[tuple, dict] = {}
    for path in sorted(glob.glob(os.path.join(out, "**", "result.json"), recursive=True)):
        with open(path) as file:
            result = json.load(file)
        members = tuple(result.get("batched_runs") or result.get("batched_seeds") or [result["spec"]["seed"]])
        spec = result["spec"]
        key = (members, spec["method"]) if "batched_runs" not in result else (members,)
        batch = batches.setdefault(key, {"agents": len(members), "train_seconds": result["train_seconds"]})
        pace = result.get("late_train_pace")
        batch["late"] = None if pace is None else (pace["seconds"], pace["agent_steps"] * len(members))
        batch["eval_seconds"] = result["eval_seconds"]
        eval_steps = sum(len(returns) for returns in result["eval_returns"].values()) * (spec["max_episode_steps"] or 1000)
        batch["train_agent_steps"] = batch.get("train_agent_steps", 0) + spec["steps"]
        batch["eval_agent_steps"] = batch.get("eval_agent_steps", 0) + eval_steps
    train = sum(batch["train_seconds"] for batch in batches.values())
    evaluation = sum(batch["eval_seconds"] for batch in batches.values())
    train_steps = sum(batch["train_agent_steps"] for batch in batches.values())
    eval_steps = sum(batch["eval_agent_steps"] for batch in batches.values())
    late = [batch["late"] for batch in batches.values()]
    late_ms = None if None in late else 1e3 * sum(seconds for seconds, _ in late) / sum(steps for _, steps in late)
    return {
        "batches": [batch["agents"] for batch in batches.values()],
        "train_ms_per_agent_step": 1e3 * train / train_steps,
        "late_train_ms_per_agent_step": late_ms,
        "eval_ms_per_agent_step": 1e3 * evaluation / eval_steps if eval_steps else None,  # None: single-shot, no evaluation
        "train_seconds": train,
        "eval_seconds": evaluation,
    }


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--preset", default="swimmer-methods")
    parser.add_argument("--setting", default="heavy")
    parser.add_argument("--methods", nargs="+", default=["maxdiff", "nnmppi"])
    parser.add_argument("--budget", default="reduced")
    parser.add_argument("--seeds", type=int, default=10, help="seeds per method")
    parser.add_argument("--steps", type=int, default=2000, help="training steps per agent")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--cuda-graph", action="store_true")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--env-threads", type=int, default=1, help="the runner's --env-threads (1: one after the other)")
    parser.add_argument(
        "--overlap-updates", action="store_true", help="the runner's --overlap-updates (updates while the envs step)"
    )
    parser.add_argument(
        "--configurations",
        nargs="+",
        choices=sorted(CONFIGURATIONS),
        default=list(CONFIGURATIONS),
        help="which of the two to run (default: both, the mixed batch first)",
    )
    parser.add_argument("--json", default=None, help="also write the rows to this file")
    parser.add_argument("--quiet", action="store_true", help="leave out the runner's own output (shown if it fails)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> list[dict]:
    args = parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory() as directory:
        for label, batching in (CONFIGURATIONS[name] for name in args.configurations):
            out = os.path.join(directory, batching.strip("-"))
            wall = run_configuration(batching, args, out)
            rows.append({"configuration": label, "wall_seconds": wall, **per_agent_step_costs(out)})
    print(
        "| configuration | batches (agents) | training, ms / agent-step | training after its first quarter | "
        "evaluation, ms / agent-step | eval / train | wall |"
    )
    print("|---|---|---|---|---|---|---|")
    for row in rows:
        evaluation, late = row["eval_ms_per_agent_step"], row["late_train_ms_per_agent_step"]
        ratio = "-" if evaluation is None else f"{evaluation / row['train_ms_per_agent_step']:.2f}"
        print(
            f"| {row['configuration']} | {' + '.join(map(str, row['batches']))} | {row['train_ms_per_agent_step']:.3f} | "
            f"{'-' if late is None else f'{late:.3f}'} | {'-' if evaluation is None else f'{evaluation:.3f}'} | {ratio} | "
            f"{row['wall_seconds']:.0f} s |"
        )
    if args.json:
        with open(args.json, "w") as file:
            json.dump({"args": vars(args), "rows": rows}, file, indent=1)
    return rows


if __name__ == "__main__":
    main()
