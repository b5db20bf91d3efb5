"""
Single-shot ("reset-free") learning: one environment episode for the whole run, never reset and
never truncated, learning as it goes; the return of every 1,000-step window is logged and the task
metric is the distance travelled along x. The paper's single-shot settings for an environment are
:func:`single_shot_settings`; the ``single-shot`` command is :mod:`~sb3_maxdiff.experiments.commands.single_shot_command`.
"""

import csv
import dataclasses
import os
from typing import Any, NamedTuple

import gymnasium as gym
import numpy as np
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.callbacks import BaseCallback, CallbackList
from stable_baselines3.common.type_aliases import MaybeCallback

from sb3_maxdiff.experiments.define.presets import (
    MAXDIFF_AUTO,
    PRESET_ENVS,
    PRESETS,
    cell_kwargs,
    get_budget,
    published_kwargs,
)
from sb3_maxdiff.experiments.define.zoo_files import SAC_ZOO


class WindowReturnLogger(BaseCallback):
    """
    Single-shot ("reset-free") bookkeeping: the return of every ``window`` environment steps and the
    distance travelled along x since the start of training, written to the SB3 logger
    (``single_shot/window_return``, ``single_shot/x_distance``, dumped at the end of each window since no
    episode ever ends) and, optionally, to a CSV file. x is ``info["x_position"]`` where the environment
    reports it (MuJoCo tasks), else the first observation entry (the point mass).

    A run stopped between two steps carries on with :meth:`state` and :meth:`restore`.

    :param window: window length in environment steps (1000 in the paper)
    :param csv_path: CSV file to write (None: logger only)
    :param verbose: 1 prints each window
    :param env_index: the environment to follow among those of a batch of independent agents (one logger per
        agent; steps are then each agent's own); None: the model has one environment
    """

    def __init__(self, window: int = 1000, csv_path: str | None = None, verbose: int = 0, env_index: int | None = None):
        super().__init__(verbose)
        if window < 1:
            raise ValueError(f"window must be >= 1, got {window}")
        self.window = window
        self.csv_path = csv_path
        self.env_index = env_index
        self.window_returns: list[float] = []
        self.x_start = self.x_now = 0.0
        self._accumulated = 0.0
        self._steps_in_window = 0
        self.resumed = False

    @property
    def x_distance(self) -> float:
        return self.x_now - self.x_start

    def state(self) -> dict[str, Any]:
        """The bookkeeping between two steps: finished windows, where x started and is now, the open window."""
        return {
            "window_returns": list(self.window_returns),
            "x_start": self.x_start,
            "x_now": self.x_now,
            "accumulated": self._accumulated,
            "steps_in_window": self._steps_in_window,
        }

    def restore(self, state: dict[str, Any]) -> None:
        """
        Carry on from :meth:`state` (a resumed run): training then starts with the step after it, and the CSV file
        keeps its header and the rows of the windows finished by then (those written after it are dropped).
        """
        self.window_returns = list(state["window_returns"])
        self.x_start, self.x_now = state["x_start"], state["x_now"]
        self._accumulated, self._steps_in_window = state["accumulated"], state["steps_in_window"]
        self.resumed = True

    @property
    def _index(self) -> int:
        return 0 if self.env_index is None else self.env_index

    def _on_training_start(self) -> None:
        n_envs = self.training_env.num_envs
        if self.env_index is None and n_envs != 1:
            raise ValueError(f"single-shot learning uses one environment, got n_envs={n_envs}")
        if self.env_index is not None and not 0 <= self.env_index < n_envs:
            raise ValueError(f"env_index must be in [0, {n_envs - 1}] (the model's environments), got {self.env_index}")
        if self.resumed:
            if self.csv_path is not None:
                with open(self.csv_path) as file:
                    kept = file.readlines()[: 1 + len(self.window_returns)]
                with open(self.csv_path, "w") as file:
                    file.writelines(kept)
            return
        self.x_start = self.x_now = float(np.asarray(self.model._last_obs)[self._index].reshape(-1)[0])  # type: ignore[arg-type]
        if self.csv_path is not None:
            os.makedirs(os.path.dirname(os.path.abspath(self.csv_path)), exist_ok=True)
            with open(self.csv_path, "w", newline="") as file:
                csv.writer(file).writerow(["window", "timesteps", "window_return", "x_position", "x_distance"])

    def _on_step(self) -> bool:
        index = self._index
        info = self.locals["infos"][index]
        self.x_now = float(info.get("x_position", np.asarray(self.locals["new_obs"])[index].reshape(-1)[0]))
        self._accumulated += float(self.locals["rewards"][index])
        self._steps_in_window += 1
        if self._steps_in_window == self.window:
            self._end_window()
        return True

    def _end_window(self) -> None:
        self.window_returns.append(self._accumulated)
        steps = self.num_timesteps // self.training_env.num_envs  # this agent's steps
        if self.env_index is None:
            self.logger.record("single_shot/window_return", self._accumulated)
            self.logger.record("single_shot/x_distance", self.x_distance)
            self.logger.dump(self.num_timesteps)
        if self.csv_path is not None:
            with open(self.csv_path, "a", newline="") as file:
                row = [len(self.window_returns), steps, self._accumulated, self.x_now, self.x_distance]
                csv.writer(file).writerow(row)
        if self.verbose >= 1:
            print(f"window {len(self.window_returns)}: return {self._accumulated:.2f}, x distance {self.x_distance:.3f}")
        self._accumulated, self._steps_in_window = 0.0, 0


