"""
Size and write / read time of a checkpoint's replay buffer, in its pickled form (SB3's ``save_replay_buffer``):
the former one, every row of the capacity, against the filled rows only (``NextActionReplayBuffer.__getstate__``).

The default case is the heavy-tail Swimmer retrain of REPRODUCTION.md at its checkpoint of 19,000 steps per agent:
one batch of 10 agents, each with a buffer of 1M rows, float64 observations of 10 numbers, 2 actions.

    python benchmarks/checkpoint_buffer.py [--agents 10] [--rows 19000] [--capacity 1000000]
"""

import argparse
import os
import tempfile
import time

import numpy as np
from gymnasium import spaces
from stable_baselines3.common.save_util import load_from_pkl, save_to_pkl

from sb3_maxdiff.common.buffers import NextActionReplayBuffer


class _WholeCapacityBuffer(NextActionReplayBuffer):
    """The buffer as it was pickled before: every row of its capacity."""

    def __getstate__(self) -> dict:
        return dict(self.__dict__)


def filled_buffer(agents: int, rows: int, capacity: int, cls: type = NextActionReplayBuffer) -> NextActionReplayBuffer:
    """A Swimmer-shaped buffer of ``agents`` environments with ``rows`` random transitions."""
    obs = spaces.Box(-np.inf, np.inf, (10,), np.float64)
    action = spaces.Box(-1.0, 1.0, (2,), np.float32)
    buffer = cls(agents * capacity, obs, action, "cpu", n_envs=agents)
    rng = np.random.default_rng(0)
    for name in ("observations", "next_observations", "actions", "next_actions", "rewards", "bootstrap_masks"):
        array = getattr(buffer, name)
        array[:rows] = rng.standard_normal(array[:rows].shape)
    buffer.pos = rows
    return buffer


def measure(buffer: NextActionReplayBuffer, path: str) -> tuple[float, float, float]:
    """File size (MiB), write and read seconds."""
    start = time.perf_counter()
    save_to_pkl(path, buffer)
    write = time.perf_counter() - start
    start = time.perf_counter()
    load_from_pkl(path)
    read = time.perf_counter() - start
    return os.path.getsize(path) / 2**20, write, read


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--agents", type=int, default=10)
    parser.add_argument("--rows", type=int, default=19_000, help="transitions stored per agent")
    parser.add_argument("--capacity", type=int, default=1_000_000, help="buffer rows per agent")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "replay_buffer.pkl")
        for label, cls in (("whole capacity (before)", _WholeCapacityBuffer), ("filled rows (now)", NextActionReplayBuffer)):
            size, write, read = measure(filled_buffer(args.agents, args.rows, args.capacity, cls), path)
            print(f"{label}: {size:.1f} MiB, write {write:.2f} s, read {read:.2f} s")


if __name__ == "__main__":
    main()
