"""
What ``alpha="auto"`` costs: a training step (plan + model updates) with a fixed alpha against the same step with the
automatic alpha, interleaved in one process, and the two spreads over the samples that every plan now computes (the
rule's input, logged as ``planner/return_spread`` and ``planner/entropy_spread``) timed alone::

    python benchmarks/auto_alpha.py --configs swimmer point-mass --agents 1 10 --calls 30
    python benchmarks/auto_alpha.py --device cuda --cuda-graph --agents 1 10 20
"""

import argparse
import json
import platform
from collections.abc import Callable
from typing import Any

import numpy as np
import torch as th
from run import CONFIGS, fill_replay_buffer, interleaved_medians, make_algorithm

from sb3_maxdiff import MaxDiffMPPI
from sb3_maxdiff.common.mppi import sample_spread


def measure(name: str, n_agents: int, args: argparse.Namespace) -> dict:
    config = CONFIGS[name]
    batch: dict[str, Any] = dict(n_envs=n_agents, independent_agents=n_agents > 1, cuda_graph=args.cuda_graph)
    models = {
        "fixed": make_algorithm(config, args.device, 10_000, alpha=100.0, **batch),
        "auto": make_algorithm(config, args.device, 10_000, alpha="auto", **batch),
    }
    rng = np.random.default_rng(0)
    for model in models.values():
        fill_replay_buffer(model, 10_000, rng)

    def step(model: MaxDiffMPPI) -> Callable[[], None]:
        def run() -> None:
            model._sample_action(0)
            model.train(config.gradient_steps, config.batch_size)

        return run

    values = th.randn(n_agents, config.n_samples, device=args.device)
    calls: dict[str, Callable[[], object]] = {f"{key}_step_ms": step(model) for key, model in models.items()}
    calls["spreads_ms"] = lambda: (sample_spread(values), sample_spread(values))
    row: dict[str, Any] = {"config": name, "agents": n_agents, **interleaved_medians(calls, args.calls, args.device)}
    row["auto_over_fixed"] = row["auto_step_ms"] / row["fixed_step_ms"]
    row["spreads_over_step"] = row["spreads_ms"] / row["fixed_step_ms"]
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--configs", nargs="+", choices=sorted(CONFIGS), default=["swimmer", "point-mass"])
    parser.add_argument("--agents", nargs="+", type=int, default=[1, 10])
    parser.add_argument("--calls", type=int, default=30)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--cuda-graph", action="store_true")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    th.set_num_threads(args.threads)
    rows = [measure(name, n_agents, args) for name in args.configs for n_agents in args.agents]
    print(f"{platform.processor() or platform.machine()}, torch {th.__version__}, {args.device}, {args.threads} threads")
    print(f"{'config':12s} {'N':>3s} {'fixed ms':>9s} {'auto ms':>9s} {'auto/fixed':>10s} {'spreads/step':>12s}")
    for row in rows:
        print(
            f"{row['config']:12s} {row['agents']:3d} {row['fixed_step_ms']:9.2f} {row['auto_step_ms']:9.2f}"
            f" {row['auto_over_fixed']:10.3f} {row['spreads_over_step']:12.4f}"
        )
    if args.json:
        with open(args.json, "w") as file:
            json.dump(rows, file, indent=2)


if __name__ == "__main__":
    main()
