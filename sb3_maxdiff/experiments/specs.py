"""
The plain data of an experiment run, shared by the runner, the executor and the report:
:class:`RunSpec` (it travels to worker processes and Ray nodes), :func:`build_specs`, the names of the
files in a run's folder, and the readers of those files.

Every run writes to its own folder ``<out>/<preset>/<budget>/<setting>/<method>/seed_<n>/``:
``spec.json``, ``monitor.csv`` (multi-shot episodes) or ``windows.csv`` (single-shot windows),
``model.zip``, and last ``result.json`` (evaluation episodes, final distance, timings), whose presence
marks the run as finished.
"""

import csv
import dataclasses
import os
import re
from collections.abc import Iterable
from typing import Any

from sb3_maxdiff.envs import SWIMMER_HEAVY, SWIMMER_LIGHT
from sb3_maxdiff.experiments.presets import cell_kwargs, get_budget, get_preset

RESULT_FILE = "result.json"
SPEC_FILE = "spec.json"
MODEL_FILE = "model.zip"
CHECKPOINT_FILE = "checkpoint.json"
MONITOR_FILE = "monitor.csv"
WINDOWS_FILE = "windows.csv"
# written by a seed-batched training (experiments/batched.py): its time and seeds, read into result.json
BATCH_FILE = "batch.json"
ERGODICITY_FILE = "ergodicity.csv"
# ergodicity diagnostics of the point mass's training paths: (x, y) on a 20 x 20 grid over its +/-5 box
POINT_MASS_ERGODICITY = dict(dims=[0, 1], low=[-5.0, -5.0], high=[5.0, 5.0], bins=20)
# the paper's swimmers keep the tip's (x, y) as observations 0 and 1: a 40 x 40 grid of 0.5 m cells over +/-10 m
SWIMMER_ERGODICITY = dict(dims=[0, 1], low=[-10.0, -10.0], high=[10.0, 10.0], bins=40)


def ergodicity_grid(env_id: str) -> dict[str, Any] | None:
    """The exploration dims and coverage grid of the diagnostics for ``env_id``; None where none is defined."""
    if "PointMass" in env_id:
        return POINT_MASS_ERGODICITY
    if env_id in (SWIMMER_HEAVY, SWIMMER_LIGHT):
        return SWIMMER_ERGODICITY
    return None


@dataclasses.dataclass(frozen=True)
class RunSpec:
    """Everything one run needs; plain data, so that it travels to worker processes and Ray nodes."""

    preset: str
    budget: str
    setting: str
    method: str
    seed: int
    env_id: str
    algo_kwargs: dict[str, Any]
    steps: int
    single_shot: bool = False
    eval_env_ids: tuple[str, ...] = ()
    eval_episodes: int = 10
    window: int = 1000
    max_episode_steps: int | None = None
    checkpoint_every: int = 0
    device: str = "cpu"

    @property
    def relpath(self) -> str:
        setting = re.sub(r"[^\w.=-]+", "_", self.setting)
        return os.path.join(self.preset, self.budget, setting, self.method, f"seed_{self.seed}")

    @property
    def work(self) -> int:
        """Environment steps of training plus (at most) of evaluation: the unit of the progress display."""
        return self.steps + len(self.eval_env_ids) * self.eval_episodes * (self.max_episode_steps or 1000)

    @property
    def name(self) -> str:
        return f"{self.setting} / {self.method} / seed {self.seed}"

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "RunSpec":
        return cls(**{**data, "eval_env_ids": tuple(data["eval_env_ids"])})


def build_specs(
    preset_name: str,
    budget_name: str,
    seeds: Iterable[int],
    settings: list[str] | None = None,
    methods: list[str] | None = None,
    device: str = "cpu",
    steps: int | None = None,
) -> list[RunSpec]:
    """
    The runs of a preset, seed-major (every cell's seed 0, then every cell's seed 1, ...), so that a
    sweep stopped half-way has complete seeds rather than complete cells.

    :param steps: environment steps per run instead of the budget's; the runs are then labelled
        ``<budget>-<steps>-steps`` (their own folder and report) so they never mix with the budget's
    """
    preset, budget = get_preset(preset_name), get_budget(budget_name)
    if steps is not None and steps < 1:
        raise ValueError(f"steps must be a positive number of environment steps, got {steps}")
    label = budget_name if steps is None else f"{budget_name}-{steps}-steps"
    for given, known, what in ((settings, preset.settings, "settings"), (methods, preset.methods, "methods")):
        unknown = sorted(set(given or ()) - set(known))
        if unknown:
            raise ValueError(f"{what} of preset {preset_name!r} are {known}, got unknown {unknown}")
    cells = [
        cell for cell in preset.cells if (not settings or cell.setting in settings) and (not methods or cell.method in methods)
    ]
    return [
        RunSpec(
            preset=preset.name,
            budget=label,
            setting=cell.setting,
            method=cell.method,
            seed=seed,
            env_id=cell.env_id,
            algo_kwargs=cell_kwargs(cell, budget),
            steps=budget.steps[cell.family] if steps is None else steps,
            single_shot=cell.single_shot,
            eval_env_ids=() if cell.single_shot else (cell.eval_env_ids or (cell.env_id,)),
            eval_episodes=budget.eval_episodes,
            window=budget.window,
            max_episode_steps=budget.max_episode_steps,
            checkpoint_every=0 if cell.single_shot else budget.checkpoint_every,
            device=device,
        )
        for seed in seeds
        for cell in cells
    ]


def is_finished(out: str, spec: RunSpec) -> bool:
    return os.path.exists(os.path.join(out, spec.relpath, RESULT_FILE))


def read_monitor(path: str) -> list[dict[str, str]]:
    """The episode rows of an SB3 ``monitor.csv`` (its ``#`` header line skipped)."""
    with open(path) as file:
        return list(csv.DictReader(line for line in file if not line.startswith("#")))


def read_windows(path: str) -> list[dict[str, str]]:
    """The window rows of a single-shot run's ``windows.csv``."""
    with open(path) as file:
        return list(csv.DictReader(file))
