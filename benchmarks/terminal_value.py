"""
The cost of a training step with a 10-step horizon and a terminal value, against the published 40-step planner:
MaxDiff on the heavy Swimmer with the settings of the preset ``terminal-value`` (cells "H=10 value" and "H=40") and of
the preset ``past-horizon`` (cell "swimmer critic": the actor-critic, ``terminal_value="q"``), one environment, timed
in the same process in alternating rounds.

    python benchmarks/terminal_value.py --calls 30

A step is one plan (``_sample_action``) and the updates that follow it (``train``: 5 gradient steps; with the value,
the value's TD loss and the target network's update are part of them; with the critic, 5 SAC updates of the actor
and critics on the same minibatches). Times are the process's CPU time (one torch thread), so that another process
on the machine does not count; the figures that matter are the ratios.
"""

import argparse
import statistics
import time

import torch as th
from stable_baselines3.common.logger import configure

from sb3_maxdiff import MaxDiffMPPI
from sb3_maxdiff.envs import SWIMMER_HEAVY
from sb3_maxdiff.experiments.define.presets import cell_kwargs, get_budget, get_preset

# (preset, cell setting) of each timed setting
CELLS = {"H=10 value": ("terminal-value", "H=10 value"), "H=10 critic": ("past-horizon", "swimmer critic")}
CELLS["H=40"] = ("terminal-value", "H=40")
SETTINGS = tuple(CELLS)


def make_model(setting: str, warmup_steps: int) -> MaxDiffMPPI:
    """The preset's MaxDiff for ``setting``, trained ``warmup_steps`` steps (a filled buffer, a model that moves)."""
    preset, cell = CELLS[setting]
    kwargs = cell_kwargs(get_preset(preset).cell(cell, "maxdiff"), get_budget("reduced"))
    model = MaxDiffMPPI("MlpPolicy", SWIMMER_HEAVY, seed=0, device="cpu", **kwargs)
    model.learn(warmup_steps)
    model.set_logger(configure(None, [""]))
    return model


def time_step(model: MaxDiffMPPI) -> tuple[float, float]:
    """CPU seconds of one plan and of the updates that follow it."""
    start = time.process_time()
    model._sample_action(model.learning_starts, None, n_envs=1)
    planned = time.process_time()
    model.train(model.gradient_steps, model.batch_size)
    return planned - start, time.process_time() - planned


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=30, help="timed steps per setting (median reported)")
    parser.add_argument("--warmup-steps", type=int, default=300, help="training steps before timing")
    args = parser.parse_args()
    th.set_num_threads(1)
    models = {setting: make_model(setting, args.warmup_steps) for setting in SETTINGS}
    times: dict[str, list[tuple[float, float]]] = {setting: [] for setting in SETTINGS}
    for _ in range(args.calls):
        for setting, model in models.items():
            times[setting].append(time_step(model))
    steps = {}
    print("| setting | plan (ms) | 5 updates (ms) | step (ms) |")
    print("|---|---|---|---|")
    for setting, rows in times.items():
        plan = statistics.median(row[0] for row in rows)
        updates = statistics.median(row[1] for row in rows)
        steps[setting] = statistics.median(row[0] + row[1] for row in rows)
        print(f"| {setting} | {1e3 * plan:.1f} | {1e3 * updates:.1f} | {1e3 * steps[setting]:.1f} |")
    for setting in SETTINGS[:-1]:
        print(f"step {setting} / step H=40: {steps[setting] / steps['H=40']:.2f}")


if __name__ == "__main__":
    main()
