"""
Models saved by sb3-maxdiff at commit 6946528 (before the planner settings and the entropy weight moved), and what
they predicted, for tests/algorithms/test_save_load.py. Run from a checkout of that commit:
``git worktree add ../old 6946528 && cd ../old && python <this file> <folder to write to>``.
"""

import sys
from typing import Any

import numpy as np
import torch as th
from stable_baselines3.common.env_util import make_vec_env

from sb3_maxdiff import NNMPPI, MaxDiffMPPI
from sb3_maxdiff.common.schedules import StepSchedule

th.set_num_threads(1)
folder = sys.argv[1]
ENV = "sb3_maxdiff/PointMassUnbounded-beta0_01-v0"
SMALL: dict[str, Any] = dict(
    horizon=5, n_samples=16, batch_size=16, gradient_steps=1, learning_starts=20, policy_kwargs={"net_arch": [16, 16]}
)
AUTHORS: dict[str, Any] = dict(action_semantics="authors", warmup_actions="planner")
runs = {
    "maxdiff_6946528": (MaxDiffMPPI, dict(**AUTHORS, alpha=StepSchedule([0.5, 5.0], [30]), window=True), 1),
    "nnmppi_6946528": (NNMPPI, dict(action_semantics="bounded"), 1),
    "maxdiff_3agents_6946528": (MaxDiffMPPI, dict(alpha=2.0), 3),
}
obs = np.random.default_rng(0).normal(size=(3, 4)).astype(np.float32)
out = {}
for name, (algo, kwargs, n) in runs.items():
    env = make_vec_env(ENV, n_envs=n, seed=3)
    model = algo(env, seed=3, independent_agents=n > 1, **SMALL, **kwargs)
    model.learn(60 * n)
    model.save(f"{folder}/{name}.zip")
    th.manual_seed(11)
    actions, state = model.predict(obs[:n])
    out[f"{name}_actions"], out[f"{name}_state"] = actions, state
np.savez(f"{folder}/predictions_6946528.npz", obs=obs, **out)
print({k: v.shape for k, v in out.items()})
