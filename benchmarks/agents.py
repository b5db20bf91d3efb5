"""
Throughput of seed-batched training: N independent agents in one model (``independent_agents=True``)
against the same N agents stepped one after the other as single-agent models, in the same process::

    python benchmarks/agents.py                          # point mass and Swimmer, N = 1, 4, 10, CPU
    python benchmarks/agents.py --device cuda --configs swimmer --agents 1 10

A training step is one planner call and ``gradient_steps`` model updates, with each agent's replay column
holding ``--fill`` random transitions. Figures are ms per agent-step (median over ``--calls`` rounds; in each
round the batched step and the sequential steps are timed back to back, so a slow spell hits both alike).
"""

import argparse
import json
import platform

import numpy as np
import torch as th
from run import CONFIGS, Config, fill_replay_buffer, interleaved_medians, make_algorithm

from sb3_maxdiff import MaxDiffMPPI


def training_step(model: MaxDiffMPPI, config: Config):
    def step() -> None:
        model._sample_action(0, n_envs=model.n_envs)
        model.train(config.gradient_steps, config.batch_size)

    return step


def measure(name: str, n_agents: int, args: argparse.Namespace) -> dict:
    config = CONFIGS[name]
    rng = np.random.default_rng(0)
    batched = make_algorithm(config, args.device, args.fill, n_envs=n_agents, independent_agents=True)
    fill_replay_buffer(batched, args.fill, rng)
    singles = [make_algorithm(config, args.device, args.fill) for _ in range(n_agents)]
    for single in singles:
        fill_replay_buffer(single, args.fill, rng)
    steps = [training_step(single, config) for single in singles]

    def sequential() -> None:
        for step in steps:
            step()

    functions = {"batched": training_step(batched, config), "sequential": sequential}
    medians = interleaved_medians(functions, args.calls, args.device)
    return {
        "config": name,
        "n_agents": n_agents,
        "batched_ms_per_agent_step": medians["batched"] / n_agents,
        "sequential_ms_per_agent_step": medians["sequential"] / n_agents,
        "speedup": medians["sequential"] / medians["batched"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--configs", nargs="+", default=["point-mass", "swimmer"], choices=list(CONFIGS))
    parser.add_argument("--agents", type=int, nargs="+", default=[1, 4, 10], help="numbers of agents N")
    parser.add_argument("--calls", type=int, default=10, help="timed rounds per figure (median)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--fill", type=int, default=10_000, help="transitions in each agent's replay column")
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()
    th.set_num_threads(args.threads)
    th.set_flush_denormal(True)
    th.manual_seed(0)
    device_name = th.cuda.get_device_name() if args.device.startswith("cuda") else platform.processor() or platform.machine()
    print(f"{device_name}, torch {th.__version__}, {th.get_num_threads()} threads, device {args.device}, {args.calls} rounds")
    rows = [measure(name, n_agents, args) for name in args.configs for n_agents in args.agents]
    print("\n| config | N agents | batched ms / agent-step | sequential ms / agent-step | batched speed-up |")
    print("|---|---|---|---|---|")
    for row in rows:
        print(
            f"| {row['config']} | {row['n_agents']} | {row['batched_ms_per_agent_step']:.2f} | "
            f"{row['sequential_ms_per_agent_step']:.2f} | {row['speedup']:.2f}x |"
        )
    if args.json:
        with open(args.json, "w") as file:
            json.dump({"threads": args.threads, "device": args.device, "rows": rows}, file, indent=1)


if __name__ == "__main__":
    main()
