"""
Throughput of seed-batched training: N independent agents in one model (``independent_agents=True``)
against the same N agents stepped one after the other as single-agent models, in the same process::

    python benchmarks/agents.py                          # point mass and Swimmer, N = 1, 4, 10, CPU
    python benchmarks/agents.py --device cuda --configs swimmer --agents 1 10 --cuda-graph
    python benchmarks/agents.py --configs swimmer --agents 4 --mixed   # one mixed batch against two batches
    python benchmarks/agents.py --device cuda --configs swimmer --agents 20 --cuda-graph --bf16   # bfloat16 planner

A training step is one planner call and ``gradient_steps`` model updates, with each agent's replay column
holding ``--fill`` random transitions. Figures are ms per agent-step (median over ``--calls`` rounds; in each
round the batched step and the sequential steps are timed back to back, so a slow spell hits both alike).
With ``--cuda-graph`` the batched step is also timed with its planner (and, for N > 1, its model updates)
replayed as CUDA graphs (``cuda_graph=True``), in the same rounds. With ``--bf16`` the batched step (graphed with
``--cuda-graph``) is also timed planning in bfloat16 (``planner_dtype="bfloat16"``), its speed-up taken against the
same step in float32.

With ``--mixed`` each N is instead a batch of N / 2 MaxDiff agents (alpha 100) and N / 2 NN-MPPI agents (alpha 0,
control term on) in one model (the runner's ``--batch-cells``), against a MaxDiff batch and an NN-MPPI batch of N / 2
each stepped one after the other (two ``--batch-seeds`` batches), in the same rounds.
"""

import argparse
import json
import platform
from typing import Any

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
    if args.cuda_graph:
        graphed = make_algorithm(config, args.device, args.fill, n_envs=n_agents, independent_agents=True, cuda_graph=True)
        fill_replay_buffer(graphed, args.fill, rng)
        functions["graphed"] = training_step(graphed, config)
    if args.bf16:
        kwargs = dict(n_envs=n_agents, independent_agents=True, cuda_graph=args.cuda_graph, planner_dtype="bfloat16")
        bf16 = make_algorithm(config, args.device, args.fill, **kwargs)
        fill_replay_buffer(bf16, args.fill, rng)
        functions["bf16"] = training_step(bf16, config)
    medians = interleaved_medians(functions, args.calls, args.device)
    row = {
        "config": name,
        "n_agents": n_agents,
        "batched_ms_per_agent_step": medians["batched"] / n_agents,
        "sequential_ms_per_agent_step": medians["sequential"] / n_agents,
        "speedup": medians["sequential"] / medians["batched"],
    }
    if args.cuda_graph:
        row["graphed_ms_per_agent_step"] = medians["graphed"] / n_agents
        row["graph_speedup"] = medians["batched"] / medians["graphed"]
    if args.bf16:
        row["bf16_ms_per_agent_step"] = medians["bf16"] / n_agents
        row["bf16_speedup"] = medians["graphed" if args.cuda_graph else "batched"] / medians["bf16"]
    return row


def measure_mixed(name: str, n_agents: int, args: argparse.Namespace) -> dict:
    if n_agents < 2 or n_agents % 2:
        raise SystemExit(f"--mixed needs even numbers of agents (half MaxDiff, half NN-MPPI), got {n_agents}")
    config, half, rng = CONFIGS[name], n_agents // 2, np.random.default_rng(0)
    per_agent: dict[str, Any] = dict(alpha=[100.0] * half + [0.0] * half, control_cost=[False] * half + [True] * half)
    mixed = make_algorithm(config, args.device, args.fill, n_envs=n_agents, independent_agents=True, **per_agent)
    maxdiff = make_algorithm(config, args.device, args.fill, n_envs=half, independent_agents=True, alpha=100.0)
    nnmppi = make_algorithm(config, args.device, args.fill, n_envs=half, independent_agents=True, alpha=0.0, control_cost=True)
    for model in (mixed, maxdiff, nnmppi):
        fill_replay_buffer(model, args.fill, rng)
    apart = [training_step(maxdiff, config), training_step(nnmppi, config)]

    def two_batches() -> None:
        for step in apart:
            step()

    medians = interleaved_medians({"mixed": training_step(mixed, config), "two": two_batches}, args.calls, args.device)
    return {
        "config": name,
        "n_agents": n_agents,
        "mixed_ms_per_agent_step": medians["mixed"] / n_agents,
        "two_batches_ms_per_agent_step": medians["two"] / n_agents,
        "speedup": medians["two"] / medians["mixed"],
    }


