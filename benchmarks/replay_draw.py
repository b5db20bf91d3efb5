"""
Host time of the replay draw that feeds the model updates of N batched agents (``sample_per_env``: each agent's
rows from its own column), by flat index (``Cells.gather``, now) against numpy's fancy indexing with two broadcast
index arrays (before), on the same buffer and the same draws, interleaved; the two ways' draws are checked equal.
Then a whole training step (``learn``) of the same batch with networks too small to cost anything, each way in
turn: the host's part of a step, which the draw is a part of. Times are the process's CPU time (one torch thread),
which the load of other processes on the machine disturbs less than the wall clock.

The default is a training step of a 20-agent Swimmer batch (5 updates of 128 rows: 640 rows per agent) at three
fills of each agent's column:

    python benchmarks/replay_draw.py [--agents 20] [--rows-per-draw 640] [--fills 1000 10000 100000] [--calls 30] \\
        [--learn-steps 100] [--learn-fill 10000] [--rounds 3]
"""

import argparse
import contextlib
import time
from unittest import mock

import numpy as np
import torch as th
from checkpoint_buffer import filled_buffer
from run import Config, fill_replay_buffer, make_algorithm

from sb3_maxdiff.common import buffers
from sb3_maxdiff.common.buffers import Cells, NextActionReplayBuffer


class _FancyIndexedCells(Cells):
    """The cells as they were gathered before: the array indexed by the broadcast (row, environment) index arrays."""

    def __init__(self, rows: np.ndarray, envs: np.ndarray, n_envs: int):
        self.rows, self.envs = rows, envs

    def gather(self, array: np.ndarray) -> np.ndarray:
        return array[self.rows, self.envs]


WAYS: dict[str, type[Cells]] = {"before": _FancyIndexedCells, "now": Cells}


def drawing(way: str) -> contextlib.AbstractContextManager:
    """Within it, every replay draw gathers its cells the way named (``"before"`` or ``"now"``)."""
    return mock.patch.object(buffers, "Cells", WAYS[way])


def draw_ms(buffer: NextActionReplayBuffer, rows: int, calls: int) -> dict[str, float]:
    """Median milliseconds of one draw of ``buffer`` each way, the ways interleaved and their draws seeded alike."""
    times: dict[str, list[float]] = {way: [] for way in WAYS}
    for call in range(calls + 1):
        draws = []
        for way in WAYS:
            np.random.seed(call)
            with drawing(way):
                start = time.process_time()
                draws.append(buffer.sample_per_env(rows))
                if call:  # the first call warms up
                    times[way].append(time.process_time() - start)
        for got, want in zip(*draws, strict=True):
            assert bool((got == want).all()), "the two ways drew differently"
    return {way: 1e3 * float(np.median(values)) for way, values in times.items()}


# the Swimmer batch with networks too small to cost anything: what is left of a training step is the host's part
TINY_SWIMMER = Config("sb3_maxdiff/Swimmer-heavy-v0", [8], 2, 4, 128, [0, 1, 5, 6], [1.0, 1.0, 0.05, 0.05])


def learn_ms(agents: int, fill: int, steps: int, rounds: int) -> dict[str, float]:
    """
    Process milliseconds per batch step of ``learn`` for ``agents`` batched agents with tiny networks (eager, on the
    CPU), each agent's column prefilled with ``fill`` rows, drawing each way in turn: rounds of ``steps`` batch steps,
    alternated, the median round of each way.
    """
    model = make_algorithm(TINY_SWIMMER, "cpu", fill + (rounds * 2 + 1) * steps, n_envs=agents, independent_agents=True)
    fill_replay_buffer(model, fill, np.random.default_rng(0))
    model.learn(steps * agents, reset_num_timesteps=False)  # warm-up
    times: dict[str, list[float]] = {way: [] for way in WAYS}
    for _ in range(rounds):
        for way in WAYS:
            with drawing(way):
                start = time.process_time()
                model.learn(steps * agents, reset_num_timesteps=False)
                times[way].append(1e3 * (time.process_time() - start) / steps)
    return {way: float(np.median(values)) for way, values in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--agents", type=int, default=20)
    parser.add_argument("--rows-per-draw", type=int, default=640, help="rows drawn per agent (updates x batch size)")
    parser.add_argument("--fills", type=int, nargs="+", default=[1_000, 10_000, 100_000], help="rows per agent")
    parser.add_argument("--calls", type=int, default=30)
    parser.add_argument("--learn-steps", type=int, default=100, help="batch steps of learn per round; 0: no learn")
    parser.add_argument("--learn-fill", type=int, default=10_000, help="rows per agent before learn")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of learn each way")
    args = parser.parse_args()
    th.set_num_threads(1)
    print(f"{args.agents} agents, {args.rows_per_draw} rows each per draw, median of {args.calls} draws\n")
    print("| rows per agent | fancy indexing (before), ms | flat index (now), ms | speed-up |")
    print("|---|---|---|---|")
    for fill in args.fills:
        ms = draw_ms(filled_buffer(args.agents, fill, fill + 1), args.rows_per_draw, args.calls)
        print(f"| {fill} | {ms['before']:.3f} | {ms['now']:.3f} | {ms['before'] / ms['now']:.1f}x |")
    if args.learn_steps:
        ms = learn_ms(args.agents, args.learn_fill, args.learn_steps, args.rounds)
        print(f"\nA whole training step of {args.agents} Swimmer agents with tiny networks (hidden layer of 8, 4 samples,")
        print(f"horizon 2), {args.learn_fill} rows per agent before, median of {args.rounds} rounds of {args.learn_steps}")
        print("batch steps each way, alternated:\n")
        print("| training step | before, ms per batch step | now | speed-up |")
        print("|---|---|---|---|")
        print(f"| `learn`, tiny networks | {ms['before']:.2f} | {ms['now']:.2f} | {ms['before'] / ms['now']:.2f}x |")


if __name__ == "__main__":
    main()