class SingleShotResult(NamedTuple):
    window_returns: list[float]
    final_distance: float


def make_single_shot_env(env_id: str, **env_kwargs: Any) -> gym.Env:
    """
    The environment ``env_id`` without its time limit, and for the paper's environments with the keyword
    arguments that keep the single episode from ending (the Ant's upside-down termination off); ``env_kwargs``
    go on top.
    """
    spec = dataclasses.replace(gym.spec(env_id), max_episode_steps=None)
    never_ending = PRESET_ENVS[env_id].single_shot_kwargs if env_id in PRESET_ENVS else {}
    return gym.make(spec, **{**never_ending, **env_kwargs})


def learn_single_shot(
    model: BaseAlgorithm,
    total_timesteps: int,
    window: int = 1000,
    csv_path: str | None = None,
    callback: MaybeCallback = None,
    progress_bar: bool = False,
    logger: WindowReturnLogger | None = None,
) -> SingleShotResult:
    """
    Train ``model`` (built on a :func:`make_single_shot_env` environment) in one episode, logging the
    return of each ``window`` steps and the x distance travelled.

    :param logger: the bookkeeping to use instead of a new one with ``window`` and ``csv_path``; a restored one
        (:meth:`WindowReturnLogger.restore`) carries on a resumed run, whose model keeps its step count and its
        environment where it was: ``total_timesteps`` more steps are then taken
    """
    logger = WindowReturnLogger(window, csv_path) if logger is None else logger
    callbacks = [logger] if callback is None else [logger, *(callback if isinstance(callback, list) else [callback])]
    model.learn(
        total_timesteps, callback=CallbackList(callbacks), progress_bar=progress_bar, reset_num_timesteps=not logger.resumed
    )
    model.logger.record("single_shot/final_x_distance", logger.x_distance)
    model.logger.dump(model.num_timesteps)
    return SingleShotResult(logger.window_returns, logger.x_distance)


class SingleShotSettings(NamedTuple):
    """Algorithm keyword arguments for a single-shot run, and where they come from in words."""

    kwargs: dict[str, Any]
    source: str


def single_shot_settings(algo: str, env_id: str) -> SingleShotSettings:
    """
    The keyword arguments of ``algo`` for a single-shot run on ``env_id``, and where they come from (``source``, in
    words): the paper's single-shot settings where a preset has a single-shot cell of this method on this environment
    (those of the runner's comparisons), else the published multi-shot settings for ``env_id``, else none (the
    algorithm's defaults). ``maxdiff-auto`` takes MaxDiff's with ``alpha="auto"``.
    """
    if algo == MAXDIFF_AUTO:
        kwargs, source = single_shot_settings("maxdiff", env_id)
        return SingleShotSettings({**kwargs, "alpha": "auto"}, f"{source}, with alpha 'auto'")
    for preset in (preset for preset in PRESETS.values() if preset.paper):
        for cell in preset.cells:
            if cell.single_shot and (cell.method, cell.env_id) == (algo, env_id):
                where = f"the runner's preset {preset.name!r}, setting {cell.setting!r}"
                source = f"the paper's single-shot settings for {env_id} ({where})"
                return SingleShotSettings(cell_kwargs(cell, get_budget("paper")), source)
    try:
        kwargs = published_kwargs(algo, env_id)
    except (KeyError, ValueError):
        return SingleShotSettings({}, f"{algo}'s defaults (no published settings for {env_id})")
    published = "RL Zoo's settings" if algo == SAC_ZOO else "the published multi-shot settings"
    return SingleShotSettings(kwargs, f"{published} for {env_id} (the paper has no single-shot {algo} run on it)")
