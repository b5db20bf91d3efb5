"""
Transfer across embodiments: evaluate a model trained on one environment on another with the same
spaces (the paper's light <-> heavy swimmer experiment, Fig. 4).

    python -m sb3_maxdiff.experiments transfer --algo maxdiff --model swimmer_heavy.zip \\
        --env sb3_maxdiff/Swimmer-light-v0 --episodes 10 --csv transfer.csv

``--csv`` appends one row per episode (model, algo, env, seed, episode, return), so that the models of several
seeds evaluated one command at a time end in one file; ``tabulate`` reads it (each seed's mean per environment, and
the tests between algorithms).
"""

import argparse
import csv
import os
from typing import NamedTuple

import gymnasium as gym
import numpy as np
import torch
from stable_baselines3.common.evaluation import evaluate_policy

from sb3_maxdiff.experiments.commands.arguments import non_negative_int, positive_int
from sb3_maxdiff.experiments.define.algos import ALGOS, get_algo


class TransferResult(NamedTuple):
    mean: float
    std: float
    returns: list[float]


def evaluate_transfer(
    model_path: str, algo: str, env_id: str, n_episodes: int = 10, seed: int = 0, device: str = "auto"
) -> TransferResult:
    """
    Load the model saved at ``model_path`` and evaluate it on ``env_id`` (same observation and
    action spaces as its training environment) for ``n_episodes`` episodes.
    """
    env = gym.make(env_id)
    model = get_algo(algo).load(model_path, env=env, device=device)  # checks that the spaces match
    model.set_random_seed(seed)
    env.reset(seed=seed)
    # the paper's protocol: the planner samples as in training (its noise from torch's global stream)
    vec_env = model.get_env()
    assert vec_env is not None  # load was given the environment
    episodes, _ = evaluate_policy(model, vec_env, n_eval_episodes=n_episodes, deterministic=False, return_episode_rewards=True)
    returns = [float(r) for r in np.atleast_1d(episodes)]  # one per episode
    return TransferResult(float(np.mean(returns)), float(np.std(returns)), returns)


CSV_FIELDS = ("model", "algo", "env", "seed", "episode", "return")


def append_transfer_csv(path: str, model_path: str, algo: str, env_id: str, seed: int, result: TransferResult) -> None:
    """Append one row per episode of ``result`` to the CSV at ``path`` (its header written when the file is new)."""
    new = not os.path.exists(path) or os.path.getsize(path) == 0
    with open(path, "a", newline="") as file:
        writer = csv.writer(file)
        if new:
            writer.writerow(CSV_FIELDS)
        for episode, episode_return in enumerate(result.returns):
            writer.writerow((model_path, algo, env_id, seed, episode, repr(episode_return)))


def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    """The ``transfer`` command; its exit status."""
    parser = argparse.ArgumentParser(prog=prog, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--algo", required=True, choices=sorted(ALGOS))
    parser.add_argument("--model", required=True, help="path of the saved model (.zip)")
    parser.add_argument("--env", required=True, help="environment to evaluate on")
    parser.add_argument("--episodes", type=positive_int, default=10)
    parser.add_argument("--seed", type=non_negative_int, default=0)
    parser.add_argument("--threads", type=positive_int, default=1, help="torch threads (more oversubscribe a busy machine)")
    parser.add_argument("--csv", default=None, help="append each episode's return to this CSV (made if missing)")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    result = evaluate_transfer(args.model, args.algo, args.env, args.episodes, args.seed)
    print(f"{args.env}: episode return {result.mean:.2f} +/- {result.std:.2f} over {len(result.returns)} episodes")
    if args.csv is not None:
        append_transfer_csv(args.csv, args.model, args.algo, args.env, args.seed, result)
    return 0
