"""
Where a training step's time goes: the planner call and the model updates of one step, each profiled with
``torch.profiler`` after warm-up calls, with the kernel launches, host copies and GPU time per call, and on a GPU
the kernels that take most of its time (``--tables`` prints them, ``--json`` keeps the first 15)::

    python benchmarks/profile_step.py --device cuda                     # Swimmer: 1 agent eager, 10 agents graphed
    python benchmarks/profile_step.py --device cpu --cases 1 4 --calls 3

A case is ``N`` (N independent agents, eager) or ``N:graph`` (``cuda_graph=True``: the planner, and for
N > 1 the model updates, replayed as CUDA graphs). On a GPU a
step is bound by the host when the GPU is busy for a small part of the host's time per call; the printed table
of each part names the operators that cost the host the most.

``--plan-parts`` also profiles two pieces of the planner call alone, eager in every case, on the shapes of that
call: the model rollout of every sample, and the path entropy of the predicted states (MaxDiff). Their GPU busy time
says how a plan's GPU time divides between them and the rest (noise, scores, weights, update of the nominal).
"""

import argparse
import functools
import json
from collections.abc import Callable

import numpy as np
import torch as th
from run import CONFIGS, fill_replay_buffer, make_algorithm
from torch.profiler import ProfilerActivity, profile

from sb3_maxdiff import MaxDiffMPPI
from sb3_maxdiff.common.mppi import rollout

LAUNCHES = ("cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cudaGraphLaunch")
HOST_COPIES = ("cudaMemcpyAsync", "cudaStreamSynchronize", "cudaDeviceSynchronize")


def parse_case(case: str) -> tuple[int, bool]:
    """``"10"`` -> (10, False), ``"10:graph"`` -> (10, True)."""
    agents, _, option = case.partition(":")
    if not agents.isdigit() or int(agents) < 1 or option not in ("", "graph"):
        raise argparse.ArgumentTypeError(f"case must be N or N:graph with N >= 1, got {case!r}")
    return int(agents), option == "graph"


def plan_parts(model: MaxDiffMPPI) -> dict[str, Callable[[], object]]:
    """
    The rollout and the path entropy of one planner call of ``model``, each alone and eager: the rollout of
    n_samples random action sequences from the current observations, and the entropy of the states it predicts
    (the second only where the planner has a path-entropy term).
    """
    policy = model.policy
    planner = policy.planner
    settings = planner.settings
    obs = policy.obs_to_tensor(model._last_obs)[0].float()  # type: ignore[arg-type,union-attr]
    shape = (obs.shape[0], settings.n_samples, settings.horizon, planner.action_dim)
    generator = th.Generator(device=obs.device).manual_seed(0)
    samples = settings.noise_std * th.randn(shape, device=obs.device, generator=generator)
    start = obs[:, None].expand(*shape[:2], obs.shape[-1])

    def roll() -> tuple[th.Tensor, th.Tensor]:
        with th.no_grad():
            return rollout(policy.model, start, samples, settings.state_bound, settings.compute_dtype)

    parts: dict[str, Callable[[], object]] = {"plan: rollout": roll}
    bonus = planner.entropy_bonus
    if bonus is not None:
        states = roll()[1]
        parts["plan: path entropy"] = lambda: bonus(states, None, generator)
    return parts


def profile_part(call, calls: int, device: str) -> tuple[dict, str]:
    """Figures per call of ``call`` over ``calls`` profiled calls (after as many warm-up calls), and the table."""
    cuda = device.startswith("cuda")

    def run() -> None:
        for _ in range(calls):
            call()
        if cuda:
            th.cuda.synchronize()

    run()
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    with profile(activities=activities) as prof:
        run()
    events = prof.key_averages()
    figures = {
        "kernel_launches": sum(e.count for e in events if e.key in LAUNCHES) / calls,
        "host_copies_and_syncs": sum(e.count for e in events if e.key in HOST_COPIES) / calls,
        "host_ms": sum(e.self_cpu_time_total for e in events) / calls / 1e3,
        "gpu_busy_ms": sum(e.self_device_time_total for e in events if e.device_type.name == "CUDA") / calls / 1e3,
    }
    table = events.table(sort_by="self_cpu_time_total", row_limit=12, max_name_column_width=45)
    if cuda:  # the kernels that take the GPU's time, for work on the kernels themselves (a graph hides them from the host)
        kernels = sorted(
            (e for e in events if e.device_type.name == "CUDA"), key=lambda e: e.self_device_time_total, reverse=True
        )
        figures["top_kernels"] = [
            {"kernel": e.key, "calls": e.count / calls, "gpu_ms": e.self_device_time_total / calls / 1e3} for e in kernels[:15]
        ]
        table += "\n" + events.table(sort_by="self_device_time_total", row_limit=20, max_name_column_width=60)
    return figures, table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", default="swimmer", choices=list(CONFIGS))
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--cases", type=parse_case, nargs="+", default=[(1, False), (10, True)], help="N or N:graph")
    parser.add_argument("--calls", type=int, default=5, help="profiled calls of each part (after as many warm-ups)")
    parser.add_argument("--fill", type=int, default=10_000, help="transitions in each agent's replay column")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--plan-parts", action="store_true", help="also profile the rollout and path entropy alone")
    parser.add_argument("--tables", action="store_true", help="also print the profiler's table of each part")
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()
    th.set_num_threads(args.threads)
    config = CONFIGS[args.config]
    rows = []
    for n_agents, graph in args.cases:
        batch = dict(n_envs=n_agents, independent_agents=True) if n_agents > 1 else {}
        model = make_algorithm(config, args.device, args.fill, cuda_graph=graph, **batch)
        fill_replay_buffer(model, args.fill, np.random.default_rng(0))
        parts: dict[str, Callable[[], object]] = {
            "plan": functools.partial(model._sample_action, 0, n_envs=model.n_envs),
            f"{config.gradient_steps} updates": functools.partial(model.train, config.gradient_steps, config.batch_size),
            **(plan_parts(model) if args.plan_parts else {}),
        }
        for part, call in parts.items():
            figures, table = profile_part(call, args.calls, args.device)
            rows.append({"config": args.config, "n_agents": n_agents, "cuda_graph": graph, "part": part, **figures})
            if args.tables:
                print(f"\n{args.config}, N = {n_agents}, cuda_graph={graph}, {part}\n{table}")
    print(f"\n{args.config}, device {args.device}, per call (mean of {args.calls} profiled calls)\n")
    print("| N agents | cuda_graph | part | kernel launches | host copies and syncs | host ms | GPU busy ms |")
    print("|---|---|---|---|---|---|---|")
    for row in rows:
        print(
            f"| {row['n_agents']} | {row['cuda_graph']} | {row['part']} | {row['kernel_launches']:.0f} | "
            f"{row['host_copies_and_syncs']:.1f} | {row['host_ms']:.2f} | {row['gpu_busy_ms']:.2f} |"
        )
    if args.json:
        with open(args.json, "w") as file:
            json.dump({"device": args.device, "threads": args.threads, "rows": rows}, file, indent=1)


if __name__ == "__main__":
    main()
