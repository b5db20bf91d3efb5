"""
One run of an experiment (:func:`execute_run`): train, save and evaluate it into its folder (see
:mod:`sb3_maxdiff.experiments.specs` for the files), resuming from what is on disk. A multi-shot run keeps a
checkpoint (model and replay buffer, taken at the end of an episode) every ``checkpoint_every`` steps and
continues from the latest one when it is run again.
"""

import glob
import json
import os
import time
from typing import Any

import gymnasium as gym
import numpy as np
import torch as th
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.evaluation import evaluate_policy
from stable_baselines3.common.monitor import Monitor

import sb3_maxdiff  # noqa: F401  (registers the environments)
from sb3_maxdiff.common.callbacks import ErgodicityLogger
from sb3_maxdiff.experiments.algos import get_algo
from sb3_maxdiff.experiments.single_shot import learn_single_shot, make_single_shot_env
from sb3_maxdiff.experiments.specs import (
    BATCH_FILE,
    CHECKPOINT_FILE,
    ERGODICITY_FILE,
    MODEL_FILE,
    MONITOR_FILE,
    RESULT_FILE,
    SPEC_FILE,
    WINDOWS_FILE,
    RunSpec,
    build_specs,
    ergodicity_grid,
    is_finished,
    read_windows,
)
from sb3_maxdiff.nnmppi.nnmppi import NNMPPI

__all__ = ["RESULT_FILE", "RunSpec", "build_specs", "execute_run", "is_finished"]


def _write_json(path: str, data: Any) -> None:
    """Write atomically: a run killed while writing leaves the old file or none, never half a file."""
    tmp = f"{path}.tmp"
    with open(tmp, "w") as file:
        json.dump(data, file, indent=1)
    os.replace(tmp, path)


def _make_env(env_id: str, spec: RunSpec) -> Any:
    if spec.single_shot:
        return make_single_shot_env(env_id)
    kwargs = {} if spec.max_episode_steps is None else {"max_episode_steps": spec.max_episode_steps}
    return gym.make(env_id, **kwargs)


class _Progress:
    """Callback body: adds one to a shared counter every environment step (local progress display)."""

    def __init__(self, counter: Any):
        self.counter = counter

    def __call__(self) -> None:
        if self.counter is not None:
            with self.counter.get_lock():
                self.counter.value += 1


def _ergodicity_logger(
    run_dir: str, spec: RunSpec, steps_before: int, visited: list | None = None, env_index: int | None = None
) -> Any:
    """
    The ergodicity callback of a multi-shot run on an environment with a diagnostics grid (the point mass,
    the paper's swimmers; None for other runs), writing ``ergodicity.csv``.
    A fresh run starts the file anew; a resumed one keeps the rows up to its checkpoint and the grid cells
    visited until then (``visited``, else read from the run's checkpoint file).

    :param env_index: the environment of this run in a seed-batched VecEnv (None: a run of its own)
    """
    grid = ergodicity_grid(spec.env_id)
    if spec.single_shot or grid is None:
        return None
    path = os.path.join(run_dir, ERGODICITY_FILE)
    logger = ErgodicityLogger(**grid, csv_path=path, env_index=env_index)
    if steps_before == 0:
        if os.path.exists(path):
            os.remove(path)
        return logger
    if os.path.exists(path):
        with open(path) as file:
            lines = file.readlines()
        with open(path, "w") as file:
            file.writelines(lines[:1] + [line for line in lines[1:] if float(line.split(",")[0]) <= steps_before])
    if visited is None:
        with open(os.path.join(run_dir, CHECKPOINT_FILE)) as file:
            visited = json.load(file).get("visited_cells", [])
    logger.visited = {tuple(cell) for cell in visited}
    return logger


class _RunHook(BaseCallback):
    """Progress, episode count and the checkpoints (at the end of an episode) of one run."""

    def __init__(self, run_dir: str, spec: RunSpec, progress: _Progress, episodes_before: int, ergodicity: Any):
        super().__init__()
        self.run_dir, self.spec, self.progress, self.ergodicity = run_dir, spec, progress, ergodicity
        self.episodes = episodes_before
        self.last_checkpoint = 0

    def _on_training_start(self) -> None:
        self.last_checkpoint = self.num_timesteps

    def _on_step(self) -> bool:
        self.progress()
        if self.spec.single_shot or not self.locals["dones"][0]:
            return True
        self.episodes += 1
        if self.spec.checkpoint_every and self.num_timesteps - self.last_checkpoint >= self.spec.checkpoint_every:
            extra = {} if self.ergodicity is None else {"visited_cells": sorted(self.ergodicity.visited)}
            _save_checkpoint(self.run_dir, self.model, self.episodes, extra)
            self.last_checkpoint = self.num_timesteps
        return True


