"""
The ``single-shot`` command: one reset-free training run, the return of every window logged and the distance
travelled along x printed at the end.

    python -m sb3_maxdiff.experiments single-shot --algo maxdiff --env sb3_maxdiff/Swimmer-light-v0 \\
        --steps 5000 --csv results/single_shot.csv --kwargs '{"n_samples": 100}'

The algorithm is built with the paper's single-shot settings for the environment where the paper has them (the
runner's single-shot cells: the light Swimmer, the Ant, HalfCheetah), else with its published multi-shot settings
for it (``hyperparams/``), else with the algorithm's defaults; ``--defaults`` always takes the defaults, and
``--kwargs`` go on top in every case.

With ``--checkpoint-dir`` the run keeps a checkpoint there (model, replay buffer, every random stream, the
environment where it was and the windows so far) every ``--checkpoint-every`` steps, and when it stops before
``--time-limit`` or on SIGTERM / Ctrl-C (exit status 3); the same command then carries on from it exactly.
"""

import argparse
import json
import os
import time
from typing import Any

import torch

from sb3_maxdiff.experiments.commands.arguments import (
    describe_time_limit,
    duration_seconds,
    json_kwargs,
    non_negative_int,
    positive_int,
)
from sb3_maxdiff.experiments.define.algos import ALGOS, get_algo
from sb3_maxdiff.experiments.define.specs import CHECKPOINT_FILE, write_json
from sb3_maxdiff.experiments.run.checkpoints import load_checkpoint, remove_checkpoints
from sb3_maxdiff.experiments.run.options import EXIT_TIME_LIMIT, Deadline, StopRequest
from sb3_maxdiff.experiments.run.single_shot import (
    SingleShotResult,
    WindowReturnLogger,
    learn_single_shot,
    make_single_shot_env,
    single_shot_settings,
)
from sb3_maxdiff.experiments.run.training import Progress, TrainingHook

# what a checkpoint folder's run was started with: a resuming command must give the same
COMMAND_FILE = "command.json"
CHECKPOINT_EVERY = 5000  # steps between two checkpoints unless --checkpoint-every says otherwise


