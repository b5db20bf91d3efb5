"""
Single-shot (reset-free) MaxDiff RL on the heavy swimmer: one episode for the whole run, the return
of every 1,000-step window logged to a CSV, and the distance travelled along x reported at the end.
A small budget (about 5 minutes on 2 cores); the paper runs 1M steps::

    python examples/single_shot_swimmer.py --steps 5000
"""

import argparse

import sb3_maxdiff  # noqa: F401
from sb3_maxdiff import MaxDiffMPPI
from sb3_maxdiff.envs import SWIMMER_HEAVY
from sb3_maxdiff.experiments import learn_single_shot, make_single_shot_env

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=5000)
parser.add_argument("--csv", default="single_shot_swimmer.csv")
args = parser.parse_args()

# the paper's single-shot swimmer settings, with K 500 instead of 1000 to stay short
model = MaxDiffMPPI(
    make_single_shot_env(SWIMMER_HEAVY),
    horizon=40,
    n_samples=500,
    temperature=0.1,
    alpha=50.0,
    explr_dims=[0, 1, 5, 6],
    explr_weights=[1.0, 1.0, 0.05, 0.05],
    gradient_steps=10,
    verbose=1,
    seed=0,
)
result = learn_single_shot(model, args.steps, window=1000, csv_path=args.csv, progress_bar=True)
print(f"window returns {[round(r, 1) for r in result.window_returns]}")
print(f"final distance along x: {result.final_distance:.3f} (window returns in {args.csv})")
