"""
``python -m sb3_maxdiff.experiments run``: train and evaluate the (setting, method, seed) runs of a paper preset,
locally in parallel processes or on a Ray cluster, skipping the runs already finished on disk, so that a killed
sweep resumes where it stopped.

    python -m sb3_maxdiff.experiments run point-mass-beta --budget reduced --seeds 5 --out results

With ``--batch-seeds`` the seeds of each NN-MPPI / MaxDiff cell train together in one process, as the
independent agents of one model (one batched rollout and one batched update per step), and write the same
per-seed files as separate runs (single-shot cells too, each agent on its own never-ending environment); SAC
cells run one seed per process as usual. With ``--batch-cells`` the runs of every NN-MPPI / MaxDiff cell that can
share one model train together: the MaxDiff agents of several alphas and the NN-MPPI agents (alpha 0, control term
on) of one body.
"""

import argparse
import sys
import time

from sb3_maxdiff.experiments.commands.arguments import (
    describe_time_limit,
    duration_seconds,
    gpu_share,
    non_negative_int,
    positive_int,
)
from sb3_maxdiff.experiments.define.presets import BUDGETS, PRESETS, get_budget
from sb3_maxdiff.experiments.define.specs import build_specs, is_finished
from sb3_maxdiff.experiments.run.options import EXIT_TIME_LIMIT, ExecutionOptions
from sb3_maxdiff.experiments.run.runner import run_specs

# exit status of ``run``: 0 every run finished; 1 a run failed (error.txt in its folder); EXIT_TIME_LIMIT (3) runs
# were stopped before --time-limit or by SIGTERM / SIGINT, their training checkpointed: the same command resumes them
EXIT_FAILED = 1


