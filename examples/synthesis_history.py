"""
Whether MaxDiff trajectory synthesis over a known model realizes diffusive paths, and what the controller's
``history`` option changes: for a free single integrator, the MSD exponent of the realized path (1: Brownian, 2:
ballistic, 0 or below: bounded) over short lags (10-80 steps) and long ones (100-400), and its radius of gyration;
the spread of the visited positions in a quadratic potential; the share of time in each well of a bimodal one. With
the path entropy over the planned states alone (``history=0``, the paper's synthesis) and over the recent real
states followed by the planned ones.

    python examples/synthesis_history.py

Prints Markdown tables (mean +/- std over the seeds, ddof 1).
"""

import argparse
import itertools
from typing import Any

import numpy as np
import torch as th
from tqdm import tqdm

from sb3_maxdiff.common.ergodicity import mean_squared_displacement
from sb3_maxdiff.synthesis import MPPIController, SingleIntegrator, bimodal_gaussian_potential, quadratic_potential

PLANNER: dict[str, Any] = dict(
    horizon=20, n_samples=200, temperature=0.5, noise_std=0.3, control_cost=False, low=[-1, -1], high=[1, 1]
)
SHORT_LAGS = np.arange(10, 81, 10)  # the MSD exponent's lags, in steps
LONG_LAGS = np.arange(100, 401, 50)


def free_reward(state: th.Tensor, action: th.Tensor) -> th.Tensor:
    return th.zeros(state.shape[0])


def realized_path(running_cost, alpha: float, history: int, start: list[float], steps: int, seed: int) -> np.ndarray:
    """The states a single integrator (dt 0.1) visits under the controller, ``steps`` steps from ``start``."""
    th.manual_seed(seed)
    system = SingleIntegrator(dt=0.1)
    kwargs: dict[str, Any] = dict(running_reward=free_reward) if running_cost is None else dict(running_cost=running_cost)
    controller = MPPIController(system, **kwargs, state_dim=2, action_dim=2, alpha=alpha, history=history, **PLANNER)
    state, path = th.tensor(start, dtype=th.float32), []
    for _ in range(steps):
        path.append(state.numpy().copy())
        state = system(state[None], controller.command(state)[None])[0]
    return np.array(path)


def msd_exponent(path: np.ndarray, lags: np.ndarray = SHORT_LAGS) -> float:
    """Least-squares slope of log MSD against log lag over ``lags``."""
    return float(np.polyfit(np.log(lags), np.log(mean_squared_displacement(path, lags)), 1)[0])


def gyration_radius(path: np.ndarray) -> float:
    """Root mean square distance of the positions from their mean."""
    return float(np.sqrt(((path - path.mean(axis=0)) ** 2).sum(axis=1).mean()))


def mean_std(values: list[float]) -> str:
    return f"{np.mean(values):.2f} +/- {np.std(values, ddof=1):.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=1500, help="control steps per path")
    parser.add_argument("--seeds", type=int, default=3, help="seeds 0 .. n-1 per cell")
    parser.add_argument("--histories", type=int, nargs="+", default=[0, 20, 40, 60, 120])
    parser.add_argument("--alphas", type=float, nargs="+", default=[1.0, 10.0, 100.0])
    args = parser.parse_args()
    th.set_num_threads(1)
    seeds = range(args.seeds)
    free = list(itertools.product(args.histories, args.alphas))
    quadratic = list(itertools.product((0, 40), (0.0, *args.alphas)))
    bimodal = (0, 40)
    bar = tqdm(total=(len(free) + len(quadratic) + len(bimodal)) * len(seeds), unit="path")

    print("\nFree single integrator from the origin: MSD exponent over lags 10-80 / over lags 100-400 / radius of gyration:\n")
    print("| history | " + " | ".join(f"alpha {alpha:g}" for alpha in args.alphas) + " |")
    print("|---" * (len(args.alphas) + 1) + "|")
    for history in args.histories:
        cells = []
        for alpha in args.alphas:
            paths = [realized_path(None, alpha, history, [0.0, 0.0], args.steps, seed) for seed in seeds]
            bar.update(len(paths))
            short, long = [msd_exponent(path) for path in paths], [msd_exponent(path, LONG_LAGS) for path in paths]
            cells.append(f"{mean_std(short)} / {mean_std(long)} / {mean_std([gyration_radius(path) for path in paths])}")
        print(f"| {history} | " + " | ".join(cells) + " |", flush=True)

    print("\nQuadratic potential from (-4, -2): spread of (x, y) over the last two thirds (std, mean over x and y):\n")
    print("| history | " + " | ".join(f"alpha {alpha:g}" for alpha in (0.0, *args.alphas)) + " |")
    print("|---" * (len(args.alphas) + 2) + "|")
    for history in (0, 40):
        cells = []
        for alpha in (0.0, *args.alphas):
            spreads = []
            for seed in seeds:
                path = realized_path(quadratic_potential(), alpha, history, [-4.0, -2.0], args.steps, seed)
                spreads.append(float(path[len(path) // 3 :].std(axis=0).mean()))
                bar.update()
            cells.append(mean_std(spreads))
        print(f"| {history} | " + " | ".join(cells) + " |", flush=True)

    print(
        "\nBimodal potential (wells at x = -2 and x = 2), alpha 10, from (-2, 0): share of steps with x > 0, "
        "and MSD exponent:\n"
    )
    print("| history | share in the right well | MSD exponent |")
    print("|---|---|---|")
    for history in bimodal:
        shares, exponents = [], []
        for seed in seeds:
            path = realized_path(bimodal_gaussian_potential(), 10.0, history, [-2.0, 0.0], args.steps, seed)
            shares.append(float((path[:, 0] > 0).mean()))
            exponents.append(msd_exponent(path))
            bar.update()
        print(f"| {history} | {mean_std(shares)} | {mean_std(exponents)} |", flush=True)
    bar.close()


if __name__ == "__main__":
    main()
