"""
Training the runs of one group (:func:`train_group`): one run, or the seeds of one NN-MPPI / MaxDiff cell
trained together as the independent agents of one model (``independent_agents=True``, one batched rollout
and one batched update per step). Both take the same path: build or resume the model, learn with the
progress, diagnostics and checkpoint callbacks, save each run's model into its own folder.

A multi-shot group keeps a checkpoint (model and replay buffer, taken at the end of an episode) every
``checkpoint_every`` steps of each agent, in the run's folder or, for a batch, in ``<cell>/batch_<seeds>/``,
and continues from the latest one when it is run again. In a batch the agents share the torch random stream,
so seed i of a batch is a different draw from seed i run alone, with the same distribution; environment i
is seeded with seed i.
"""

import copy
import dataclasses
import glob
import json
import os
import time
from typing import Any, NamedTuple

import gymnasium as gym
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env import DummyVecEnv

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
    RESUMES_FILE,
    WINDOWS_FILE,
    RunSpec,
    read_resumes,
    write_json,
)
from sb3_maxdiff.nnmppi.nnmppi import NNMPPI


@dataclasses.dataclass(frozen=True)
class ExecutionOptions:
    """
    How runs execute, not what they compute: never part of a run's spec, so a run may be resumed under
    other options.

    :param threads: torch threads per process
    :param cuda_graph: NN-MPPI and MaxDiff plan with CUDA graphs (on a CUDA device)
    """

    threads: int = 1
    cuda_graph: bool = False

    def model_kwargs(self, algo: type) -> dict[str, Any]:
        """
        Keyword arguments for ``algo``'s constructor and ``load`` (where they override what the saved model
        had): ``cuda_graph`` for the model-based methods (SAC has no planner to capture).
        """
        return {"cuda_graph": self.cuda_graph} if issubclass(algo, NNMPPI) else {}


class Trained(NamedTuple):
    """What training gives a run: what its result records (steps resumed from, time, windows) and, for a run
    trained alone, the model still in memory (None for the agents of a batch, which are saved and loaded)."""

    info: dict[str, Any]
    model: Any = None


class Progress:
    """Callback body: adds one to a shared counter every environment step (local progress display)."""

    def __init__(self, counter: Any):
        self.counter = counter

    def __call__(self) -> None:
        if self.counter is not None:
            with self.counter.get_lock():
                self.counter.value += 1


def is_batchable(spec: RunSpec) -> bool:
    """Multi-shot runs of the model-based methods can be batched; SAC and single-shot runs run alone."""
    return not spec.single_shot and issubclass(get_algo(spec.method), NNMPPI)


def batch_dir(out: str, specs: list[RunSpec]) -> str:
    """Where a batch of seeds keeps its checkpoints: ``<cell>/batch_<seeds>/``."""
    cell = os.path.dirname(os.path.join(out, specs[0].relpath))
    return os.path.join(cell, "batch_" + "-".join(str(spec.seed) for spec in specs))


def make_env(env_id: str, spec: RunSpec) -> gym.Env:
    """The environment ``env_id`` as ``spec`` runs it: never-ending for a single-shot run, else its episode length."""
    if spec.single_shot:
        return make_single_shot_env(env_id)
    kwargs = {} if spec.max_episode_steps is None else {"max_episode_steps": spec.max_episode_steps}
    return gym.make(env_id, **kwargs)


class SeedOffset(gym.Wrapper):
    """
    Adds ``offset`` to every seed that ``reset`` is given: environment i of a VecEnv, which SB3 seeds with
    ``seed + i``, then follows a seed of its own.
    """

    def __init__(self, env: gym.Env, offset: int):
        super().__init__(env)
        self.offset = offset

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        return self.env.reset(seed=None if seed is None else seed + self.offset, options=options)


def _training_env(specs: list[RunSpec], run_dirs: list[str], resume: bool) -> DummyVecEnv:
    """One monitored environment per run; environment i follows seed i of ``specs`` wherever SB3 seeds the VecEnv."""

    def make(index: int, spec: RunSpec, run_dir: str) -> Any:
        def build() -> gym.Env:
            env = make_env(spec.env_id, spec)
            offset = spec.seed - specs[0].seed - index  # SB3 seeds environment i with (first seed) + i
            env = SeedOffset(env, offset) if offset else env
            return Monitor(env, os.path.join(run_dir, MONITOR_FILE), override_existing=not resume)

        return build

    return DummyVecEnv([make(index, spec, run_dir) for index, (spec, run_dir) in enumerate(zip(specs, run_dirs))])


# ----------------------------------------------------------------------------------------------- checkpoints


