"""
What flushing denormal floats saves when a trained model plans outside ``learn`` (``predict``, evaluation): a plan of
a committed Swimmer model timed with the planner's denormals kept and flushed, in interleaved rounds, one torch
thread. ``predict`` flushes them on a CPU; this calls the policy's ``plan`` directly to time both ways, and checks
that both give the same plan::

    python benchmarks/predict_denormals.py --model docs/reproduction/models/swimmer_alpha10_50k_seed0.zip
"""

import argparse
import statistics
import time

import gymnasium as gym
import torch as th

import sb3_maxdiff  # noqa: F401  (registers the environments)
from sb3_maxdiff import MaxDiffMPPI
from sb3_maxdiff.common.utils import flushing_denormals


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="docs/reproduction/models/swimmer_alpha10_50k_seed0.zip")
    parser.add_argument("--env", default="sb3_maxdiff/Swimmer-heavy-v0")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--plans", type=int, default=10, help="plans per round and setting, along one episode")
    args = parser.parse_args()
    th.set_num_threads(1)
    model = MaxDiffMPPI.load(args.model, device="cpu")
    env = gym.make(args.env)
    obs, _ = env.reset(seed=0)
    times: dict[str, list[float]] = {"kept": [], "flushed": []}
    nominal, same = None, True
    for _ in range(args.rounds):
        for _ in range(args.plans):
            observation = th.as_tensor(obs, dtype=th.float32)[None]
            start = time.perf_counter()
            kept = model.policy.plan(observation, nominal, None, deterministic=True)
            times["kept"].append(time.perf_counter() - start)
            start = time.perf_counter()
            with flushing_denormals():
                flushed = model.policy.plan(observation, nominal, None, deterministic=True)
            times["flushed"].append(time.perf_counter() - start)
            same &= th.equal(kept.actions, flushed.actions) and th.equal(kept.nominal, flushed.nominal)
            nominal = flushed.nominal
            obs, *_ = env.step(model.policy.env_actions(flushed.actions.numpy())[0][0])
    kept_ms, flushed_ms = (1e3 * statistics.median(times[name]) for name in ("kept", "flushed"))
    print(f"{args.model}: median plan {kept_ms:.1f} ms with denormals kept, {flushed_ms:.1f} ms flushed "
          f"({kept_ms / flushed_ms:.1f}x); same plans: {same} ({len(times['kept'])} plans)")  # fmt: skip


if __name__ == "__main__":
    main()
