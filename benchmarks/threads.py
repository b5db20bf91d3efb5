"""
Time per training step of ``MaxDiffMPPI("Swimmer-v4")`` (the defaults a user gets) at several torch thread counts,
each in a fresh process, alternating the settings so that a change of the machine's load hits them alike::

    python benchmarks/threads.py                      # 1 thread against torch's default (one per core)
    python benchmarks/threads.py --threads 1 2 --steps 300 --repeats 3

A figure is the median ms per environment step after ``learning_starts`` (one planner call and the model
updates), over the steps of a run, then the median over the runs of a setting. The load average and the core
count are printed with the table: the thread count matters most when other processes share the cores.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np


def one_run(threads: int, steps: int, env_id: str) -> float:
    """Median ms per step after learning starts of one ``learn`` call, with ``threads`` torch threads (0: default)."""
    import torch as th
    from stable_baselines3.common.callbacks import BaseCallback

    from sb3_maxdiff import MaxDiffMPPI

    if threads > 0:
        th.set_num_threads(threads)
    model = MaxDiffMPPI(env_id, seed=0)

    class Clock(BaseCallback):
        def __init__(self) -> None:
            super().__init__()
            self.stamps: list[float] = []

        def _on_step(self) -> bool:
            if self.num_timesteps > model.learning_starts:
                self.stamps.append(time.perf_counter())
            return True

    clock = Clock()
    model.learn(model.learning_starts + steps, callback=clock)
    return float(np.median(np.diff(clock.stamps)) * 1000.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 0], help="torch threads per setting (0: default)")
    parser.add_argument("--steps", type=int, default=200, help="timed steps per run, after learning starts")
    parser.add_argument("--repeats", type=int, default=2, help="runs per setting, alternating the settings")
    parser.add_argument("--env", default="Swimmer-v4")
    parser.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        print(json.dumps(one_run(args.child, args.steps, args.env)))
        return
    results: dict[int, list[float]] = {threads: [] for threads in args.threads}
    loads = []
    for _ in range(args.repeats):
        for threads in args.threads:
            command = [sys.executable, __file__, "--child", str(threads), "--steps", str(args.steps), "--env", args.env]
            loads.append(os.getloadavg()[0])
            output = subprocess.run(command, check=True, capture_output=True, text=True).stdout
            results[threads].append(json.loads(output.strip().splitlines()[-1]))
    import torch as th

    default = th.get_num_threads()
    print(f"{args.env}, {os.cpu_count()} cores, torch default {default} threads, load average {statistics.mean(loads):.1f}")
    print("| torch threads | ms per step (median over runs) | runs |")
    print("|---|---|---|")
    for threads, values in results.items():
        label = f"{threads}" if threads > 0 else f"default ({default})"
        print(f"| {label} | {statistics.median(values):.1f} | {', '.join(f'{value:.1f}' for value in values)} |")


if __name__ == "__main__":
    main()