def _callbacks(run_dir: str, spec: RunSpec, progress: _Progress, episodes_before: int, steps_before: int) -> list:
    ergodicity = _ergodicity_logger(run_dir, spec, steps_before)
    hook = _RunHook(run_dir, spec, progress, episodes_before, ergodicity)
    # the diagnostics see an episode's end before the checkpoint is written
    return [hook] if ergodicity is None else [ergodicity, hook]


def _ergodicity_summary(run_dir: str) -> dict[str, float] | None:
    """Final coverage and per-episode medians of the MSD exponent and autocorrelation time, from ``ergodicity.csv``."""
    path = os.path.join(run_dir, ERGODICITY_FILE)
    if not os.path.exists(path):
        return None
    rows = read_windows(path)  # a plain CSV with a header, like windows.csv
    if not rows:
        return None
    return {
        "episodes": len(rows),
        "coverage": float(rows[-1]["coverage"]),
        "msd_exponent": float(np.nanmedian([float(row["msd_exponent"]) for row in rows])),
        "autocorr_time": float(np.nanmedian([float(row["autocorr_time"]) for row in rows])),
    }


def _save_checkpoint(run_dir: str, model: Any, episodes: int, extra: dict[str, Any] | None = None) -> None:
    """Model and replay buffer at ``model.num_timesteps``, then the pointer to them, then old ones deleted."""
    steps = model.num_timesteps
    model.save(os.path.join(run_dir, f"checkpoint_{steps}.zip"))
    model.save_replay_buffer(os.path.join(run_dir, f"checkpoint_{steps}_replay_buffer.pkl"))
    _write_json(os.path.join(run_dir, CHECKPOINT_FILE), {"timesteps": steps, "episodes": episodes, **(extra or {})})
    _remove_checkpoints(run_dir, keep=steps)


def _remove_checkpoints(run_dir: str, keep: int | None = None) -> None:
    """Delete the checkpoint files, all but those of step ``keep`` if given (the pointer too if not)."""
    for path in glob.glob(os.path.join(run_dir, "checkpoint_*")):
        if keep is None or not os.path.basename(path).startswith((f"checkpoint_{keep}.", f"checkpoint_{keep}_")):
            os.remove(path)
    pointer = os.path.join(run_dir, CHECKPOINT_FILE)
    if keep is None and os.path.exists(pointer):
        os.remove(pointer)


def _truncate_monitor(path: str, episodes: int) -> None:
    """Keep the monitor's two header lines and its first ``episodes`` rows (those the checkpoint saw)."""
    with open(path) as file:
        lines = file.readlines()
    with open(path, "w") as file:
        file.writelines(lines[: 2 + episodes])


def execution_kwargs(algo: type, cuda_graph: bool) -> dict[str, Any]:
    """
    Keyword arguments that set how a model of ``algo`` runs, not what it computes, for its constructor and for
    ``load`` (where they override what the saved model had): ``cuda_graph`` for the model-based methods (SAC has
    no planner to capture).
    """
    return {"cuda_graph": cuda_graph} if issubclass(algo, NNMPPI) else {}


def _build_or_resume(run_dir: str, spec: RunSpec, cuda_graph: bool = False) -> tuple[Any, int, int]:
    """The model to train (fresh, or the latest checkpoint with its replay buffer), its steps and episodes."""
    algo = get_algo(spec.method)
    options = execution_kwargs(algo, cuda_graph)
    pointer = os.path.join(run_dir, CHECKPOINT_FILE)
    monitor_path = os.path.join(run_dir, MONITOR_FILE)
    if spec.single_shot:
        env = _make_env(spec.env_id, spec)
        return algo("MlpPolicy", env, seed=spec.seed, device=spec.device, **spec.algo_kwargs, **options), 0, 0
    if os.path.exists(pointer) and os.path.exists(monitor_path):
        with open(pointer) as file:
            checkpoint = json.load(file)
        _truncate_monitor(monitor_path, checkpoint["episodes"])
        env = Monitor(_make_env(spec.env_id, spec), monitor_path, override_existing=False)
        stem = os.path.join(run_dir, f"checkpoint_{checkpoint['timesteps']}")
        model = algo.load(f"{stem}.zip", env=env, device=spec.device, **options)
        model.load_replay_buffer(f"{stem}_replay_buffer.pkl")
        model.set_random_seed(spec.seed + checkpoint["timesteps"])
        return model, checkpoint["timesteps"], checkpoint["episodes"]
    _remove_checkpoints(run_dir)
    env = Monitor(_make_env(spec.env_id, spec), monitor_path)
    return algo("MlpPolicy", env, seed=spec.seed, device=spec.device, **spec.algo_kwargs, **options), 0, 0


