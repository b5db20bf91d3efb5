"""
Transfer across embodiments (paper Fig. 4): train MaxDiff RL on the heavy-tail Swimmer with a small budget, then
evaluate the same model on the heavy and on the light-tail Swimmer (3,000 training steps and 2 evaluation episodes
per body by default; the paper trains 1M steps and evaluates 100 episodes)::

    python examples/transfer_swimmer.py --steps 3000

The same evaluation is one command for any saved model::

    python -m sb3_maxdiff.experiments transfer --algo maxdiff --model swimmer_heavy.zip \\
        --env sb3_maxdiff/Swimmer-light-v0 --episodes 10
"""

import argparse

import sb3_maxdiff  # noqa: F401
from sb3_maxdiff import MaxDiffMPPI
from sb3_maxdiff.envs import SWIMMER_HEAVY, SWIMMER_LIGHT
from sb3_maxdiff.experiments import evaluate_transfer
from sb3_maxdiff.experiments.define.presets import published_kwargs

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("--steps", type=int, default=3000)
parser.add_argument("--episodes", type=int, default=2)
parser.add_argument("--samples", type=int, default=500, help="planner samples per step (the paper's: 500)")
args = parser.parse_args()
if args.samples < 1:
    parser.error(f"--samples must be a positive number of planner samples, got {args.samples}")

# the paper's Swimmer settings (hyperparams/maxdiff.yml: horizon 40, temperature 0.1, alpha 100, the path entropy
# over x, y and their velocities, 5 model updates per step, ...)
settings = published_kwargs("maxdiff", SWIMMER_HEAVY)
model = MaxDiffMPPI(SWIMMER_HEAVY, **{**settings, "n_samples": args.samples}, seed=0)
model.learn(args.steps, progress_bar=True)
model.save("swimmer_heavy")

for env_id in (SWIMMER_HEAVY, SWIMMER_LIGHT):
    result = evaluate_transfer("swimmer_heavy.zip", "maxdiff", env_id, n_episodes=args.episodes)
    print(f"trained on heavy, evaluated on {env_id}: {result.mean:.2f} +/- {result.std:.2f} ({args.episodes} episodes)")
