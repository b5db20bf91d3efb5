"""
A known answer for the actor-critic terminal value on Pendulum-v1: SB3's SAC, and the 2-step NN-MPPI planner without a
value and with the critic (``terminal_value="q"``), at one budget, the same seeds, one update of 256 rows per step for
every arm (SAC's learning rate 1e-3 and gamma 0.99 from RL Zoo's Pendulum-v1 entry, for all three).

    python benchmarks/pendulum_critic.py --steps 5000 --seeds 0 1 2 --out pendulum_critic.csv

Each run is evaluated on 10 episodes of a fresh environment (seeded 1000 + seed), deterministically: the planner
with its fixed sampling noise, and, for the critic arm, its actor alone as well (``predict(..., planner=False)``).
One CSV row per (arm, seed), written as soon as the run ends (``--resume`` skips the rows already there).
``--critic-reward-discount 0.95`` gives the critic arm the paper's TD-like reward head (the runs before the library's
default with a terminal value became 0, the one-step reward).
"""

import argparse
import csv
import time
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch as th
from stable_baselines3 import SAC

from sb3_maxdiff import NNMPPI

ENV_ID = "Pendulum-v1"
ARMS = ("sac", "planner", "planner-q")
COMMON: dict[str, Any] = dict(learning_rate=1e-3, batch_size=256, gradient_steps=1, gamma=0.99, learning_starts=256)
PLANNER: dict[str, Any] = dict(horizon=2, n_samples=500)
EVAL_EPISODES = 10
FIELDS = ("arm", "seed", "steps", "eval_return", "eval_std", "actor_eval_return", "actor_eval_std", "seconds")


def make(arm: str, seed: int, critic_reward_discount: float | None = None) -> SAC | NNMPPI:
    """The arm's algorithm on a fresh Pendulum-v1 (the critic arm's reward head with ``critic_reward_discount``; None:
    the library's default)."""
    if arm == "sac":
        return SAC("MlpPolicy", ENV_ID, seed=seed, device="cpu", **COMMON)  # type: ignore[arg-type]
    if arm == "planner":
        return NNMPPI(ENV_ID, seed=seed, device="cpu", **PLANNER, **COMMON)  # type: ignore[arg-type]
    policy_kwargs = {} if critic_reward_discount is None else {"reward_discount": critic_reward_discount}
    return NNMPPI(ENV_ID, terminal_value="q", policy_kwargs=policy_kwargs, seed=seed, device="cpu", **PLANNER, **COMMON)


def evaluate(model: SAC | NNMPPI, seed: int, episodes: int, planner: bool = True) -> tuple[float, float]:
    """Mean and std of the returns of ``episodes`` deterministic episodes."""
    env, returns = gym.make(ENV_ID), []
    for episode in range(episodes):
        obs, _ = env.reset(seed=1000 + seed + 100 * episode)
        state, start, total, done = None, np.array([True]), 0.0, False
        while not done:
            if isinstance(model, NNMPPI):
                action, state = model.predict(obs, state, start, deterministic=True, planner=planner)
            else:
                action, state = model.predict(obs, state, start, deterministic=True)
            obs, reward, terminated, truncated, _ = env.step(action)
            total, done, start = total + float(reward), terminated or truncated, np.array([False])
        returns.append(total)
    return float(np.mean(returns)), float(np.std(returns))


def run(
    arm: str, seed: int, steps: int, episodes: int = EVAL_EPISODES, critic_reward_discount: float | None = None
) -> dict[str, object]:
    start = time.perf_counter()
    model = make(arm, seed, critic_reward_discount)
    model.learn(steps)
    seconds = time.perf_counter() - start
    mean, std = evaluate(model, seed, episodes)
    row: dict[str, object] = dict(arm=arm, seed=seed, steps=steps, eval_return=f"{mean:.1f}", eval_std=f"{std:.1f}")
    if arm == "planner-q":
        actor_mean, actor_std = evaluate(model, seed, episodes, planner=False)
        row.update(actor_eval_return=f"{actor_mean:.1f}", actor_eval_std=f"{actor_std:.1f}")
    row["seconds"] = f"{seconds:.0f}"
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=5000, help="training steps of every run")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--arms", nargs="+", choices=ARMS, default=list(ARMS))
    parser.add_argument("--out", type=Path, default=Path("pendulum_critic.csv"), help="the per-seed CSV")
    parser.add_argument("--eval-episodes", type=int, default=EVAL_EPISODES, help="evaluation episodes of each run")
    parser.add_argument("--resume", action="store_true", help="keep the rows of --out and run only the missing ones")
    parser.add_argument(
        "--critic-reward-discount", type=float, default=None, help="the critic arm's reward_discount (default: the library's)"
    )
    args = parser.parse_args()
    th.set_num_threads(1)
    done: set[tuple[str, int]] = set()
    if args.resume and args.out.exists():
        with args.out.open() as file:
            done = {(row["arm"], int(row["seed"])) for row in csv.DictReader(file) if int(row["steps"]) == args.steps}
    else:
        with args.out.open("w", newline="") as file:
            csv.DictWriter(file, FIELDS).writeheader()
    for seed in args.seeds:
        for arm in args.arms:
            if (arm, seed) in done:
                continue
            row = run(arm, seed, args.steps, args.eval_episodes, args.critic_reward_discount)
            print(row, flush=True)
            with args.out.open("a", newline="") as file:
                csv.DictWriter(file, FIELDS).writerow(row)


if __name__ == "__main__":
    main()
