"""Callbacks for the paper's protocols."""

import csv
import os

import numpy as np
from stable_baselines3.common.callbacks import BaseCallback


class WindowReturnLogger(BaseCallback):
    """
    Single-shot ("reset-free") bookkeeping: the return of every ``window`` environment steps and the
    distance travelled along x since the start of training, written to the SB3 logger
    (``single_shot/window_return``, ``single_shot/x_distance``, dumped at the end of each window since no
    episode ever ends) and, optionally, to a CSV file. x is ``info["x_position"]`` where the environment
    reports it (MuJoCo tasks), else the first observation entry (the point mass).

    :param window: window length in environment steps (1000 in the paper)
    :param csv_path: CSV file to write (None: logger only)
    :param verbose: 1 prints each window
    """

    def __init__(self, window: int = 1000, csv_path: str | None = None, verbose: int = 0):
        super().__init__(verbose)
        if window < 1:
            raise ValueError(f"window must be >= 1, got {window}")
        self.window = window
        self.csv_path = csv_path
        self.window_returns: list[float] = []
        self.x_start = self.x_now = 0.0
        self._accumulated = 0.0
        self._steps_in_window = 0

    @property
    def x_distance(self) -> float:
        return self.x_now - self.x_start

    def _on_training_start(self) -> None:
        if self.training_env.num_envs != 1:
            raise ValueError(f"single-shot learning uses one environment, got n_envs={self.training_env.num_envs}")
        self.x_start = self.x_now = float(np.asarray(self.model._last_obs).reshape(-1)[0])  # type: ignore[arg-type]
        if self.csv_path is not None:
            os.makedirs(os.path.dirname(os.path.abspath(self.csv_path)), exist_ok=True)
            with open(self.csv_path, "w", newline="") as file:
                csv.writer(file).writerow(["window", "timesteps", "window_return", "x_position", "x_distance"])

    def _on_step(self) -> bool:
        info = self.locals["infos"][0]
        self.x_now = float(info.get("x_position", np.asarray(self.locals["new_obs"]).reshape(-1)[0]))
        self._accumulated += float(self.locals["rewards"][0])
        self._steps_in_window += 1
        if self._steps_in_window == self.window:
            self._end_window()
        return True

    def _end_window(self) -> None:
        self.window_returns.append(self._accumulated)
        self.logger.record("single_shot/window_return", self._accumulated)
        self.logger.record("single_shot/x_distance", self.x_distance)
        self.logger.dump(self.num_timesteps)
        if self.csv_path is not None:
            with open(self.csv_path, "a", newline="") as file:
                row = [len(self.window_returns), self.num_timesteps, self._accumulated, self.x_now, self.x_distance]
                csv.writer(file).writerow(row)
        if self.verbose >= 1:
            print(f"window {len(self.window_returns)}: return {self._accumulated:.2f}, x distance {self.x_distance:.3f}")
        self._accumulated, self._steps_in_window = 0.0, 0


class PathEntropyBonusLogger(BaseCallback):
    """
    Log the model-free MaxDiff bonus of :class:`~sb3_maxdiff.wrappers.PathEntropyReward` apart from
    the task return: ``rollout/path_entropy_bonus`` (mean per step) and ``rollout/ep_bonus_mean``
    (summed per episode, mean over the episodes of the last dump).
    """

    def _on_step(self) -> bool:
        for info in self.locals["infos"]:
            if "path_entropy_bonus" in info:
                self.logger.record_mean("rollout/path_entropy_bonus", info["path_entropy_bonus"])
            if "episode_bonus" in info:
                self.logger.record_mean("rollout/ep_bonus_mean", info["episode_bonus"])
        return True
