"""
The cost of a training step with a 10-step horizon and a terminal value, against the published 40-step planner:
MaxDiff on the heavy Swimmer with the settings of the preset ``terminal-value`` (cells "H=10 value" and "H=40") and of
the preset ``past-horizon`` (cell "swimmer critic": the actor-critic, ``terminal_value="q"``), one environment, timed
in the same process in alternating rounds. ``--body halfcheetah`` times the multi-shot HalfCheetah of ``past-horizon``
instead, whose published planner already looks 10 steps ahead: MaxDiff as published against it with the critic.

    python benchmarks/terminal_value.py --calls 30
    python benchmarks/terminal_value.py --calls 30 --body halfcheetah

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
from sb3_maxdiff.experiments.define.presets import cell_kwargs, get_budget, get_preset

# per body, the (preset, cell setting) of each timed setting, the published planner last (the ratios' baseline)
BODIES = {
    "swimmer": {
        "H=10 value": ("terminal-value", "H=10 value"),
        "H=10 critic": ("past-horizon", "swimmer critic"),
        "H=40": ("terminal-value", "H=40"),
    },
    "halfcheetah": {"H=10 critic": ("past-horizon", "halfcheetah critic"), "H=10": ("past-horizon", "halfcheetah")},
}


def make_model(preset: str, setting: str, warmup_steps: int) -> MaxDiffMPPI:
    """The preset's MaxDiff of cell ``setting``, trained ``warmup_steps`` steps (a filled buffer, a model that moves)."""
    cell = get_preset(preset).cell(setting, "maxdiff")
    kwargs = cell_kwargs(cell, get_budget("reduced"))
    model = MaxDiffMPPI("MlpPolicy", cell.env_id, seed=0, device="cpu", **kwargs)
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
    parser.add_argument("--body", choices=sorted(BODIES), default="swimmer", help="which preset cells to time")
    args = parser.parse_args()
    th.set_num_threads(1)
    cells = BODIES[args.body]
    models = {setting: make_model(*cells[setting], args.warmup_steps) for setting in cells}
    times: dict[str, list[tuple[float, float]]] = {setting: [] for setting in cells}
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
    *others, baseline = cells
    for setting in others:
        print(f"step {setting} / step {baseline}: {steps[setting] / steps[baseline]:.2f}")


if __name__ == "__main__":
    main()
