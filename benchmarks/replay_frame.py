"""
Where the time of a Hub package's replay video goes: one frame is one plan (``predict``), one environment step and
one render. MaxDiff on the heavy Swimmer with the published settings (horizon 40, 500 samples), untrained (a plan
costs the same), rendered at Gymnasium's default size through the backend ``hub package`` would choose on this
machine (a display, else EGL, else OSMesa).

    python benchmarks/replay_frame.py --frames 50

Times are wall-clock medians per frame: rendering may run in the OpenGL driver's own threads (Mesa's llvmpipe on a
machine without a GPU), and a user waits for the wall clock.
"""

import argparse
import statistics
import time

import gymnasium as gym
import numpy as np
import torch as th

from sb3_maxdiff import MaxDiffMPPI
from sb3_maxdiff.envs import SWIMMER_HEAVY
from sb3_maxdiff.envs.rendering import choose_offscreen_backend

PARTS = ("predict", "step", "render")


def time_frames(frames: int) -> dict[str, list[float]]:
    """Seconds of each part of ``frames`` replay frames."""
    env = gym.make(SWIMMER_HEAVY, render_mode="rgb_array")
    model = MaxDiffMPPI("MlpPolicy", env, alpha=100.0, temperature=0.1, seed=0, device="cpu")
    obs, _ = env.reset(seed=0)
    env.render()  # the first frame creates the OpenGL context
    times: dict[str, list[float]] = {part: [] for part in PARTS}
    for _ in range(frames):
        start = time.perf_counter()
        action, _ = model.predict(obs, deterministic=True)
        planned = time.perf_counter()
        obs, _, terminated, truncated, _ = env.step(action)
        stepped = time.perf_counter()
        frame = np.asarray(env.render())
        rendered = time.perf_counter()
        for part, seconds in zip(PARTS, (planned - start, stepped - planned, rendered - stepped)):
            times[part].append(seconds)
        if terminated or truncated:
            obs, _ = env.reset()
    env.close()
    print(f"frame {frame.shape[1]}x{frame.shape[0]}")
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--frames", type=int, default=50, help="timed frames (median reported)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads for the planner")
    args = parser.parse_args()
    th.set_num_threads(args.threads)
    backend = choose_offscreen_backend()
    if backend is None:
        raise SystemExit("MuJoCo cannot render here (no display, no EGL, no OSMesa): nothing to time")
    print(f"MuJoCo renders through {backend}")
    medians = {part: 1000 * statistics.median(seconds) for part, seconds in time_frames(args.frames).items()}
    total = sum(medians.values())
    print("| part | ms per frame | share |")
    print("|---|---|---|")
    for part, milliseconds in medians.items():
        print(f"| {part} | {milliseconds:.1f} | {milliseconds / total:.0%} |")
    print(f"| frame | {total:.1f} | 100% |")
    print(f"a 1,000-step replay video: about {total:.0f} s")


if __name__ == "__main__":
    main()
