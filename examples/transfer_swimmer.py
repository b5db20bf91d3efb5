"""
Transfer across embodiments (paper Fig. 4): train MaxDiff RL on the heavy-tail swimmer with a small
budget, then evaluate the same model on the heavy and on the light-tail swimmer (about 5 minutes)::

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

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=3000)
parser.add_argument("--episodes", type=int, default=2)
args = parser.parse_args()

# the paper's swimmer settings
model = MaxDiffMPPI(
    SWIMMER_HEAVY,
    horizon=40,
    n_samples=500,
    temperature=0.1,
    alpha=100.0,
    explr_dims=[0, 1, 5, 6],
    explr_weights=[1.0, 1.0, 0.05, 0.05],
    seed=0,
)
model.learn(args.steps, progress_bar=True)
model.save("swimmer_heavy")

for env_id in (SWIMMER_HEAVY, SWIMMER_LIGHT):
    result = evaluate_transfer("swimmer_heavy.zip", "maxdiff", env_id, n_episodes=args.episodes)
    print(f"trained on heavy, evaluated on {env_id}: {result.mean:.2f} +/- {result.std:.2f} ({args.episodes} episodes)")
