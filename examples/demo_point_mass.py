"""
MaxDiff RL vs NN-MPPI on the point mass with beta = 0.01 (the paper's hard setting, Fig. 1).

Trains both methods side by side (one process and one CPU thread each) with the paper's
point-mass hyperparameters, shows one progress bar for both, and saves a plot of the two
learning curves (episode return vs environment steps) plus the raw returns as JSON::

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
from stable_baselines3.common.callbacks import BaseCallback
from tqdm import tqdm

ENV_ID = "sb3_maxdiff/PointMass-beta0_01-v0"
# SPEC section 5, point-mass column
COMMON: dict[str, Any] = dict(
    learning_rate=5e-4,
    batch_size=128,
    horizon=30,
    n_samples=500,
    temperature=0.5,
    noise_std=0.3,
    gradient_steps=5,
    learning_starts=128,
    policy_kwargs=dict(net_arch=[128, 128]),
)
METHODS = ("MaxDiff", "NN-MPPI")
_steps_done: Any = None  # shared step counter, set in each worker process


def _share_counter(counter: Any) -> None:
    global _steps_done
    _steps_done = counter


class ReturnsAndProgress(BaseCallback):
    """Record (step, return) of every finished episode and report progress to the parent process."""

    def __init__(self, counter: Any) -> None:
        super().__init__()
        self.counter = counter
        self.steps: list[int] = []
        self.returns: list[float] = []

    def _on_step(self) -> bool:
        with self.counter.get_lock():
            self.counter.value += 1
        for info in self.locals["infos"]:
            if "episode" in info:
                self.steps.append(self.num_timesteps)
                self.returns.append(float(info["episode"]["r"]))
        return True


def train(method: str, steps: int, seed: int) -> dict[str, Any]:
    import torch as th

    from sb3_maxdiff import NNMPPI, MaxDiffMPPI, StepSchedule

    th.set_num_threads(1)  # the two methods share the machine's cores
    if method == "MaxDiff":
        alpha = StepSchedule([0.5, 5.0], [1000])  # the paper's point-mass schedule
        model = MaxDiffMPPI(ENV_ID, seed=seed, alpha=alpha, explr_weights=[1.0, 1.0, 0.01, 0.01], **COMMON)
    else:
        model = NNMPPI(ENV_ID, seed=seed, **COMMON)
    curve = ReturnsAndProgress(_steps_done)
    start = time.time()
    model.learn(steps, callback=curve)
    return {"steps": curve.steps, "returns": curve.returns, "seconds": time.time() - start}


def plot(results: dict[str, dict[str, Any]], seed: int, path: str) -> None:
    fig, ax = plt.subplots(figsize=(6, 4))
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
    parser.add_argument("--out", default="demo_output", help="folder for the plot and the returns")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)

    context = mp.get_context("spawn")
    counter = context.Value("l", 0)
    print(f"Training MaxDiff and NN-MPPI for {args.steps} steps each on {ENV_ID} (seed {args.seed})")
    with context.Pool(len(METHODS), initializer=_share_counter, initargs=(counter,)) as pool:
        jobs = {name: pool.apply_async(train, (name, args.steps, args.seed)) for name in METHODS}
        with tqdm(total=len(METHODS) * args.steps, unit="step", desc="both methods") as bar:
            while not all(job.ready() for job in jobs.values()):
                time.sleep(0.5)
                bar.update(counter.value - bar.n)
            bar.update(counter.value - bar.n)
        results = {name: job.get() for name, job in jobs.items()}

    with open(os.path.join(args.out, "returns.json"), "w") as file:
        json.dump({"env_id": ENV_ID, "seed": args.seed, **results}, file, indent=1)
    path = os.path.join(args.out, "point_mass_learning_curves.png")
    plot(results, args.seed, path)
    for name, result in results.items():
        returns = [round(r) for r in result["returns"]]
        print(f"{name}: {result['seconds']:.0f} s, episode returns {returns}")
    print(f"Saved {path}")


if __name__ == "__main__":
    main()
