"""
The host's part of a batched training step: the environments of a batch stepped one after the other by SB3's
``DummyVecEnv`` against ``ThreadedVecEnv`` (what the runner's batches step in: one thread, the calling one, by
default; ``--env-threads`` more), in the same rounds::

    python benchmarks/env_threads.py                                  # 20 heavy-tail Swimmers, 1 and 2 threads
    python benchmarks/env_threads.py --envs 10 20 --threads 2 4 8 16   # on a GPU machine's host

Figures are ms per step of the whole batch (median over ``--rounds`` rounds of ``--steps`` steps with random
actions; in each round every setting is timed once, so that a slow spell of the machine hits them alike), with
episodes of 1,000 steps ending and restarting as in training.
"""

import argparse
import json
import os
import platform
import statistics
import time
from copy import deepcopy
from typing import Any

import gymnasium as gym
import numpy as np
from stable_baselines3.common.preprocessing import get_action_dim
from stable_baselines3.common.vec_env import DummyVecEnv

import sb3_maxdiff  # noqa: F401  (registers the environments)
from sb3_maxdiff.common.vec_env import ThreadedVecEnv
from sb3_maxdiff.envs import SWIMMER_HEAVY


def time_settings(env_id: str, n_envs: int, thread_counts: list[int], steps: int, rounds: int) -> dict[str, float]:
    """Median ms per batch step of each setting ("one after the other", "N threads")."""
    make = [lambda: gym.make(env_id)] * n_envs
    vec_envs = {"one after the other": DummyVecEnv(make)}
    vec_envs.update({f"{count} threads": ThreadedVecEnv(make, count) for count in thread_counts})
    for vec_env in vec_envs.values():
        vec_env.seed(0)
        vec_env.reset()
    rng = np.random.default_rng(0)
    shape = (steps, n_envs, get_action_dim(vec_envs["one after the other"].action_space))
    times: dict[str, list[float]] = {name: [] for name in vec_envs}
    for round_index in range(rounds + 1):  # one warm-up round
        actions = rng.uniform(-1.0, 1.0, shape).astype(np.float32)
        for name, vec_env in vec_envs.items():
            start = time.perf_counter()
            for action in actions:
                vec_env.step(action)
            if round_index:
                times[name].append(1e3 * (time.perf_counter() - start) / steps)
    for vec_env in vec_envs.values():
        vec_env.close()
    return {name: statistics.median(values) for name, values in times.items()}


def physics_share(env_id: str, steps: int = 2000) -> tuple[float, float] | None:
    """
    Microseconds of one environment step, and of its physics alone (MuJoCo's ``mj_step`` over the frame skip, the
    part that runs without Python's lock); None for an environment that is not MuJoCo's.
    """
    env = gym.make(env_id)
    env.reset(seed=0)
    simulation: Any = env.unwrapped  # a MuJoCo environment: model, data, frame_skip
    if not hasattr(simulation, "frame_skip"):
        return None
    import mujoco

    action = np.zeros(get_action_dim(env.action_space), dtype=np.float32)
    start = time.perf_counter()
    for _ in range(steps):
        env.step(action)
    whole = 1e6 * (time.perf_counter() - start) / steps
    start = time.perf_counter()
    for _ in range(steps):
        mujoco.mj_step(simulation.model, simulation.data, nstep=simulation.frame_skip)
    physics = 1e6 * (time.perf_counter() - start) / steps
    env.close()
    return whole, physics


def info_copy_us(env_id: str, n_envs: int, repeats: int = 1000) -> tuple[float, float]:
    """
    Microseconds to copy one step's infos of ``n_envs`` environments: deep copies (what ``DummyVecEnv`` returns) and
    copies of the dicts alone (what ``ThreadedVecEnv`` returns).
    """
    vec_env = DummyVecEnv([lambda: gym.make(env_id)] * n_envs)
    vec_env.reset()
    infos = vec_env.step(np.zeros((n_envs, get_action_dim(vec_env.action_space)), dtype=np.float32))[3]
    vec_env.close()
    timings = []
    for copy_infos in (deepcopy, lambda infos: [dict(info) for info in infos]):
        start = time.perf_counter()
        for _ in range(repeats):
            copy_infos(infos)
        timings.append(1e6 * (time.perf_counter() - start) / repeats)
    return timings[0], timings[1]


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env", default=SWIMMER_HEAVY)
    parser.add_argument("--envs", type=int, nargs="+", default=[20], help="environments in the batch")
    parser.add_argument("--threads", type=int, nargs="+", default=[2], help="thread counts to time")
    parser.add_argument("--steps", type=int, default=200, help="batch steps per round")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--json", default=None, help="also write the rows to this file")
    args = parser.parse_args(argv)
    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}")
    rows = []
    for n_envs in args.envs:
        medians = time_settings(args.env, n_envs, args.threads, args.steps, args.rounds)
        serial = medians["one after the other"]
        for name, ms in medians.items():
            rows.append({"n_envs": n_envs, "setting": name, "ms_per_batch_step": ms, "speedup": serial / ms})
    print("| environments | setting | ms per batch step | ms per environment step | speed-up |")
    print("|---|---|---|---|---|")
    for row in rows:
        per_env = row["ms_per_batch_step"] / row["n_envs"]
        print(
            f"| {row['n_envs']} | {row['setting']} | {row['ms_per_batch_step']:.2f} | {per_env:.3f} | {row['speedup']:.2f}x |"
        )
    share = physics_share(args.env)
    if share is not None:
        print(f"\none environment step: {share[0]:.0f} us, of which the physics (mj_step x frame skip) {share[1]:.0f} us")
    copies = {n_envs: info_copy_us(args.env, n_envs) for n_envs in args.envs}
    for n_envs, (deep, dicts) in copies.items():
        print(f"the infos of {n_envs} environments: deep copies {deep:.0f} us, copies of the dicts {dicts:.0f} us")
    if args.json:
        with open(args.json, "w") as file:
            result = {"args": vars(args), "rows": rows, "step_us_and_physics_us": share, "info_copy_us": copies}
            json.dump(result, file, indent=1)
    return rows


if __name__ == "__main__":
    main()
