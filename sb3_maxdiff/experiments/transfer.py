"""
Transfer across embodiments: evaluate a model trained on one environment on another with the same
spaces (the paper's light <-> heavy swimmer experiment, Fig. 4).

    python -m sb3_maxdiff.experiments transfer --algo maxdiff --model swimmer_heavy.zip \\
        --env sb3_maxdiff/Swimmer-light-v0 --episodes 10
"""

import argparse
from typing import NamedTuple

import gymnasium as gym
import numpy as np
import torch
from stable_baselines3.common.evaluation import evaluate_policy

from sb3_maxdiff.experiments.algos import ALGOS, get_algo
from sb3_maxdiff.experiments.arguments import non_negative_int, positive_int


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
    returns, _ = evaluate_policy(
        model, model.get_env(), n_eval_episodes=n_episodes, deterministic=False, return_episode_rewards=True
    )
    returns = [float(r) for r in returns]
    return TransferResult(float(np.mean(returns)), float(np.std(returns)), returns)


def main(argv: list[str] | None = None, prog: str | None = None) -> TransferResult:
    parser = argparse.ArgumentParser(prog=prog, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--algo", required=True, choices=sorted(ALGOS))
    parser.add_argument("--model", required=True, help="path of the saved model (.zip)")
    parser.add_argument("--env", required=True, help="environment to evaluate on")
    parser.add_argument("--episodes", type=positive_int, default=10)
    parser.add_argument("--seed", type=non_negative_int, default=0)
    parser.add_argument("--threads", type=positive_int, default=1, help="torch threads (more oversubscribe a busy machine)")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    result = evaluate_transfer(args.model, args.algo, args.env, args.episodes, args.seed)
    print(f"{args.env}: episode return {result.mean:.2f} +/- {result.std:.2f} over {len(result.returns)} episodes")
    return result
