"""
Seed-batched runs: the seeds of one cell (same preset, setting, method and budget) trained as the
independent agents of one NN-MPPI / MaxDiff model in one process (``independent_agents=True``), then
saved, evaluated and written seed by seed exactly as separate runs are.

The batch keeps its checkpoint (model with every agent, replay buffer) in the cell's folder,
``<cell>/batch_<seeds>/``; each seed's own folder gets ``spec.json``, ``monitor.csv``, ``ergodicity.csv``
(point mass), its agent's ``model.zip`` and a ``batch.json`` (training time, the seeds trained together),
then ``result.json`` after its evaluation. The agents share the torch random stream, so seed i of a batch
is a different draw from seed i run alone, with the same distribution; environment i is seeded with seed i.
"""

import dataclasses
import json
import os
import time
from collections.abc import Iterable
from typing import Any

import torch as th
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env import DummyVecEnv

from sb3_maxdiff.experiments.algos import get_algo
from sb3_maxdiff.experiments.execution import (
    _check_same_spec,
    _ergodicity_logger,
    _make_env,
    _Progress,
    _remove_checkpoints,
    _save_checkpoint,
    _truncate_monitor,
    _write_json,
    execute_run,
    execution_kwargs,
)
from sb3_maxdiff.experiments.specs import (
    BATCH_FILE,
    CHECKPOINT_FILE,
    MODEL_FILE,
    MONITOR_FILE,
    RESULT_FILE,
    SPEC_FILE,
    RunSpec,
)
from sb3_maxdiff.nnmppi.nnmppi import NNMPPI


def is_batchable(spec: RunSpec) -> bool:
    """Multi-shot runs of the model-based methods can be batched; SAC and single-shot runs run alone."""
    return not spec.single_shot and issubclass(get_algo(spec.method), NNMPPI)


def group_batches(specs: Iterable[RunSpec]) -> list[list[RunSpec]]:
    """The batchable runs grouped by cell (every field but the seed), the others one per group, in order."""
    groups: dict[Any, list[RunSpec]] = {}
    for index, spec in enumerate(specs):
        cell = json.dumps(dataclasses.replace(spec, seed=-1).to_json(), sort_keys=True)
        groups.setdefault(cell if is_batchable(spec) else index, []).append(spec)
    return list(groups.values())


def batch_dir(out: str, specs: list[RunSpec]) -> str:
    cell = os.path.dirname(os.path.join(out, specs[0].relpath))
    return os.path.join(cell, "batch_" + "-".join(str(spec.seed) for spec in specs))


class _BatchHook(BaseCallback):
    """Progress, per-seed episode counts and the batch's checkpoints (when an episode ends)."""

    def __init__(self, directory: str, every: int, progress: _Progress, episodes: list[int], ergodicity: list):
        super().__init__()
        self.directory, self.every, self.progress = directory, every, progress
        self.episodes, self.ergodicity = episodes, ergodicity
        self.last_checkpoint = 0

    def _on_training_start(self) -> None:
        self.last_checkpoint = self.model.agent_timesteps  # type: ignore[attr-defined]

    def _on_step(self) -> bool:
        for _ in range(self.training_env.num_envs):
            self.progress()
        dones = self.locals["dones"]
        for index, done in enumerate(dones):
            self.episodes[index] += int(done)
        steps = self.model.agent_timesteps  # type: ignore[attr-defined]
        if self.every and dones.any() and steps - self.last_checkpoint >= self.every:
            visited = [sorted(logger.visited) if logger is not None else [] for logger in self.ergodicity]
            extra = {"agent_timesteps": steps, "visited_cells": visited}
            _save_checkpoint(self.directory, self.model, list(self.episodes), extra)  # type: ignore[arg-type]
            self.last_checkpoint = steps
        return True


def _seeded_vec_env(specs: list[RunSpec], run_dirs: list[str], resume: bool) -> DummyVecEnv:
    def make(spec: RunSpec, run_dir: str) -> Any:
        path = os.path.join(run_dir, MONITOR_FILE)
        return lambda: Monitor(_make_env(spec.env_id, spec), path, override_existing=not resume)

    return DummyVecEnv([make(spec, run_dir) for spec, run_dir in zip(specs, run_dirs)])


