"""
Reading finished runs back: each run's spec, learning curve (episodes, or windows of a single-shot run, at the
agent step where each ended) and result, and the training return a run had reached by a given step. ``report``
and ``export`` read runs through this module alone.
"""

import json
import math
import os
from collections import defaultdict
from typing import Any, NamedTuple

import gymnasium as gym
import numpy as np

import sb3_maxdiff  # noqa: F401  (registers the environments, for their episode lengths)
from sb3_maxdiff.experiments.define.specs import (
    MONITOR_FILE,
    RESULT_FILE,
    WINDOWS_FILE,
    RunSpec,
    read_monitor,
    read_resumes,
    read_windows,
)


class Run(NamedTuple):
    """
    A finished run: its spec, its learning curve (steps, returns), its result, which episodes of the curve ran
    their full length (None: all of them) and the length of each (None: the steps between their ends).
    """

    spec: RunSpec
    curve_steps: np.ndarray
    curve_returns: np.ndarray
    result: dict[str, Any]
    curve_full: np.ndarray | None = None
    curve_lengths: np.ndarray | None = None


def episode_length(spec: RunSpec) -> int:
    """The full length of a training episode of ``spec``: its own limit, else the environment's."""
    return spec.max_episode_steps or gym.spec(spec.env_id).max_episode_steps or 1000


def episode_ends(lengths: np.ndarray, resumes: list[dict[str, int]]) -> np.ndarray:
    """
    The agent step at which each monitor episode ended. An environment that was mid-episode when its checkpoint
    was written starts a new episode on resuming, so the steps of the unfinished one are in no monitor row:
    the episodes after a resume end ``agent_timesteps`` plus their own lengths after it.
    """
    ends = np.cumsum(np.asarray(lengths, dtype=np.int64))
    for resume in sorted(resumes, key=lambda resume: resume["agent_timesteps"]):
        kept = resume["episodes"]
        ends[kept:] += resume["agent_timesteps"] - (ends[kept - 1] if kept else 0)
    return ends


def _read_curve(run_dir: str, spec: RunSpec) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """
    Episode (multi-shot) or window (single-shot) returns, at the agent step where each ended, which are full,
    and their lengths.
    """
    if spec.single_shot:
        rows = read_windows(os.path.join(run_dir, WINDOWS_FILE))
        steps = np.array([int(row["timesteps"]) for row in rows])
        returns = np.array([float(row["window_return"]) for row in rows])
        return steps, returns, np.ones(len(rows), dtype=bool), np.diff(steps, prepend=0)
    rows = read_monitor(os.path.join(run_dir, MONITOR_FILE))
    lengths = np.array([int(row["l"]) for row in rows], dtype=int)
    steps = episode_ends(lengths, read_resumes(run_dir))
    return steps, np.array([float(row["r"]) for row in rows]), lengths >= episode_length(spec), lengths


def load_runs(root: str) -> dict[tuple[str, str], list[Run]]:
    """Every finished run under ``root``, grouped by (preset, budget)."""
    groups: dict[tuple[str, str], list[Run]] = defaultdict(list)
    for directory, _, files in sorted(os.walk(root)):
        if RESULT_FILE not in files:
            continue
        with open(os.path.join(directory, RESULT_FILE)) as file:
            result = json.load(file)
        spec = RunSpec.from_json(result["spec"])
        steps, returns, full, lengths = _read_curve(directory, spec)
        groups[(spec.preset, spec.budget)].append(Run(spec, steps, returns, result, full, lengths))
    return dict(groups)


def value_at(
    steps: np.ndarray, returns: np.ndarray, at: np.ndarray, running_max: bool = False, full: np.ndarray | None = None
) -> np.ndarray:
    """
    The return of the last episode (window) finished by each step of ``at``, or with ``running_max`` the best
    return of the episodes finished by then that ran their full length (``full``; None: all did), as the
    authors' notebooks count it: an episode cut short (a point mass leaving its box) may score a return of
    small magnitude that says nothing about the policy. NaN where there is no such episode yet.
    """
    values = np.asarray(returns, dtype=np.float64)
    if running_max and len(values):
        eligible = np.ones(len(values), dtype=bool) if full is None else np.asarray(full, dtype=bool)
        values = np.maximum.accumulate(np.where(eligible, values, -np.inf))
        values[np.isneginf(values)] = np.nan
    index = np.searchsorted(steps, at, side="right") - 1
    return np.where(index >= 0, values[np.clip(index, 0, None)] if len(values) else np.nan, np.nan)


def window_mean(ends: np.ndarray, returns: np.ndarray, at: int, window: int) -> float:
    """The mean return of the last ``window`` episodes finished by step ``at`` (fewer if fewer have; NaN if none)."""
    finished = int(np.searchsorted(ends, at, side="right"))
    return float(np.mean(returns[max(0, finished - window) : finished])) if finished else math.nan


def run_value_at(run: Run, at: np.ndarray, running_max: bool = False) -> np.ndarray:
    """:func:`value_at` on the learning curve of ``run``."""
    return value_at(run.curve_steps, run.curve_returns, at, running_max, run.curve_full)


def select_runs(root: str, preset: str | None = None, budget: str | None = None) -> dict[tuple[str, str], list[Run]]:
    """The finished runs under ``root`` of one preset and one budget where these are given, grouped as :func:`load_runs`."""
    return {
        key: runs
        for key, runs in load_runs(root).items()
        if (preset is None or key[0] == preset) and (budget is None or key[1] == budget)
    }
