"""
What an automatic alpha could aim at: at each body's published alpha, the spread over the planner's samples of the
entropy term ``alpha * S`` against that of the predicted return ``R`` and against the temperature, per agent and
planning step of a short training run (seeds batched as independent agents, published settings otherwise)::

    python benchmarks/alpha_scales.py --bodies point-mass swimmer-heavy --steps 3000 --seeds 3 --csv scales.csv

Printed per body and seed: the medians over the second half of the run of
``rho_R = alpha * std_k(S) / std_k(R)`` and ``rho_T = alpha * std_k(S) / temperature``, and of the spreads themselves.
"""

import argparse
import csv
import time

import numpy as np
import torch as th
from stable_baselines3.common.env_util import make_vec_env

import sb3_maxdiff  # noqa: F401  (registers the environments)
from sb3_maxdiff import MaxDiffMPPI
from sb3_maxdiff.common.mppi import STAT_NAMES
from sb3_maxdiff.experiments.define.presets import published_kwargs

BODIES = {
    "point-mass": "sb3_maxdiff/PointMassUnbounded-beta0_01-v0",
    "swimmer-heavy": "sb3_maxdiff/Swimmer-heavy-v0",
    "swimmer-light": "sb3_maxdiff/Swimmer-light-v0",
    "halfcheetah": "sb3_maxdiff/HalfCheetah-v0",
    "ant": "sb3_maxdiff/Ant-v0",
}
RETURN_SPREAD, ENTROPY_SPREAD = STAT_NAMES.index("return_spread"), STAT_NAMES.index("entropy_spread")


class Recorder(MaxDiffMPPI):
    """MaxDiffMPPI that keeps each training plan's spreads and alphas (a host copy per step: measurement only)."""

    rows: list[np.ndarray]

    def _planned(self, stats: th.Tensor) -> None:
        super()._planned(stats)
        bonus = self.policy.entropy_bonus
        assert bonus is not None  # a MaxDiff agent has one
        alpha = bonus.alpha.expand(stats.shape[0])
        self.rows.append(th.stack([stats[:, RETURN_SPREAD], stats[:, ENTROPY_SPREAD], alpha.to(stats.dtype)], 1).cpu().numpy())


def measure(body: str, steps: int, seeds: int) -> list[dict]:
    env_id = BODIES[body]
    kwargs = published_kwargs("maxdiff", env_id)
    env = make_vec_env(env_id, n_envs=seeds, seed=0)
    model = Recorder(env=env, independent_agents=True, seed=0, device="cpu", **kwargs)
    model.rows = []
    start = time.perf_counter()
    model.learn(steps * seeds)
    seconds = time.perf_counter() - start
    table = np.stack(model.rows)  # (steps, seeds, 3)
    temperature = kwargs["temperature"]
    rows = []
    for step, per_agent in enumerate(table):
        for seed, (return_spread, entropy_spread, alpha) in enumerate(per_agent):
            rows.append(
                dict(
                    body=body,
                    seed=seed,
                    step=step,
                    alpha=alpha,
                    temperature=temperature,
                    return_spread=return_spread,
                    entropy_spread=entropy_spread,
                )
            )
    print(f"{body}: {steps} steps x {seeds} seeds in {seconds:.0f} s")
    return rows


def summarise(rows: list[dict]) -> None:
    print(f"{'body':14s} {'seed':>4s} {'alpha':>7s} {'std R':>9s} {'std S':>9s} {'rho_R':>8s} {'rho_T':>8s}")
    for body in dict.fromkeys(row["body"] for row in rows):
        for seed in sorted({row["seed"] for row in rows if row["body"] == body}):
            mine = [row for row in rows if row["body"] == body and row["seed"] == seed]
            late = mine[len(mine) // 2 :]
            spread_r = np.array([row["return_spread"] for row in late])
            spread_s = np.array([row["entropy_spread"] for row in late])
            alpha = np.array([row["alpha"] for row in late])
            rho_r = np.median(alpha * spread_s / np.maximum(spread_r, 1e-12))
            rho_t = np.median(alpha * spread_s / late[0]["temperature"])
            print(
                f"{body:14s} {seed:4d} {np.median(alpha):7.2f} {np.median(spread_r):9.4f} {np.median(spread_s):9.4f}"
                f" {rho_r:8.3f} {rho_t:8.2f}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bodies", nargs="+", choices=sorted(BODIES), default=list(BODIES))
    parser.add_argument("--steps", type=int, default=3000, help="environment steps per agent")
    parser.add_argument("--seeds", type=int, default=3, help="independent agents (seeds) batched in one model")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--csv", default=None, help="write every (body, seed, step) row here")
    args = parser.parse_args()
    th.set_num_threads(args.threads)
    rows: list[dict] = []
    for body in args.bodies:
        rows += measure(body, args.steps, args.seeds)
        summarise(rows)
        if args.csv:
            with open(args.csv, "w", newline="") as file:
                writer = csv.DictWriter(file, fieldnames=list(rows[0]))
                writer.writeheader()
                writer.writerows(rows)


if __name__ == "__main__":
    main()
