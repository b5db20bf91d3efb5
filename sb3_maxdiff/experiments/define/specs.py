"""
The plain data of an experiment run, shared by the runner, the executor and the report:
:class:`RunSpec` (it travels to worker processes and Ray nodes), :func:`build_specs`, the names of the
files in a run's folder, and the readers of those files.

Every run writes to its own folder ``<out>/<preset>/<budget>/<setting>/<method>/seed_<n>/``:
``spec.json``, ``monitor.csv`` (multi-shot episodes) or ``windows.csv`` (single-shot windows),
``model.zip``, ``resumes.json`` if it was resumed from a checkpoint, and last ``result.json`` (evaluation
episodes, final distance, timings), whose presence marks the run as finished.
"""

import csv
import dataclasses
import json
import os
import re
from collections.abc import Iterable
from typing import Any

from sb3_maxdiff.experiments.define.presets import Cell, cell_kwargs, get_budget, get_preset

RESULT_FILE = "result.json"
SPEC_FILE = "spec.json"
MODEL_FILE = "model.zip"
CHECKPOINT_FILE = "checkpoint.json"
MONITOR_FILE = "monitor.csv"
WINDOWS_FILE = "windows.csv"
# written by a seed-batched training (experiments/training.py): its time and seeds, read into result.json
BATCH_FILE = "batch.json"
# what a run trained alone records of its training (seconds, resumption), for an evaluation in a later process
TRAINING_FILE = "training.json"
ERGODICITY_FILE = "ergodicity.csv"
# where a resumed run's monitor rows continue: the episodes kept and the agent steps of each checkpoint resumed from
RESUMES_FILE = "resumes.json"


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

    @property
    def cell(self) -> Cell:
        """The preset's cell this run belongs to (what it knows of the environment: diagnostics grid, family)."""
        return get_preset(self.preset).cell(self.setting, self.method)

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
            checkpoint_every=budget.checkpoint_every,
            device=device,
        )
        for seed in seeds
        for cell in cells
    ]


def write_json(path: str, data: Any) -> None:
    """Write atomically: a run killed while writing leaves the old file or none, never half a file."""
    tmp = f"{path}.tmp"
    with open(tmp, "w") as file:
        json.dump(data, file, indent=1)
    os.replace(tmp, path)


# where a run trains, not what it is: a run may resume on another device (each resume's is in resumes.json)
PLACEMENT_FIELDS = ("device",)


def _identity(spec_data: dict[str, Any]) -> dict[str, Any]:
    """The fields of a ``spec.json`` that make a run what it is: all but :data:`PLACEMENT_FIELDS`."""
    return {key: value for key, value in spec_data.items() if key not in PLACEMENT_FIELDS}


def open_run_dir(out: str, spec: RunSpec) -> str:
    """
    The folder of run ``spec`` under ``out``, made if needed, with its ``spec.json`` (the settings the run started
    with); refuses a folder that holds a run started with other settings (a changed preset or budget). The device
    may differ: a run started on a CPU may resume on a GPU, and the other way round.
    """
    run_dir = os.path.join(out, spec.relpath)
    os.makedirs(run_dir, exist_ok=True)
    path = os.path.join(run_dir, SPEC_FILE)
    if not os.path.exists(path):
        write_json(path, spec.to_json())
        return run_dir
    with open(path) as file:
        on_disk = json.load(file)
    if _identity(on_disk) != _identity(json.loads(json.dumps(spec.to_json()))):
        raise ValueError(
            f"{run_dir} holds a run started with other settings; delete that folder or choose another --out to start it afresh"
        )
    return run_dir


def is_finished(out: str, spec: RunSpec) -> bool:
    return os.path.exists(os.path.join(out, spec.relpath, RESULT_FILE))


def read_monitor(path: str) -> list[dict[str, str]]:
    """The episode rows of an SB3 ``monitor.csv`` (its ``#`` header line skipped)."""
    with open(path) as file:
        return list(csv.DictReader(line for line in file if not line.startswith("#")))


def read_resumes(run_dir: str) -> list[dict[str, int]]:
    """The checkpoints a run was resumed from, in order: ``episodes`` kept and ``agent_timesteps`` done at each."""
    path = os.path.join(run_dir, RESUMES_FILE)
    if not os.path.exists(path):
        return []
    with open(path) as file:
        return json.load(file)


def read_windows(path: str) -> list[dict[str, str]]:
    """The window rows of a single-shot run's ``windows.csv``."""
    with open(path) as file:
        return list(csv.DictReader(file))
