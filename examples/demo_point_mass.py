"""
MaxDiff RL vs NN-MPPI on the point mass with beta = 0.01 (the paper's hard setting, Fig. 1).

Trains both methods side by side (one process and one CPU thread each) with the paper's point-mass hyperparameters
(the package's published settings, ``hyperparams/maxdiff.yml`` and ``nnmppi.yml``) and the authors' action semantics
(unbounded point mass, raw planner actions, planning from the first step), shows one progress bar for both, and saves
a figure with each method's (x, y) training paths and the two learning curves, plus the returns and the ergodicity
diagnostics (coverage of the +/-5 box, MSD exponent, autocorrelation time) as JSON::

    python examples/demo_point_mass.py --steps 10000 --seed 1 --out demo_output

One seed is one sample of a noisy process (seed 0, for instance, fails for both methods within
10k steps); the paper compares 10 seeds with a t-test.
"""

import argparse
import json
import multiprocessing as mp
import os
import time
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from stable_baselines3.common.callbacks import BaseCallback
from tqdm import tqdm

from sb3_maxdiff.experiments.define.presets import published_kwargs

ENV_ID = "sb3_maxdiff/PointMassUnbounded-beta0_01-v0"
METHODS = ("MaxDiff", "NN-MPPI")
_steps_done: Any = None  # shared step counter, set in each worker process


def _share_counter(counter: Any) -> None:
    global _steps_done
    _steps_done = counter


class ReturnsPathsAndProgress(BaseCallback):
    """Record the return and (x, y) path of every episode and report progress to the parent process."""

    def __init__(self, counter: Any) -> None:
        super().__init__()
        self.counter = counter
        self.steps: list[int] = []
        self.returns: list[float] = []
        self.paths: list[list[list[float]]] = [[]]

    def _on_step(self) -> bool:
        with self.counter.get_lock():
            self.counter.value += 1
        info = self.locals["infos"][0]
        final = info.get("terminal_observation")
        obs = final if final is not None else self.locals["new_obs"][0]
        self.paths[-1].append([round(float(obs[0]), 4), round(float(obs[1]), 4)])
        if "episode" in info:
            self.steps.append(self.num_timesteps)
            self.returns.append(float(info["episode"]["r"]))
            self.paths.append([])
        return True


def train(method: str, steps: int, seed: int, n_samples: int) -> dict[str, Any]:
    import torch as th

    from sb3_maxdiff import NNMPPI, ErgodicityLogger, MaxDiffMPPI

    th.set_num_threads(1)  # the two methods share the machine's cores
    # the published point-mass settings (hyperparams/<method>.yml), in the authors' action semantics; MaxDiff's
    # include the paper's alpha schedule (0.5, then 5 from step 1,000) and exploration weights
    algo, name = (MaxDiffMPPI, "maxdiff") if method == "MaxDiff" else (NNMPPI, "nnmppi")
    model = algo(ENV_ID, seed=seed, **{**published_kwargs(name, ENV_ID), "n_samples": n_samples})
    curve = ReturnsPathsAndProgress(_steps_done)
    diagnostics = ErgodicityLogger(dims=[0, 1], low=[-5.0, -5.0], high=[5.0, 5.0], bins=20)
    start = time.time()
    model.learn(steps, callback=[curve, diagnostics])
    episodes = diagnostics.episodes
    return {
        "steps": curve.steps,
        "returns": curve.returns,
        "seconds": time.time() - start,
        "coverage": episodes[-1]["coverage"] if episodes else 0.0,
        "msd_exponent": [episode["msd_exponent"] for episode in episodes],
        "autocorr_time": [episode["autocorr_time"] for episode in episodes],
        "paths": [path for path in curve.paths if path],
    }


def plot(results: dict[str, dict[str, Any]], seed: int, path: str) -> None:
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.6))
    for ax, (name, result) in zip(axes[:2], results.items()):
        colors = plt.get_cmap("viridis")(np.linspace(0.0, 1.0, max(len(result["paths"]), 2)))
        for index, (episode, color) in enumerate(zip(result["paths"], colors)):
            xy = np.asarray(episode)
            ax.plot(xy[:, 0], xy[:, 1], color=color, linewidth=0.8, label="first episode" if index == 0 else None)
        ax.plot([-1], [-1], "ks", label="start")
        ax.plot([0], [0], "r*", markersize=12, label="goal")
        ax.set_xlim(-5.2, 5.2)
        ax.set_ylim(-5.2, 5.2)
        ax.set_aspect("equal")
        ax.set_xlabel("x")
        ax.set_ylabel("y")
        ax.set_title(f"{name}: training paths (dark: early, light: late)\ncoverage of the +/-5 box {result['coverage']:.1%}")
        ax.legend(loc="upper right", fontsize=8)
    ax = axes[2]
    for (name, result), color in zip(results.items(), ["tab:purple", "tab:orange"]):
        ax.plot(result["steps"], result["returns"], "o-", color=color, label=name)
    ax.axhline(-2000, color="gray", linestyle=":", label="staying at the start (about -2000)")
    ax.set_xlabel("environment steps")
    ax.set_ylabel("episode return (raw, one seed)")
    ax.set_title(f"Point mass, beta = 0.01, seed {seed}")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=10_000, help="environment steps per method")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--samples",
        type=int,
        default=published_kwargs("maxdiff", ENV_ID)["n_samples"],
        help="planner samples per step (the paper's by default; fewer: faster, rougher)",
    )
    parser.add_argument("--out", default="demo_output", help="folder for the plot and the returns")
    args = parser.parse_args()
    if args.samples < 1:
        parser.error(f"--samples must be a positive number of planner samples, got {args.samples}")
    os.makedirs(args.out, exist_ok=True)

    context = mp.get_context("spawn")
    counter = context.Value("l", 0)
    print(f"Training MaxDiff and NN-MPPI for {args.steps} steps each on {ENV_ID} (seed {args.seed})")
    with context.Pool(len(METHODS), initializer=_share_counter, initargs=(counter,)) as pool:
        jobs = {name: pool.apply_async(train, (name, args.steps, args.seed, args.samples)) for name in METHODS}
        with tqdm(total=len(METHODS) * args.steps, unit="step", desc="both methods") as bar:
            while not all(job.ready() for job in jobs.values()):
                time.sleep(0.5)
                bar.update(counter.value - bar.n)
            bar.update(counter.value - bar.n)
        results = {name: job.get() for name, job in jobs.items()}

    with open(os.path.join(args.out, "returns.json"), "w") as file:
        json.dump({"env_id": ENV_ID, "seed": args.seed, **results}, file, indent=1)
    path = os.path.join(args.out, "point_mass_paths_and_returns.png")
    plot(results, args.seed, path)
    for name, result in results.items():
        returns = [round(r) for r in result["returns"]]
        print(f"{name}: {result['seconds']:.0f} s, episode returns {returns or 'none finished'}")
        if not result["msd_exponent"]:
            print("  no finished episode to take the ergodicity diagnostics of (train for more steps)")
            continue
        print(
            f"  coverage of the +/-5 box (20 x 20 cells) {result['coverage']:.1%}, median MSD exponent "
            f"{np.nanmedian(result['msd_exponent']):.2f}, "
            f"median autocorrelation time {np.nanmedian(result['autocorr_time']):.0f} steps"
        )
    print(f"Saved {path}")


if __name__ == "__main__":
    main()
