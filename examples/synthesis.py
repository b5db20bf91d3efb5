"""
MaxDiff trajectory synthesis with known dynamics, the paper's supplementary examples: no learning, the MPPI
planner over the true model, each sampled path scored by its reward (minus the potential) plus alpha times its
path entropy over (x, y).

(a) A single integrator, a double integrator and a differential-drive vehicle exploring a bimodal Gaussian
potential: their paths over the potential's contours and the density of the positions they visit.
(b) A differential drive in a quadratic potential centred at the origin, started at (-4, -2), for alpha in
{0, 1, 10, 100}: its paths, and the spread of the positions it visits after coming down, against alpha.

    python examples/synthesis.py --out demo_output
"""

import argparse
import os
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import torch as th
from tqdm import tqdm

from sb3_maxdiff.synthesis import (
    DifferentialDrive,
    DoubleIntegrator,
    MPPIController,
    SingleIntegrator,
    bimodal_gaussian_potential,
    quadratic_potential,
)

PLANNER: dict[str, Any] = dict(
    horizon=20, n_samples=200, temperature=0.5, noise_std=0.3, control_cost=False, low=[-1, -1], high=[1, 1]
)
SYSTEMS: dict[str, SingleIntegrator | DoubleIntegrator | DifferentialDrive] = {
    "single integrator": SingleIntegrator(),
    "double integrator": DoubleIntegrator(),
    "differential drive": DifferentialDrive(),
}
ALPHAS = (0.0, 1.0, 10.0, 100.0)


def run(system, potential, alpha: float, start: list[float], steps: int, seed: int) -> np.ndarray:
    """The (x, y) path of ``system`` under the controller, ``steps`` control steps from ``start``."""
    th.manual_seed(seed)
    controller = MPPIController(
        system, running_cost=potential, state_dim=system.state_dim, action_dim=system.action_dim, alpha=alpha,
        explr_dims=[0, 1], **PLANNER,
    )  # fmt: skip
    state, path = th.tensor(start, dtype=th.float32), []
    for _ in tqdm(range(steps), desc=f"{type(system).__name__}, alpha {alpha:g}", unit="step", leave=False):
        state = system(state[None], controller.command(state)[None])[0]
        path.append(state[:2].numpy().copy())
    return np.array(path)


def contours(axis, potential, extent: float) -> None:
    grid = np.linspace(-extent, extent, 200)
    x, y = np.meshgrid(grid, grid)
    values = potential(th.tensor(np.stack([x, y], axis=-1), dtype=th.float32)).numpy()
    axis.contour(x, y, values, levels=12, cmap="Greys", linewidths=0.6)
    axis.set_xlim(-extent, extent), axis.set_ylim(-extent, extent), axis.set_aspect("equal")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="demo_output")
    parser.add_argument("--steps", type=int, default=1000, help="control steps per path")
    parser.add_argument("--bimodal-alpha", type=float, default=10.0, help="alpha of the bimodal-potential paths")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    bimodal, quadratic = bimodal_gaussian_potential(), quadratic_potential()

    figure, axes = plt.subplots(3, 4, figsize=(16, 12))
    for column, (name, system) in enumerate(SYSTEMS.items()):
        start = [0.0] * system.state_dim
        path = run(system, bimodal, args.bimodal_alpha, start, args.steps, args.seed)
        contours(axes[0, column], bimodal, 4.0)
        axes[0, column].plot(path[:, 0], path[:, 1], linewidth=0.5)
        axes[0, column].set_title(f"(a) {name}, alpha {args.bimodal_alpha:g}: path")
        axes[1, column].hist2d(path[:, 0], path[:, 1], bins=40, range=[[-4, 4], [-4, 4]], cmap="viridis")
        axes[1, column].set_aspect("equal")
        axes[1, column].set_title(f"{name}: visited positions")
    contours(axes[0, 3], bimodal, 4.0)
    axes[0, 3].set_title("bimodal Gaussian potential")
    grid = np.linspace(-4, 4, 200)
    x, y = np.meshgrid(grid, grid)
    values = bimodal(th.tensor(np.stack([x, y], axis=-1), dtype=th.float32)).numpy()
    axes[1, 3].imshow(-values, origin="lower", extent=(-4, 4, -4, 4), cmap="viridis")
    axes[1, 3].set_title("minus the potential")

    print(f"\n(b) differential drive in a quadratic potential from (-4, -2), {args.steps} steps, seed {args.seed}")
    print("| alpha | spread of (x, y), second half (std, mean over x and y) | mean distance to the minimum, second half |")
    print("|---|---|---|")
    spreads = []
    for column, alpha in enumerate(ALPHAS):
        path = run(SYSTEMS["differential drive"], quadratic, alpha, [-4.0, -2.0, 0.0], args.steps, args.seed)
        late = path[len(path) // 2 :]
        spreads.append(float(late.std(axis=0).mean()))
        print(f"| {alpha:g} | {spreads[-1]:.3f} | {np.linalg.norm(late, axis=1).mean():.3f} |")
        contours(axes[2, column], quadratic, 5.0)
        axes[2, column].plot(path[:, 0], path[:, 1], linewidth=0.5)
        axes[2, column].plot(-4, -2, "ko", markersize=4)
        axes[2, column].set_title(f"(b) differential drive, alpha {alpha:g}: spread {spreads[-1]:.2f}")
    figure.tight_layout()
    figure_path = os.path.join(args.out, "synthesis_examples.png")
    figure.savefig(figure_path, dpi=80)
    print(f"\nfigure: {figure_path}")


if __name__ == "__main__":
    main()
