"""
Host time of the replay draw that feeds the model updates of N batched agents (``sample_per_env``: each agent's
rows from its own column), by flat index (``Cells.gather``, now) against numpy's fancy indexing with two broadcast
index arrays (before), on the same buffer contents and the same draws, interleaved; the two draws are checked equal.
Times are the process's CPU time (one torch thread), which the load of other processes on the machine disturbs less
than the wall clock.

The default is a training step of a 20-agent Swimmer batch (5 updates of 128 rows: 640 rows per agent) at three
fills of each agent's column:

    python benchmarks/replay_draw.py [--agents 20] [--rows-per-draw 640] [--fills 1000 10000 100000] [--calls 30]
"""

import argparse
import time

import numpy as np
import torch as th
from checkpoint_buffer import filled_buffer

from sb3_maxdiff.common.buffers import Cells, NextActionReplayBuffer


class _FancyIndexedCells(Cells):
    """The cells as they were gathered before: the array indexed by the broadcast (row, environment) index arrays."""

    def __init__(self, rows: np.ndarray, envs: np.ndarray, n_envs: int):
        self.rows, self.envs = rows, envs

    def gather(self, array: np.ndarray) -> np.ndarray:
        return array[self.rows, self.envs]


class _FancyIndexingBuffer(NextActionReplayBuffer):
    """The buffer as it drew before."""

    cells_type = _FancyIndexedCells


def draw_ms(buffers: dict[str, NextActionReplayBuffer], rows: int, calls: int) -> dict[str, float]:
    """Median milliseconds of one draw of each buffer, the buffers' draws interleaved and seeded alike."""
    times: dict[str, list[float]] = {name: [] for name in buffers}
    for call in range(calls + 1):
        draws = []
        for name, buffer in buffers.items():
            np.random.seed(call)
            start = time.process_time()
            draws.append(buffer.sample_per_env(rows))
            if call:  # the first call warms up
                times[name].append(time.process_time() - start)
        for got, want in zip(*draws, strict=True):
            assert bool((got == want).all()), "the two draws differ"
    return {name: 1e3 * float(np.median(values)) for name, values in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--agents", type=int, default=20)
    parser.add_argument("--rows-per-draw", type=int, default=640, help="rows drawn per agent (updates x batch size)")
    parser.add_argument("--fills", type=int, nargs="+", default=[1_000, 10_000, 100_000], help="rows per agent")
    parser.add_argument("--calls", type=int, default=30)
    args = parser.parse_args()
    th.set_num_threads(1)
    print(f"{args.agents} agents, {args.rows_per_draw} rows each per draw, median of {args.calls} draws\n")
    print("| rows per agent | fancy indexing (before), ms | flat index (now), ms | speed-up |")
    print("|---|---|---|---|")
    for fill in args.fills:
        buffers = {
            name: filled_buffer(args.agents, fill, fill + 1, cls)
            for name, cls in (("before", _FancyIndexingBuffer), ("now", NextActionReplayBuffer))
        }
        ms = draw_ms(buffers, args.rows_per_draw, args.calls)
        print(f"| {fill} | {ms['before']:.3f} | {ms['now']:.3f} | {ms['before'] / ms['now']:.1f}x |")


if __name__ == "__main__":
    main()