def _evaluate(model: Any, spec: RunSpec, progress: _Progress) -> dict[str, list[float]]:
    """Returns of ``spec.eval_episodes`` episodes of the final policy on each evaluation environment."""
    returns = {}
    for index, env_id in enumerate(spec.eval_env_ids):
        env = Monitor(_make_env(env_id, spec))
        env.reset(seed=10_000 + 100 * spec.seed + index)  # evaluation starts differ from training's
        model.set_random_seed(10_000 + 100 * spec.seed + index)
        episode_returns, _ = evaluate_policy(
            model, env, n_eval_episodes=spec.eval_episodes, return_episode_rewards=True, callback=lambda *_: progress()
        )
        returns[env_id] = [float(value) for value in episode_returns]
    return returns


def execute_run(spec: RunSpec, out: str, counter: Any = None, threads: int = 1, cuda_graph: bool = False) -> dict[str, Any]:
    """
    Train, save and evaluate one run into ``<out>/<spec.relpath>``, resuming from what is on disk: a
    finished run is returned as it is, a trained but unevaluated model is evaluated, a checkpoint is
    trained on from.

    :param threads: torch threads
    :param cuda_graph: plan with CUDA graphs (NN-MPPI and MaxDiff on a CUDA device). Like ``threads`` it is
        not part of the run's spec, so a run may be resumed with or without it.
    """
    run_dir = os.path.join(out, spec.relpath)
    result_path = os.path.join(run_dir, RESULT_FILE)
    if os.path.exists(result_path):
        with open(result_path) as file:
            return json.load(file)
    th.set_num_threads(threads)
    os.makedirs(run_dir, exist_ok=True)
    _check_same_spec(os.path.join(run_dir, SPEC_FILE), spec)
    _write_json(os.path.join(run_dir, SPEC_FILE), spec.to_json())
    progress, start = _Progress(counter), time.perf_counter()
    model_path = os.path.join(run_dir, MODEL_FILE)
    result: dict[str, Any] = {"spec": spec.to_json()}
    if os.path.exists(model_path):
        algo = get_algo(spec.method)
        model = algo.load(model_path, device=spec.device, **execution_kwargs(algo, cuda_graph))
        result["resumed_from_steps"] = spec.steps
        batch_path = os.path.join(run_dir, BATCH_FILE)
        if os.path.exists(batch_path):  # trained with other seeds in one process: its training time and seeds
            with open(batch_path) as file:
                result.update(json.load(file))
    else:
        model, done_steps, episodes = _build_or_resume(run_dir, spec, cuda_graph)
        result["resumed_from_steps"] = done_steps
        callbacks = _callbacks(run_dir, spec, progress, episodes, done_steps)
        if spec.single_shot:
            single = learn_single_shot(model, spec.steps, spec.window, os.path.join(run_dir, WINDOWS_FILE), callbacks)
            result.update(window_returns=single.window_returns, final_distance=single.final_distance)
        else:
            model.learn(spec.steps - done_steps, callback=callbacks, reset_num_timesteps=done_steps == 0)
        model.save(model_path)
        _remove_checkpoints(run_dir)
    result.setdefault("train_seconds", time.perf_counter() - start)
    ergodicity = _ergodicity_summary(run_dir)
    if ergodicity is not None:
        result["ergodicity"] = ergodicity
    if spec.single_shot and "window_returns" not in result:
        rows = read_windows(os.path.join(run_dir, WINDOWS_FILE))
        result.update(
            window_returns=[float(row["window_return"]) for row in rows], final_distance=float(rows[-1]["x_distance"])
        )
    start = time.perf_counter()
    result["eval_returns"] = _evaluate(model, spec, progress)
    result["eval_seconds"] = time.perf_counter() - start
    _write_json(result_path, result)
    return result


def _check_same_spec(path: str, spec: RunSpec) -> None:
    """Refuse to continue a run that was started with other settings (a changed preset or budget)."""
    if not os.path.exists(path):
        return
    with open(path) as file:
        on_disk = json.load(file)
    if on_disk != json.loads(json.dumps(spec.to_json())):
        raise ValueError(
            f"{os.path.dirname(path)} holds a run started with other settings; "
            "delete that folder or choose another --out to start it afresh"
        )