def _parser(prog: str | None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=prog, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--algo", required=True, choices=sorted(ALGOS))
    parser.add_argument("--env", required=True, help="registered environment id")
    parser.add_argument("--steps", type=positive_int, default=10_000)
    parser.add_argument("--window", type=positive_int, default=1000)
    parser.add_argument("--seed", type=non_negative_int, default=0)
    parser.add_argument("--csv", default=None, help="CSV file for the window returns")
    parser.add_argument("--save", default=None, help="where to save the trained model")
    parser.add_argument(
        "--kwargs", type=json_kwargs, default={}, help="algorithm keyword arguments as JSON, on top of the settings"
    )
    parser.add_argument(
        "--defaults", action="store_true", help="start from the algorithm's defaults instead of the paper's settings"
    )
    parser.add_argument("--progress-bar", action="store_true")
    parser.add_argument("--threads", type=positive_int, default=1, help="torch threads (more oversubscribe a busy machine)")
    parser.add_argument(
        "--checkpoint-dir",
        default=None,
        help="keep a checkpoint of the run in this folder (every --checkpoint-every steps, and when it stops before "
        "--time-limit or on SIGTERM / Ctrl-C); the same command carries on from it",
    )
    parser.add_argument(
        "--checkpoint-every",
        type=positive_int,
        default=None,
        help=f"steps between checkpoints (with --checkpoint-dir; default {CHECKPOINT_EVERY})",
    )
    parser.add_argument(
        "--time-limit",
        type=duration_seconds,
        default=None,
        help="stop with a checkpoint before this much time has passed (minutes, or e.g. 2h, 1h30m, 45m; with "
        "--checkpoint-dir): exit status 3, and the same command carries on",
    )
    return parser


def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    """The ``single-shot`` command; its exit status (3: stopped by the time limit, with a checkpoint)."""
    parser = _parser(prog)
    args = parser.parse_args(argv)
    # the arguments the command passes itself (a second value would be a TypeError deep in the algorithm)
    own_arguments = {"seed": "give --seed", "env": "give --env", "policy": "the command always builds an MlpPolicy"}
    for key in sorted(own_arguments.keys() & args.kwargs.keys()):
        parser.error(f"--kwargs may not set {key!r}: {own_arguments[key]}")
    if args.checkpoint_dir is None:
        for option, value in (("--time-limit", args.time_limit), ("--checkpoint-every", args.checkpoint_every)):
            if value is not None:
                parser.error(f"{option} needs --checkpoint-dir (where the stopped run's checkpoint goes)")
    torch.set_num_threads(args.threads)

    settings, source = (
        ({}, f"{args.algo}'s defaults (--defaults)") if args.defaults else single_shot_settings(args.algo, args.env)
    )
    print(f"settings: {source}" + (f"; --kwargs on top: {args.kwargs}" if args.kwargs else ""))
    kwargs = {**settings, **args.kwargs}
    result: SingleShotResult | None
    if args.checkpoint_dir is None:
        model = get_algo(args.algo)("MlpPolicy", make_single_shot_env(args.env), seed=args.seed, **kwargs)
        result = learn_single_shot(model, args.steps, args.window, args.csv, progress_bar=args.progress_bar)
    else:
        model, result = _learn_with_checkpoints(args, kwargs, parser)
    if result is None:
        return EXIT_TIME_LIMIT
    if args.save:
        model.save(args.save)
    print(f"window returns: {[round(r, 2) for r in result.window_returns]}")
    print(f"final distance along x: {result.final_distance:.3f}")
    return 0


def _command(args: argparse.Namespace, kwargs: dict[str, Any]) -> dict[str, Any]:
    """What makes a checkpointed run the same run (as JSON reads it back): a resuming command must match it."""
    fields = {"algo": args.algo, "env": args.env, "seed": args.seed, "steps": args.steps, "window": args.window}
    return json.loads(json.dumps({**fields, "csv": args.csv and os.path.abspath(args.csv), "kwargs": kwargs}))


def _learn_with_checkpoints(
    args: argparse.Namespace, kwargs: dict[str, Any], parser: argparse.ArgumentParser
) -> tuple[Any, SingleShotResult | None]:
    """
    Train with checkpoints in ``args.checkpoint_dir``, from the one there if any (its command must be this one);
    the model and the result, or None for it where the run stopped with a checkpoint (time limit, signal).
    """
    directory, algo = args.checkpoint_dir, get_algo(args.algo)
    command = _command(args, kwargs)
    logger = WindowReturnLogger(args.window, args.csv)
    if os.path.exists(os.path.join(directory, CHECKPOINT_FILE)):
        if not os.path.exists(os.path.join(directory, COMMAND_FILE)):
            parser.error(f"--checkpoint-dir {directory} holds a checkpoint this command did not write (a runner's?)")
        with open(os.path.join(directory, COMMAND_FILE)) as file:
            started = json.load(file)
        differing = sorted(key for key in command if command[key] != started.get(key))
        if differing:
            parser.error(
                f"--checkpoint-dir {directory} holds a run started with other {', '.join(differing)} "
                f"({', '.join(f'{key}={started.get(key)!r}' for key in differing)}): give the same, or another folder"
            )
        model, checkpoint, _ = load_checkpoint(algo, directory, make_single_shot_env(args.env), 1, [logger])
        done = checkpoint["agent_timesteps"]
        print(f"carrying on from the checkpoint at step {done} of {args.steps} in {directory}")
    else:
        os.makedirs(directory, exist_ok=True)
        remove_checkpoints(directory)
        write_json(os.path.join(directory, COMMAND_FILE), command)
        model, done = algo("MlpPolicy", make_single_shot_env(args.env), seed=args.seed, **kwargs), 0
    if args.time_limit is not None:
        print(describe_time_limit(args.time_limit), flush=True)
    deadline = Deadline(None if args.time_limit is None else time.time() + args.time_limit)
    every = args.checkpoint_every or CHECKPOINT_EVERY
    hook = TrainingHook(directory, every, Progress(None), deadline, single_shot=[logger])
    with StopRequest.installed():
        result = learn_single_shot(model, args.steps - done, callback=[hook], logger=logger, progress_bar=args.progress_bar)
        reason = hook.deadline.reason()
    if hook.stopped:
        print(
            f"{reason} at {hook.last_checkpoint} of {args.steps} steps, checkpoint in {directory}: the same command carries on"
        )
        return model, None
    remove_checkpoints(directory)
    return model, result
