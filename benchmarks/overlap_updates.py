"""
Whole training steps (``learn``: plan, environment step, replay, model updates) of a batch of independent agents,
with ``overlap_updates=True`` (each step's model updates made before the environments step, so that on a GPU they run
while the host steps the environments) against without, in the same rounds::

    python benchmarks/overlap_updates.py --device cuda --cuda-graph --agents 20          # on a GPU
    python benchmarks/overlap_updates.py --device cuda --cuda-graph --agents 20 --env-threads 8
    python benchmarks/overlap_updates.py --config point-mass --agents 2 --steps 20 --rounds 2   # a check (CPU)

The agents are MaxDiff's (alpha 100) with the paper's planner and model for ``--config`` (default: the heavy-tail
Swimmer), on environments of their own, each agent's replay column first filled with ``--fill`` random transitions
(as in ``agents.py``), updated from the first step on. Each model first trains 5 steps (which captures its CUDA
graphs); then each round times ``--steps`` steps per agent of each model, one model after the other. Figures are
ms per agent-step (median over the rounds). Both models learn the same (the option changes when the updates run, not
what they compute); their random streams are shared, so the two are not compared here
(``tests/algorithms/test_overlap_updates.py`` does).
"""

import argparse
import json
import platform
import statistics
import time

import numpy as np
import torch as th
from run import CONFIGS, fill_replay_buffer, make_algorithm

from sb3_maxdiff import MaxDiffMPPI


def make_model(args: argparse.Namespace, overlap_updates: bool) -> MaxDiffMPPI:
    """The batch, each agent's replay column holding ``--fill`` random transitions (room for every step after)."""
    buffer_size = args.fill + (args.rounds + 1) * args.steps + 10  # each agent's column never wraps
    kwargs = dict(n_envs=args.agents, independent_agents=True, cuda_graph=args.cuda_graph, env_threads=args.env_threads)
    config = CONFIGS[args.config]
    model = make_algorithm(config, args.device, buffer_size, overlap_updates=overlap_updates, alpha=100.0, **kwargs)
    fill_replay_buffer(model, args.fill, np.random.default_rng(0))
    return model


def time_learning(model: MaxDiffMPPI, steps: int, device: str) -> float:
    """Ms per agent-step of ``steps`` more steps per agent."""
    if device.startswith("cuda"):
        th.cuda.synchronize()
    start = time.perf_counter()
    model.learn(steps * model.n_envs, reset_num_timesteps=False)
    if device.startswith("cuda"):
        th.cuda.synchronize()
    return 1e3 * (time.perf_counter() - start) / (steps * model.n_envs)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", default="swimmer", choices=list(CONFIGS))
    parser.add_argument("--agents", type=int, default=20, help="independent agents (one environment each)")
    parser.add_argument("--steps", type=int, default=300, help="steps per agent in each timed round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--fill", type=int, default=10_000, help="random transitions in each agent's column at the start")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--cuda-graph", action="store_true")
    parser.add_argument("--env-threads", type=int, default=1, help="threads that step the environments (1: in turn)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    parser.add_argument("--json", default=None, help="also write the figures to this file")
    args = parser.parse_args(argv)
    th.set_num_threads(args.threads)
    device_name = th.cuda.get_device_name() if args.device.startswith("cuda") else platform.processor() or platform.machine()
    print(
        f"{device_name}, torch {th.__version__}, {args.config}, {args.agents} agents, "
        f"env threads {args.env_threads}, {args.rounds} rounds"
    )
    models = {"without": make_model(args, False), "overlap_updates": make_model(args, True)}
    for model in models.values():
        model.learn(5 * args.agents)  # past the first updates, graphs captured
    times: dict[str, list[float]] = {name: [] for name in models}
    for _ in range(args.rounds):
        for name, model in models.items():
            times[name].append(time_learning(model, args.steps, args.device))
    medians = {name: statistics.median(values) for name, values in times.items()}
    row = {
        "config": args.config,
        "agents": args.agents,
        "env_threads": args.env_threads,
        "without_ms_per_agent_step": medians["without"],
        "overlap_ms_per_agent_step": medians["overlap_updates"],
        "speedup": medians["without"] / medians["overlap_updates"],
        "rounds": times,
    }
    print("| config | agents | env threads | without, ms / agent-step | overlap_updates, ms / agent-step | speed-up |")
    print("|---|---|---|---|---|---|")
    print(
        f"| {args.config} | {args.agents} | {args.env_threads} | {medians['without']:.3f} | "
        f"{medians['overlap_updates']:.3f} | {row['speedup']:.2f}x |"
    )
    if args.json:
        with open(args.json, "w") as file:
            json.dump({"args": vars(args), "device": device_name, **row}, file, indent=1)
    return row


if __name__ == "__main__":
    main()