def save_checkpoint(directory: str, model: Any, episodes: list[int], visited: list[list]) -> None:
    """Model and replay buffer at ``model.num_timesteps``, then the pointer to them, then old ones deleted."""
    steps = model.num_timesteps
    model.save(os.path.join(directory, f"checkpoint_{steps}.zip"))
    model.save_replay_buffer(os.path.join(directory, f"checkpoint_{steps}_replay_buffer.pkl"))
    pointer = {"timesteps": steps, "agent_timesteps": steps // len(episodes), "episodes": episodes, "visited_cells": visited}
    write_json(os.path.join(directory, CHECKPOINT_FILE), pointer)
    remove_checkpoints(directory, keep=steps)


def read_checkpoint(directory: str, n_runs: int) -> dict[str, Any]:
    """
    The checkpoint pointer with per-run lists (``episodes``, ``visited_cells``); reads the older form of a
    single run's pointer too (a number of episodes, one list of cells, no ``agent_timesteps``).
    """
    with open(os.path.join(directory, CHECKPOINT_FILE)) as file:
        checkpoint = json.load(file)
    if isinstance(checkpoint["episodes"], int):
        checkpoint["episodes"] = [checkpoint["episodes"]]
        checkpoint["visited_cells"] = [checkpoint.get("visited_cells", [])]
        checkpoint.setdefault("agent_timesteps", checkpoint["timesteps"])
    if len(checkpoint["episodes"]) != n_runs:
        raise ValueError(f"the checkpoint in {directory} holds {len(checkpoint['episodes'])} runs, expected {n_runs}")
    return checkpoint


def remove_checkpoints(directory: str, keep: int | None = None) -> None:
    """Delete the checkpoint files, all but those of step ``keep`` if given (the pointer too if not)."""
    for path in glob.glob(os.path.join(directory, "checkpoint_*")):
        if keep is None or not os.path.basename(path).startswith((f"checkpoint_{keep}.", f"checkpoint_{keep}_")):
            os.remove(path)
    pointer = os.path.join(directory, CHECKPOINT_FILE)
    if keep is None and os.path.exists(pointer):
        os.remove(pointer)


def _truncate_monitor(path: str, episodes: int) -> None:
    """Keep the monitor's two header lines and its first ``episodes`` rows (those the checkpoint saw)."""
    with open(path) as file:
        lines = file.readlines()
    with open(path, "w") as file:
        file.writelines(lines[: 2 + episodes])


def _record_resume(run_dir: str, episodes: int, agent_timesteps: int) -> None:
    """
    Note in ``resumes.json`` that the run continues from ``agent_timesteps`` after its first ``episodes`` monitor
    rows, dropping the notes of later checkpoints (those of an earlier try that was stopped again).
    """
    kept = [resume for resume in read_resumes(run_dir) if resume["agent_timesteps"] < agent_timesteps]
    write_json(os.path.join(run_dir, RESUMES_FILE), [*kept, {"episodes": episodes, "agent_timesteps": agent_timesteps}])


def _ergodicity_logger(run_dir: str, spec: RunSpec, env_index: int, steps_before: int, visited: list) -> Any:
    """
    The ergodicity callback of a multi-shot run whose cell has a diagnostics grid (None for other runs),
    scoring environment ``env_index`` and writing ``ergodicity.csv``. A fresh run starts the file anew; a
    resumed one keeps the rows up to its checkpoint and the grid cells ``visited`` until then.
    """
    grid = spec.cell.ergodicity
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
    logger.visited = {tuple(cell) for cell in visited}
    return logger


class _GroupHook(BaseCallback):
    """Progress, each run's episode count and the group's checkpoints (when an episode ends)."""

    def __init__(self, directory: str, every: int, progress: Progress, episodes: list[int], ergodicity: list):
        super().__init__()
        self.directory, self.every, self.progress = directory, every, progress
        self.episodes, self.ergodicity = episodes, ergodicity
        self.last_checkpoint = 0

    @property
    def agent_steps(self) -> int:
        return self.num_timesteps // self.training_env.num_envs

    def _on_training_start(self) -> None:
        self.last_checkpoint = self.agent_steps

    def _on_step(self) -> bool:
        for _ in range(self.training_env.num_envs):
            self.progress()
        dones = self.locals["dones"]
        for index, done in enumerate(dones):
            self.episodes[index] += int(done)
        if self.every and dones.any() and self.agent_steps - self.last_checkpoint >= self.every:
            visited = [sorted(logger.visited) if logger is not None else [] for logger in self.ergodicity]
            save_checkpoint(self.directory, self.model, list(self.episodes), visited)
            self.last_checkpoint = self.agent_steps
        return True


# ----------------------------------------------------------------------------------------------- training


def _new_model(spec: RunSpec, env: Any, options: ExecutionOptions, **extra: Any) -> Any:
    """A fresh model of ``spec``'s method with its keyword arguments (a copy: SB3 writes into ``policy_kwargs``)."""
    algo = get_algo(spec.method)
    kwargs = {**copy.deepcopy(spec.algo_kwargs), **options.model_kwargs(algo), **extra}
    return algo("MlpPolicy", env, seed=spec.seed, device=spec.device, **kwargs)


def _build_or_resume(specs: list[RunSpec], run_dirs: list[str], directory: str, options: ExecutionOptions) -> tuple:
    """The model to train (fresh, or the latest checkpoint with its replay buffer), its agent steps, episodes, cells."""
    first, batched = specs[0], len(specs) > 1
    algo = get_algo(first.method)
    resume = os.path.exists(os.path.join(directory, CHECKPOINT_FILE)) and all(
        os.path.exists(os.path.join(run_dir, MONITOR_FILE)) for run_dir in run_dirs
    )
    if resume:
        checkpoint = read_checkpoint(directory, len(specs))
        for run_dir, episodes in zip(run_dirs, checkpoint["episodes"]):
            _truncate_monitor(os.path.join(run_dir, MONITOR_FILE), episodes)
            _record_resume(run_dir, episodes, checkpoint["agent_timesteps"])
        stem = os.path.join(directory, f"checkpoint_{checkpoint['timesteps']}")
        env = _training_env(specs, run_dirs, resume=True)
        model = algo.load(f"{stem}.zip", env=env, device=first.device, **options.model_kwargs(algo))
        model.load_replay_buffer(f"{stem}_replay_buffer.pkl")
        done, episodes, visited = checkpoint["agent_timesteps"], checkpoint["episodes"], checkpoint["visited_cells"]
    else:
        remove_checkpoints(directory)
        for run_dir in run_dirs:
            if os.path.exists(os.path.join(run_dir, RESUMES_FILE)):
                os.remove(os.path.join(run_dir, RESUMES_FILE))
        env = _training_env(specs, run_dirs, resume=False)
        model = _new_model(first, env, options, **({"independent_agents": True} if batched else {}))
        done, episodes, visited = 0, [0] * len(specs), [[] for _ in specs]
    if batched or done:  # a resumed run continues on seeds of its own; a batch's environments follow their seeds
        model.set_random_seed(first.seed + done)
    return model, done, episodes, visited


def _train_single_shot(spec: RunSpec, run_dir: str, progress: Progress, options: ExecutionOptions) -> Trained:
    start = time.perf_counter()
    model = _new_model(spec, make_env(spec.env_id, spec), options)
    hook = _GroupHook(run_dir, 0, progress, [0], [None])
    single = learn_single_shot(model, spec.steps, spec.window, os.path.join(run_dir, WINDOWS_FILE), [hook])
    model.save(os.path.join(run_dir, MODEL_FILE))
    info = {"resumed_from_steps": 0, "window_returns": single.window_returns, "final_distance": single.final_distance}
    return Trained({**info, "train_seconds": time.perf_counter() - start}, model)


def train_group(specs: list[RunSpec], out: str, progress: Progress, options: ExecutionOptions) -> list[Trained]:
    """
    Train the runs ``specs`` (one run, or the seeds of one batchable cell; their folders made by
    :func:`~sb3_maxdiff.experiments.specs.open_run_dir`) and save each run's model in its folder. A batch also
    writes what each run's result records of the training to its ``batch.json``, so that a run evaluated later
    in another process still has it.
    """
    start = time.perf_counter()
    run_dirs = [os.path.join(out, spec.relpath) for spec in specs]
    if specs[0].single_shot:
        (spec,) = specs
        return [_train_single_shot(spec, run_dirs[0], progress, options)]
    batched = len(specs) > 1
    directory = batch_dir(out, specs) if batched else run_dirs[0]
    os.makedirs(directory, exist_ok=True)
    model, done, episodes, visited = _build_or_resume(specs, run_dirs, directory, options)
    ergodicity = [
        _ergodicity_logger(run_dir, spec, index, done, cells)
        for index, (run_dir, spec, cells) in enumerate(zip(run_dirs, specs, visited))
    ]
    hook = _GroupHook(directory, specs[0].checkpoint_every, progress, list(episodes), ergodicity)
    # the diagnostics see an episode's end before the checkpoint is written
    callbacks = [logger for logger in ergodicity if logger is not None] + [hook]
    model.learn(len(specs) * (specs[0].steps - done), callback=callbacks, reset_num_timesteps=done == 0)
    info = {"train_seconds": time.perf_counter() - start, "resumed_from_steps": done}
    if not batched:
        model.save(os.path.join(run_dirs[0], MODEL_FILE))
        remove_checkpoints(directory)
        return [Trained(info, model)]
    info["batched_seeds"] = [spec.seed for spec in specs]
    for index, run_dir in enumerate(run_dirs):
        model.agent(index).save(os.path.join(run_dir, MODEL_FILE))
        write_json(os.path.join(run_dir, BATCH_FILE), info)
    remove_checkpoints(directory)
    os.rmdir(directory)
    return [Trained(info) for _ in specs]