def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    parser = argparse.ArgumentParser(prog=prog, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("preset", choices=sorted(PRESETS))
    parser.add_argument("--budget", choices=BUDGETS, default="reduced")
    parser.add_argument("--seeds", type=positive_int, default=None, help="how many seeds (default: the budget's)")
    parser.add_argument(
        "--first-seed",
        type=non_negative_int,
        default=0,
        help="run seeds K..K+N-1 instead of 0..N-1, e.g. to add seeds to a cell already run",
    )
    parser.add_argument(
        "--steps",
        type=positive_int,
        default=None,
        help="environment steps per run instead of the budget's (stored apart, as budget '<budget>-<steps>-steps')",
    )
    parser.add_argument("--out", default="results", help="results folder")
    parser.add_argument("--settings", nargs="+", default=None, help="only these settings of the preset")
    parser.add_argument("--methods", nargs="+", default=None, help="only these methods")
    parser.add_argument("--jobs", type=positive_int, default=None, help="parallel runs (default: cores / threads)")
    parser.add_argument("--threads", type=positive_int, default=1, help="torch threads per run")
    parser.add_argument(
        "--device", default="cpu", help="torch device of each run (a stopped run may resume on another device)"
    )
    parser.add_argument(
        "--cuda-graph",
        action="store_true",
        help="NN-MPPI and MaxDiff replay their planner as a CUDA graph (with --device cuda; not part of a run's spec)",
    )
    parser.add_argument("--ray-address", default=None, help="run on this Ray cluster ('local': a Ray instance here)")
    parser.add_argument(
        "--gpus-per-run",
        type=gpu_share,
        default=None,
        help="GPUs each run asks Ray for, e.g. 0.25 to share a GPU by 4 (default: 1 with a CUDA --device, else 0)",
    )
    parser.add_argument(
        "--batch-seeds",
        action="store_true",
        help="train the seeds of each NN-MPPI / MaxDiff cell in one process, as independent agents (not with Ray)",
    )
    parser.add_argument(
        "--batch-cells",
        action="store_true",
        help="train the runs of all NN-MPPI / MaxDiff cells that can share one model (one body; MaxDiff agents of "
        "several alphas, NN-MPPI agents) in one process, as independent agents (not with Ray)",
    )
    parser.add_argument(
        "--batch-eval",
        action="store_true",
        help="evaluate the runs of a batch (--batch-seeds, --batch-cells) together, one batched planner call per step; "
        "its random draws differ from the default one-at-a-time evaluation of the published runs (not part of a run's "
        "spec; result.json says which evaluation a run had)",
    )
    parser.add_argument(
        "--env-threads",
        type=positive_int,
        default=1,
        help="step the environments of a batch (--batch-seeds, --batch-cells) in this many threads, in training and "
        "in --batch-eval (MuJoCo simulates without Python's lock); the same results as one after the other (the "
        "default); worth it where the planner runs on a GPU and the host's cores are free (not part of a run's spec)",
    )
    parser.add_argument(
        "--overlap-updates",
        action="store_true",
        help="NN-MPPI and MaxDiff make each step's model updates as soon as its actions are planned, so that on a GPU "
        "they run while the host steps the environments; the same results (not part of a run's spec)",
    )
    parser.add_argument(
        "--time-limit",
        type=duration_seconds,
        default=None,
        help="stop before this much time has passed (minutes, or e.g. 2h, 1h30m, 45m): training writes a checkpoint "
        "and an evaluation (not checkpointed) stops as soon as it would not end in time; exit status 3 says runs "
        "are left, and the same command resumes them (for cluster jobs and lent GPUs). SIGTERM or Ctrl-C stops the "
        "runs the same way, at their next step",
    )
    parser.add_argument("--list", action="store_true", help="print the runs and whether they are finished, and stop")
    args = parser.parse_args(argv)

    if args.batch_seeds and args.ray_address is not None:
        parser.error("--batch-seeds runs locally; leave out --ray-address")
    if args.batch_cells and args.ray_address is not None:
        parser.error("--batch-cells runs locally; leave out --ray-address")
    if args.gpus_per_run is not None and args.ray_address is None:
        parser.error("--gpus-per-run is a request to Ray: use it with --ray-address")
    if args.cuda_graph and not args.device.startswith("cuda"):
        parser.error(f"--cuda-graph captures the planner on a CUDA device: add --device cuda (got --device {args.device})")
    seeds = range(args.first_seed, args.first_seed + (args.seeds or get_budget(args.budget).seeds))
    try:
        specs = build_specs(args.preset, args.budget, seeds, args.settings, args.methods, args.device, args.steps)
    except ValueError as error:
        parser.error(str(error))
    if args.list:
        for spec in specs:
            print(f"{'done' if is_finished(args.out, spec) else 'todo'}  {spec.relpath}")
        return 0
    deadline = None if args.time_limit is None else time.time() + args.time_limit
    if deadline is not None and args.ray_address is not None:
        parser.error("--time-limit stops local runs (Ray restarts a stopped task from scratch); leave out --ray-address")
    if args.time_limit is not None:
        print(describe_time_limit(args.time_limit), flush=True)
    options = ExecutionOptions(
        threads=args.threads,
        cuda_graph=args.cuda_graph,
        deadline=deadline,
        batch_eval=args.batch_eval,
        env_threads=args.env_threads,
        overlap_updates=args.overlap_updates,
    )
    skipped, failed = run_specs(
        specs, args.out, args.jobs, options, args.ray_address, args.batch_seeds, args.gpus_per_run, args.batch_cells
    )
    done = sum(is_finished(args.out, spec) for spec in specs)
    print(
        f"{done}/{len(specs)} runs finished ({len(skipped)} were already on disk), {len(failed)} failed; results in {args.out}"
    )
    if failed:
        print("failed: " + "; ".join(spec.name for spec in failed), file=sys.stderr)
        return EXIT_FAILED
    if done < len(specs):
        print(
            f"{len(specs) - done} runs stopped before the time limit or on a signal; run the same command again to resume them"
        )
        return EXIT_TIME_LIMIT
    return 0
