"""
How many of the planner's samples carry its decision: the effective sample size ``1 / sum_k w_k^2`` of the MPPI
weights of kept models, planned as in training on their own environment, with no update (the model stays as saved).

    python benchmarks/planner_weights.py --env sb3_maxdiff/Swimmer-heavy-v0 docs/reproduction/models/swimmer_critic_50k_*.zip

Each model (a saved MaxDiff or NN-MPPI agent) acts ``--steps`` steps from the training loop with its planner
(``learning_starts`` beyond the run, so no update and no random warm-up) and the statistics of each plan are kept. An
effective sample size of 1 is an argmax over the samples; ``n_samples`` is an even average. The return and entropy
spreads are the standard deviations over the samples of their predicted returns and path entropies: set against the
temperature, they say why the weights are as they are.
"""

import argparse
import time

import numpy as np
import torch as th
from stable_baselines3.common.env_util import make_vec_env

from sb3_maxdiff import NNMPPI, MaxDiffMPPI
from sb3_maxdiff.common.mppi import STAT_NAMES

ALGOS: dict[str, type[NNMPPI]] = {"maxdiff": MaxDiffMPPI, "nnmppi": NNMPPI}


def plan_statistics(path: str, env_id: str, steps: int, seed: int, algo: str = "maxdiff") -> tuple[NNMPPI, np.ndarray]:
    """The saved model at ``path`` and the (steps, len(STAT_NAMES)) statistics of its plans over ``steps`` steps."""
    model = ALGOS[algo].load(path, env=make_vec_env(env_id, n_envs=1, seed=seed), device="cpu")
    captured: list[th.Tensor] = []
    model._planned = lambda stats: captured.append(stats.detach().clone())  # type: ignore[method-assign]
    model.learning_starts = 10**12
    model.warmup_actions = "planner"
    model.learn(steps)
    return model, th.cat(captured).numpy()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("models", nargs="+", help="saved agents (.zip)")
    parser.add_argument("--env", required=True, help="the environment id the models were trained on")
    parser.add_argument("--algo", choices=sorted(ALGOS), default="maxdiff", help="the models' algorithm")
    parser.add_argument("--steps", type=int, default=200, help="steps planned by each model")
    parser.add_argument("--seed", type=int, default=123, help="seed of the environment and of the planner's noise")
    args = parser.parse_args()
    th.set_num_threads(1)
    ess = STAT_NAMES.index("ess")
    print("| model | K | temperature | ESS median | ESS mean | steps with ESS < 2 | return spread | entropy spread |")
    print("|---|---|---|---|---|---|---|---|")
    for path in args.models:
        started = time.process_time()
        model, stats = plan_statistics(path, args.env, args.steps, args.seed, args.algo)
        median = np.median(stats, axis=0)
        print(
            f"| {path.rsplit('/', 1)[-1]} | {model.n_samples} | {model.temperature:g} | {median[ess]:.2f} "
            f"| {stats[:, ess].mean():.2f} | {np.mean(stats[:, ess] < 2):.0%} "
            f"| {median[STAT_NAMES.index('return_spread')]:.3g} | {median[STAT_NAMES.index('entropy_spread')]:.3g} |",
            flush=True,
        )
        print(f"  ({len(stats)} plans, {time.process_time() - started:.1f} s of CPU)", flush=True)


if __name__ == "__main__":
    main()