def print_mixed(rows: list[dict]) -> None:
    head = "| config | N agents (half MaxDiff, half NN-MPPI) | one mixed batch, ms / agent-step | two batches of N / 2 |"
    print(f"\n{head} speed-up |")
    print("|---|---|---|---|---|")
    for row in rows:
        print(
            f"| {row['config']} | {row['n_agents']} | {row['mixed_ms_per_agent_step']:.2f} | "
            f"{row['two_batches_ms_per_agent_step']:.2f} | {row['speedup']:.2f}x |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--configs", nargs="+", default=["point-mass", "swimmer"], choices=list(CONFIGS))
    parser.add_argument("--agents", type=int, nargs="+", default=[1, 4, 10], help="numbers of agents N")
    parser.add_argument("--calls", type=int, default=10, help="timed rounds per figure (median)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--fill", type=int, default=10_000, help="transitions in each agent's replay column")
    parser.add_argument("--cuda-graph", action="store_true", help="also time the batched step with cuda_graph=True")
    parser.add_argument(
        "--bf16",
        action="store_true",
        help="also time the batched step (graphed with --cuda-graph) planning in bfloat16, against its float32 twin",
    )
    parser.add_argument("--mixed", action="store_true", help="one mixed MaxDiff + NN-MPPI batch against two batches")
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()
    th.set_num_threads(args.threads)
    th.set_flush_denormal(True)
    th.manual_seed(0)
    device_name = th.cuda.get_device_name() if args.device.startswith("cuda") else platform.processor() or platform.machine()
    print(f"{device_name}, torch {th.__version__}, {th.get_num_threads()} threads, device {args.device}, {args.calls} rounds")
    if args.mixed:
        rows = [measure_mixed(name, n_agents, args) for name in args.configs for n_agents in args.agents]
        print_mixed(rows)
        if args.json:
            with open(args.json, "w") as file:
                json.dump({"threads": args.threads, "device": args.device, "rows": rows}, file, indent=1)
        return
    rows = [measure(name, n_agents, args) for name in args.configs for n_agents in args.agents]
    graph_head, graph_rule = (" graphed ms / agent-step | graph speed-up |", "---|---|") if args.cuda_graph else ("", "")
    if args.bf16:
        graph_head += f" {'graphed, ' if args.cuda_graph else ''}bfloat16 planner ms / agent-step | bfloat16 speed-up |"
        graph_rule += "---|---|"
    print(f"\n| config | N agents | batched ms / agent-step | sequential ms / agent-step | batched speed-up |{graph_head}")
    print(f"|---|---|---|---|---|{graph_rule}")
    for row in rows:
        graph_cells = f" {row['graphed_ms_per_agent_step']:.2f} | {row['graph_speedup']:.2f}x |" if args.cuda_graph else ""
        if args.bf16:
            graph_cells += f" {row['bf16_ms_per_agent_step']:.2f} | {row['bf16_speedup']:.2f}x |"
        print(
            f"| {row['config']} | {row['n_agents']} | {row['batched_ms_per_agent_step']:.2f} | "
            f"{row['sequential_ms_per_agent_step']:.2f} | {row['speedup']:.2f}x |{graph_cells}"
        )
    if args.json:
        with open(args.json, "w") as file:
            json.dump({"threads": args.threads, "device": args.device, "rows": rows}, file, indent=1)


if __name__ == "__main__":
    main()