def train_batch(specs: list[RunSpec], out: str, counter: Any = None, cuda_graph: bool = False) -> None:
    """
    Train the runs ``specs`` (one cell, different seeds) as independent agents and save each agent's model.

    :param cuda_graph: plan with CUDA graphs (on a CUDA device)
    """
    first = specs[0]
    seeds = [spec.seed for spec in specs]
    run_dirs = [os.path.join(out, spec.relpath) for spec in specs]
    for spec, run_dir in zip(specs, run_dirs):
        os.makedirs(run_dir, exist_ok=True)
        _check_same_spec(os.path.join(run_dir, SPEC_FILE), spec)
        _write_json(os.path.join(run_dir, SPEC_FILE), spec.to_json())
    directory = batch_dir(out, specs)
    os.makedirs(directory, exist_ok=True)
    pointer = os.path.join(directory, CHECKPOINT_FILE)
    resume = os.path.exists(pointer) and all(os.path.exists(os.path.join(d, MONITOR_FILE)) for d in run_dirs)
    algo, start = get_algo(first.method), time.perf_counter()
    options = execution_kwargs(algo, cuda_graph)
    if resume:
        with open(pointer) as file:
            checkpoint = json.load(file)
        for run_dir, episodes in zip(run_dirs, checkpoint["episodes"]):
            _truncate_monitor(os.path.join(run_dir, MONITOR_FILE), episodes)
        env = _seeded_vec_env(specs, run_dirs, resume=True)
        stem = os.path.join(directory, f"checkpoint_{checkpoint['timesteps']}")
        model = algo.load(f"{stem}.zip", env=env, device=first.device, **options)
        model.load_replay_buffer(f"{stem}_replay_buffer.pkl")
        done, episodes, visited = checkpoint["agent_timesteps"], list(checkpoint["episodes"]), checkpoint["visited_cells"]
    else:
        _remove_checkpoints(directory)
        env = _seeded_vec_env(specs, run_dirs, resume=False)
        kwargs = {**first.algo_kwargs, **options}
        model = algo("MlpPolicy", env, seed=first.seed, device=first.device, independent_agents=True, **kwargs)
        done, episodes, visited = 0, [0] * len(specs), [None] * len(specs)
    model.set_random_seed(first.seed + done)
    env._seeds = [seed + done for seed in seeds]  # environment i follows seed i (SB3 would use first.seed + i)
    ergodicity = [
        _ergodicity_logger(run_dir, spec, done, cells, env_index=index)
        for index, (run_dir, spec, cells) in enumerate(zip(run_dirs, specs, visited))
    ]
    hook = _BatchHook(directory, first.checkpoint_every, _Progress(counter), episodes, ergodicity)
    callbacks = [logger for logger in ergodicity if logger is not None] + [hook]
    model.learn(len(specs) * (first.steps - done), callback=callbacks, reset_num_timesteps=done == 0)
    seconds = time.perf_counter() - start
    for index, run_dir in enumerate(run_dirs):
        model.agent(index).save(os.path.join(run_dir, MODEL_FILE))
        batch = {"train_seconds": seconds, "batched_seeds": seeds, "resumed_from_steps": done}
        _write_json(os.path.join(run_dir, BATCH_FILE), batch)
    _remove_checkpoints(directory)
    os.rmdir(directory)


def execute_batch(
    specs: list[RunSpec], out: str, counter: Any = None, threads: int = 1, cuda_graph: bool = False
) -> list[dict[str, Any]]:
    """
    Train the seeds of ``specs`` that have no model yet in one process, then evaluate and write every run
    as :func:`execute_run` does (finished runs are returned as they are). ``threads`` and ``cuda_graph``: as
    for :func:`execute_run`.
    """
    th.set_num_threads(threads)
    untrained = [
        spec
        for spec in specs
        if not any(os.path.exists(os.path.join(out, spec.relpath, name)) for name in (RESULT_FILE, MODEL_FILE))
    ]
    if len(untrained) > 1:  # one seed alone is an ordinary run
        train_batch(untrained, out, counter, cuda_graph)
    return [execute_run(spec, out, counter, threads, cuda_graph) for spec in specs]
