"""
Single-shot (reset-free) MaxDiff RL on the light-tail Swimmer, as in the paper's single-shot runs: one episode for the
whole run, the return of every 1,000-step window logged to a CSV, and the distance travelled along x reported at the
end. A small budget: 5,000 steps with 500 planner samples by default; the paper runs 1M steps with 1,000, and nine
of the authors' ten MaxDiff seeds were swimming by 30,000 (REPRODUCTION.md)::

    python examples/single_shot_swimmer.py --steps 5000
"""

import argparse

import sb3_maxdiff  # noqa: F401
from sb3_maxdiff import MaxDiffMPPI
from sb3_maxdiff.envs import SWIMMER_LIGHT
from sb3_maxdiff.experiments import learn_single_shot, make_single_shot_env
from sb3_maxdiff.experiments.define.presets import published_kwargs

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("--steps", type=int, default=5000)
parser.add_argument("--samples", type=int, default=500, help="planner samples per step (the paper's single-shot: 1000)")
parser.add_argument("--csv", default="single_shot_swimmer.csv")
args = parser.parse_args()
if args.samples < 1:
    parser.error(f"--samples must be a positive number of planner samples, got {args.samples}")

# the paper's Swimmer settings (hyperparams/maxdiff.yml), with what its single-shot runs change: alpha 50, the path
# entropy over a window of the plan, 10 model updates per step, and 1,000 planner samples (--samples)
settings = {**published_kwargs("maxdiff", SWIMMER_LIGHT), "alpha": 50.0, "window": True, "gradient_steps": 10}
model = MaxDiffMPPI(make_single_shot_env(SWIMMER_LIGHT), **{**settings, "n_samples": args.samples}, verbose=1, seed=0)
result = learn_single_shot(model, args.steps, window=1000, csv_path=args.csv, progress_bar=True)
print(f"window returns {[round(r, 1) for r in result.window_returns]}")
print(f"final distance along x: {result.final_distance:.3f} (window returns in {args.csv})")
