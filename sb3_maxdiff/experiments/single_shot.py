"""
Single-shot ("reset-free") learning: one environment episode for the whole run, never reset and
never truncated, learning as it goes; the return of every 1,000-step window is logged and the task
metric is the distance travelled along x.

    python -m sb3_maxdiff.experiments single-shot --algo maxdiff --env sb3_maxdiff/Swimmer-heavy-v0 \\
        --steps 5000 --csv results/single_shot.csv --kwargs '{"n_samples": 100}'
"""

import argparse
import dataclasses
import json
from typing import Any, NamedTuple

import gymnasium as gym
import torch
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.callbacks import CallbackList
from stable_baselines3.common.type_aliases import MaybeCallback

from sb3_maxdiff.common.callbacks import WindowReturnLogger
from sb3_maxdiff.envs import ANT
from sb3_maxdiff.experiments.algos import ALGOS, get_algo
from sb3_maxdiff.experiments.arguments import non_negative_int, positive_int


class SingleShotResult(NamedTuple):
    window_returns: list[float]
    final_distance: float


def make_single_shot_env(env_id: str, **env_kwargs: Any) -> gym.Env:
    """
    The environment ``env_id`` without its time limit; the paper's Ant also without its
    upside-down termination, so that the single episode never ends.
    """
    spec = dataclasses.replace(gym.spec(env_id), max_episode_steps=None)
    if env_id == ANT:
        env_kwargs.setdefault("terminate_when_upside_down", False)
    return gym.make(spec, **env_kwargs)


def learn_single_shot(
    model: BaseAlgorithm,
    total_timesteps: int,
    window: int = 1000,
    csv_path: str | None = None,
    callback: MaybeCallback = None,
    progress_bar: bool = False,
) -> SingleShotResult:
    """
    Train ``model`` (built on a :func:`make_single_shot_env` environment) in one episode, logging the
    return of each ``window`` steps and the x distance travelled.
    """
    logger = WindowReturnLogger(window, csv_path)
    callbacks = [logger] if callback is None else [logger, *(callback if isinstance(callback, list) else [callback])]
    model.learn(total_timesteps, callback=CallbackList(callbacks), progress_bar=progress_bar)
    model.logger.record("single_shot/final_x_distance", logger.x_distance)
    model.logger.dump(model.num_timesteps)
    return SingleShotResult(logger.window_returns, logger.x_distance)


def main(argv: list[str] | None = None, prog: str | None = None) -> SingleShotResult:
    parser = argparse.ArgumentParser(prog=prog, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--algo", required=True, choices=sorted(ALGOS))
    parser.add_argument("--env", required=True, help="registered environment id")
    parser.add_argument("--steps", type=positive_int, default=10_000)
    parser.add_argument("--window", type=positive_int, default=1000)
    parser.add_argument("--seed", type=non_negative_int, default=0)
    parser.add_argument("--csv", default=None, help="CSV file for the window returns")
    parser.add_argument("--save", default=None, help="where to save the trained model")
    parser.add_argument("--kwargs", type=json.loads, default={}, help="algorithm keyword arguments as JSON")
    parser.add_argument("--progress-bar", action="store_true")
    parser.add_argument("--threads", type=positive_int, default=1, help="torch threads (more oversubscribe a busy machine)")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)

    model = get_algo(args.algo)("MlpPolicy", make_single_shot_env(args.env), seed=args.seed, **args.kwargs)
    result = learn_single_shot(model, args.steps, args.window, args.csv, progress_bar=args.progress_bar)
    if args.save:
        model.save(args.save)
    print(f"window returns: {[round(r, 2) for r in result.window_returns]}")
    print(f"final distance along x: {result.final_distance:.3f}")
    return result
