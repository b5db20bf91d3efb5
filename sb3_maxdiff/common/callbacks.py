"""Callbacks for the diagnostics of training: the ergodicity of the paths, the path-entropy bonus of the reward wrapper."""

import csv
import os

import numpy as np
from stable_baselines3.common.callbacks import BaseCallback

from sb3_maxdiff.common import ergodicity


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


ERGODICITY_CSV_COLUMNS = ("timesteps", "msd_exponent", "autocorr_time", "episode_coverage", "coverage")


class ErgodicityLogger(BaseCallback):
    """
    Ergodicity diagnostics of the training trajectories (:mod:`sb3_maxdiff.common.ergodicity`), per
    environment and episode, restricted to the exploration dims: the MSD exponent
    (``ergodicity/msd_exponent``), the integrated autocorrelation time (``ergodicity/autocorr_time``), the
    coverage of the episode (``ergodicity/episode_coverage``) and of everything visited since training
    began (``ergodicity/coverage``): fractions of the cells of a ``bins ** d`` grid over ``[low, high]``.
    Each finished episode is also kept in :attr:`episodes` (one dict per episode) and, optionally,
    appended to a CSV file. Episodes shorter than ``min_length`` steps are not scored. The cells visited
    so far are :attr:`visited`; a resumed run may set it to carry the coverage on.

    :param dims: observation indices of the exploration dims (e.g. ``[0, 1]`` for the point mass's x, y)
    :param low: lower corner of the coverage grid, one value per dim
    :param high: upper corner of the coverage grid, one value per dim
    :param bins: cells per dim of the coverage grid
    :param min_length: shortest episode that is scored (the MSD fit needs at least 8 states)
    :param csv_path: CSV file to append each scored episode to (None: logger only); its header is
        written when the file does not exist yet
    :param env_index: score only this environment of the VecEnv (e.g. one independent agent's); None: all
    :param verbose: 1 prints each scored episode
    """

    def __init__(
        self,
        dims: list[int],
        low: list[float],
        high: list[float],
        bins: int = 20,
        min_length: int = 20,
        csv_path: str | None = None,
        env_index: int | None = None,
        verbose: int = 0,
    ):
        super().__init__(verbose)
        self.csv_path = csv_path
        self.env_index = env_index
        self.dims = [int(d) for d in dims]
        self.low, self.high = np.asarray(low, dtype=np.float64), np.asarray(high, dtype=np.float64)
        if len(self.dims) == 0 or self.low.shape != (len(self.dims),) or self.high.shape != self.low.shape:
            raise ValueError(f"dims, low and high must be non-empty and of the same length, got {dims}, {low}, {high}")
        if not np.all(self.high > self.low):
            raise ValueError(f"high must exceed low in every dim, got low={low}, high={high}")
        if bins < 1 or min_length < 8:
            raise ValueError(f"need bins >= 1 and min_length >= 8, got bins={bins}, min_length={min_length}")
        self.bins, self.min_length = int(bins), int(min_length)
        self._n_cells = float(self.bins ** len(self.dims))
        self.episodes: list[dict[str, float]] = []
        self.visited: set[tuple[int, ...]] = set()
        self._paths: list[list[np.ndarray]] = []

    def _on_training_start(self) -> None:
        n_envs = self.training_env.num_envs
        if self.env_index is not None and not 0 <= self.env_index < n_envs:
            raise ValueError(f"env_index must be in [0, {n_envs - 1}] (the training env has {n_envs}), got {self.env_index}")
        start = np.asarray(self.model._last_obs).reshape(n_envs, -1)  # type: ignore[arg-type]
        self._paths = [[row[self.dims].astype(np.float64)] for row in start]
        if self.csv_path is not None and not os.path.exists(self.csv_path):
            os.makedirs(os.path.dirname(os.path.abspath(self.csv_path)), exist_ok=True)
            with open(self.csv_path, "w", newline="") as file:
                csv.writer(file).writerow(ERGODICITY_CSV_COLUMNS)

    def _on_step(self) -> bool:
        new_obs = np.asarray(self.locals["new_obs"]).reshape(self.training_env.num_envs, -1)
        for index, (obs, done, info) in enumerate(zip(new_obs, self.locals["dones"], self.locals["infos"])):
            if self.env_index is not None and index != self.env_index:
                continue
            final = info.get("terminal_observation") if done else None
            self._paths[index].append(np.asarray(obs if final is None else final, dtype=np.float64).reshape(-1)[self.dims])
            if done:
                self._end_episode(np.array(self._paths[index]))
                self._paths[index] = [obs.astype(np.float64)[self.dims]]
        return True

    def _end_episode(self, path: np.ndarray) -> None:
        if len(path) < self.min_length:
            return
        cells = ergodicity.visited_cells(path, self.low, self.high, self.bins)
        self.visited |= cells
        scores = {
            # each agent's own steps where the agents are independent
            "timesteps": float(getattr(self.model, "agent_timesteps", self.num_timesteps)),
            "msd_exponent": ergodicity.msd_exponent(path),
            "autocorr_time": ergodicity.autocorrelation_time(path),
            "episode_coverage": len(cells) / self._n_cells,
            "coverage": len(self.visited) / self._n_cells,
        }
        self.episodes.append(scores)
        if self.csv_path is not None:
            with open(self.csv_path, "a", newline="") as file:
                csv.writer(file).writerow([scores[name] for name in ERGODICITY_CSV_COLUMNS])
        for name in ("msd_exponent", "autocorr_time", "episode_coverage"):
            self.logger.record_mean(f"ergodicity/{name}", scores[name])
        self.logger.record("ergodicity/coverage", scores["coverage"])
        if self.verbose >= 1:
            print("episode " + ", ".join(f"{name} {value:.3g}" for name, value in scores.items()))
