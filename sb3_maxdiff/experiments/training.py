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
import hashlib
import inspect
import json
import os
import pickle
import random
import time
from typing import Any, NamedTuple

import gymnasium as gym
import numpy as np
import torch as th
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
    SPEC_FILE,
    WINDOWS_FILE,
    RunSpec,
    read_resumes,
    write_json,
)
from sb3_maxdiff.maxdiff.maxdiff import MaxDiffMPPI
from sb3_maxdiff.nnmppi.nnmppi import NNMPPI


@dataclasses.dataclass(frozen=True)
class ExecutionOptions:
    """
    How runs execute, not what they compute: never part of a run's spec, so a run may be resumed under
    other options.

    :param threads: torch threads per process
    :param cuda_graph: NN-MPPI and MaxDiff plan with CUDA graphs (on a CUDA device)
    :param deadline: the time (``time.time()``) by which a run stops: it writes a checkpoint and raises
        :class:`TimeLimitReached` before it (see :class:`Deadline`); None: no limit
    :param batch_eval: evaluate the runs of a batch together, one batched planner call per step (their random
        draws differ from the one-at-a-time evaluation, which the published runs used; each result says which)
    """

    threads: int = 1
    cuda_graph: bool = False
    deadline: float | None = None
    batch_eval: bool = False

    def model_kwargs(self, algo: type) -> dict[str, Any]:
        """
        Keyword arguments for ``algo``'s constructor and ``load`` (where they override what the saved model
        had): ``cuda_graph`` for the model-based methods (SAC has no planner to capture).
        """
        return {"cuda_graph": self.cuda_graph} if issubclass(algo, NNMPPI) else {}


class TimeLimitReached(Exception):
    """A run stopped before the time limit, its training checkpointed: the same command resumes it."""


class Deadline:
    """
    When to stop before a time limit. Training stops at the end of an episode if the next one might not end before
    the limit (the longest stretch between two episode ends seen so far, times 1.5, plus twice the time a checkpoint
    took to write), and at any step once only the time to write a checkpoint is left.

    :param at: the limit, as ``time.time()``; None: never stop
    """

    MARGIN_SECONDS = 10.0

    def __init__(self, at: float | None):
        self.at = at
        self.longest_gap = 0.0
        self.save_seconds = 0.0
        self.last_end = time.time()

    def left(self) -> float:
        return float("inf") if self.at is None else self.at - time.time()

    def episode_ended(self) -> bool:
        """Note an episode end; whether training should stop here."""
        now = time.time()
        self.longest_gap, self.last_end = max(self.longest_gap, now - self.last_end), now
        return self.left() < 1.5 * self.longest_gap + self.reserve()

    def reserve(self) -> float:
        """Time kept to write a checkpoint."""
        return 2.0 * self.save_seconds + self.MARGIN_SECONDS

    def check(self, needed: float, what: str) -> None:
        """Raise :class:`TimeLimitReached` unless ``needed`` seconds are left for ``what``."""
        if self.left() < needed + self.MARGIN_SECONDS:
            raise TimeLimitReached(f"stopped before the time limit: {what} ({needed:.0f} s) would not end before it")


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


# what agents of one batch may each have of their own (MaxDiff and NN-MPPI agents plan with one planner: NN-MPPI is
# alpha 0 with the control term on), and the path entropy's settings, which only MaxDiff agents have
PER_AGENT_KWARGS = ("alpha", "control_cost")
ENTROPY_KWARGS = (
    "explr_dims",
    "explr_weights",
    "window",
    "entropy_method",
    "entropy_top_m",
    "alpha_target_ratio",
    "alpha_rate",
)


def batch_key(spec: RunSpec) -> str:
    """
    What runs must share to train in one batch (``--batch-cells``): everything but the setting, method and seed,
    and but the keyword arguments an agent may have of its own or that only MaxDiff has.
    """
    shared = {key: value for key, value in spec.algo_kwargs.items() if key not in (*PER_AGENT_KWARGS, *ENTROPY_KWARGS)}
    return json.dumps({**spec.to_json(), "setting": "", "method": "", "seed": -1, "algo_kwargs": shared}, sort_keys=True)


def _entropy_kwargs(spec: RunSpec) -> str | None:
    """The path entropy's settings of a MaxDiff run (None for NN-MPPI, which has none)."""
    if not issubclass(get_algo(spec.method), MaxDiffMPPI):
        return None
    return json.dumps({key: spec.algo_kwargs.get(key) for key in ENTROPY_KWARGS}, sort_keys=True)


def split_by_entropy(group: list[RunSpec]) -> list[list[RunSpec]]:
    """
    A group of runs split so that the MaxDiff runs of each part share their path entropy's settings (one model has
    one); the NN-MPPI runs go with the first part.
    """
    parts: dict[str | None, list[RunSpec]] = {}
    for spec in group:
        parts.setdefault(_entropy_kwargs(spec), []).append(spec)
    if len(parts) <= 1 or None not in parts:
        return list(parts.values())
    nnmppi = parts.pop(None)
    first = next(iter(parts))
    parts[first] = [spec for spec in group if spec in nnmppi or spec in parts[first]]
    return list(parts.values())


def is_mixed(specs: list[RunSpec]) -> bool:
    """Whether a batch holds runs of several cells (``--batch-cells``), not only the seeds of one."""
    return len({(spec.setting, spec.method) for spec in specs}) > 1


def batch_algo(specs: list[RunSpec]) -> type:
    """The algorithm a batch trains with: MaxDiff where a MaxDiff run is in it (its NN-MPPI agents plan with alpha 0)."""
    algos = [get_algo(spec.method) for spec in specs]
    return next((algo for algo in algos if issubclass(algo, MaxDiffMPPI)), algos[0]) if is_mixed(specs) else algos[0]


def batch_kwargs(specs: list[RunSpec]) -> dict[str, Any]:
    """
    The keyword arguments of a batch's model: those of its runs, with ``alpha`` and ``control_cost`` given per agent
    where the runs differ in them (an NN-MPPI run's agent: alpha 0, its own control-cost setting).
    """
    algo = batch_algo(specs)
    first = next(spec for spec in specs if get_algo(spec.method) is algo)
    kwargs = copy.deepcopy(first.algo_kwargs)
    if not is_mixed(specs):
        return kwargs
    for name in PER_AGENT_KWARGS:
        if name not in inspect.signature(algo).parameters:
            continue
        values = [_own_value(spec, name) for spec in specs]
        kwargs[name] = values if any(value != values[0] for value in values) else values[0]
    return kwargs


def _own_value(spec: RunSpec, name: str) -> Any:
    """A run's ``alpha`` or ``control_cost``: its keyword argument, else its algorithm's default (NN-MPPI: alpha 0)."""
    if name in spec.algo_kwargs:
        return copy.deepcopy(spec.algo_kwargs[name])
    parameters = inspect.signature(get_algo(spec.method)).parameters
    return parameters[name].default if name in parameters else 0.0


def batch_dir(out: str, specs: list[RunSpec]) -> str:
    """
    Where a batch keeps its checkpoints: ``<cell>/batch_<seeds>/`` for the seeds of one cell; for several cells,
    ``<preset>/<budget>/batch_cells_<digest of the runs' folders>/``, with the list of its runs in ``runs.json``.
    """
    if not is_mixed(specs):
        cell = os.path.dirname(os.path.join(out, specs[0].relpath))
        return os.path.join(cell, "batch_" + "-".join(str(spec.seed) for spec in specs))
    digest = hashlib.md5("\n".join(spec.relpath for spec in specs).encode()).hexdigest()[:10]
    return os.path.join(out, specs[0].preset, specs[0].budget, f"batch_cells_{digest}")


def make_env(env_id: str, spec: RunSpec) -> gym.Env:
    """The environment ``env_id`` as ``spec`` runs it: never-ending for a single-shot run, else its episode length."""
    if spec.single_shot:
        return make_single_shot_env(env_id)
    kwargs = {} if spec.max_episode_steps is None else {"max_episode_steps": spec.max_episode_steps}
    return gym.make(env_id, **kwargs)


class ResetRandomState(gym.Wrapper):
    """
    Notes the state of the environment's random generator just before each reset, so that a checkpoint taken after
    an episode ended can restore it and redo that reset exactly (:func:`restore_random_state`).
    """

    def __init__(self, env: gym.Env):
        super().__init__(env)
        self.before_last_reset: dict[str, Any] | None = None

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        self.before_last_reset = None if seed is not None else copy.deepcopy(self.env.unwrapped.np_random.bit_generator.state)
        return self.env.reset(seed=seed, options=options)


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
            env = ResetRandomState(make_env(spec.env_id, spec))
            offset = spec.seed - specs[0].seed - index  # SB3 seeds environment i with (first seed) + i
            env = SeedOffset(env, offset) if offset else env
            return Monitor(env, os.path.join(run_dir, MONITOR_FILE), override_existing=not resume)

        return build

    return DummyVecEnv([make(index, spec, run_dir) for index, (spec, run_dir) in enumerate(zip(specs, run_dirs))])


# ----------------------------------------------------------------------------------------------- checkpoints


def random_state(model: Any, ended: list[bool]) -> dict[str, Any]:
    """
    Every random stream a run draws from: torch's (CPU and CUDA), numpy's and Python's global ones, the action
    space's (random warm-up actions), and each environment's as it was before its last reset where that reset began
    the current episode (``ended``: the environment's episode ended at the last step), None elsewhere.
    """
    envs = model.get_env().envs
    return {
        "torch": th.get_rng_state(),
        "cuda": th.cuda.get_rng_state_all() if th.cuda.is_available() else None,
        "numpy": np.random.get_state(),
        "python": random.getstate(),
        "action_space": copy.deepcopy(model.action_space.np_random.bit_generator.state),
        "envs": [env.get_wrapper_attr("before_last_reset") if done else None for env, done in zip(envs, ended)],
    }


def restore_random_state(model: Any, state: dict[str, Any]) -> bool:
    """
    Put back the streams of :func:`random_state` if every environment's episode had just ended (each environment's
    generator set to redo the reset that began its next episode; SB3 resets them when ``learn`` starts); the run then
    continues exactly as it would have without the stop. Returns False, changing nothing, otherwise.
    """
    if any(env_state is None for env_state in state["envs"]):
        return False
    th.set_rng_state(state["torch"])
    if state["cuda"] is not None and th.cuda.is_available():
        th.cuda.set_rng_state_all(state["cuda"])
    np.random.set_state(state["numpy"])
    random.setstate(state["python"])
    model.action_space.np_random.bit_generator.state = state["action_space"]
    vec_env = model.get_env()
    vec_env._reset_seeds()  # SB3's load seeded the next reset (set_random_seed): the restored generators draw it
    for env, env_state in zip(vec_env.envs, state["envs"]):
        generator, _ = gym.utils.seeding.np_random()
        generator.bit_generator.state = env_state
        env.unwrapped.np_random = generator
    return True


def save_checkpoint(directory: str, model: Any, episodes: list[int], visited: list[list], ended: list[bool]) -> None:
    """
    Model, replay buffer and random streams at ``model.num_timesteps`` (taken between two steps: the last step's
    transition stored, its updates made), then the pointer to them, then old ones deleted.

    :param ended: for each environment, whether its episode ended at the last step
    """
    steps = model.num_timesteps
    model.save(os.path.join(directory, f"checkpoint_{steps}.zip"))
    model.save_replay_buffer(os.path.join(directory, f"checkpoint_{steps}_replay_buffer.pkl"))
    with open(os.path.join(directory, f"checkpoint_{steps}_random_state.pkl"), "wb") as file:
        pickle.dump(random_state(model, ended), file)
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


def _last_device_type(run_dir: str, agent_timesteps: int) -> str:
    """The kind of device ("cpu", "cuda") the run trained on before ``agent_timesteps``: that of its last resume
    before then that noted one, else the one it started on (its ``spec.json``)."""
    for resume in reversed(read_resumes(run_dir)):
        if resume["agent_timesteps"] < agent_timesteps and "device" in resume:
            return th.device(resume["device"]).type
    with open(os.path.join(run_dir, SPEC_FILE)) as file:
        return th.device(json.load(file).get("device", "cpu")).type


def _record_resume(run_dir: str, episodes: int, agent_timesteps: int, exact: bool = False, device: str | None = None) -> None:
    """
    Note in ``resumes.json`` that the run continues from ``agent_timesteps`` after its first ``episodes`` monitor
    rows (``exact``: with every random stream put back, as if never stopped; ``device``: the torch device it continues
    on), dropping the notes of later checkpoints (those of an earlier try that was stopped again).
    """
    kept = [resume for resume in read_resumes(run_dir) if resume["agent_timesteps"] < agent_timesteps]
    note = {"episodes": episodes, "agent_timesteps": agent_timesteps, "exact": exact}
    if device is not None:
        note["device"] = device
    write_json(os.path.join(run_dir, RESUMES_FILE), [*kept, note])


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
    """
    Progress, each run's episode count and the group's checkpoints (when an episode ends, and when training stops
    before the time limit: at an episode end where it can, at any step where it must). A checkpoint asked for at a
    step is written at the start of the next one, once SB3 has stored the step's transition and made its updates;
    a stop then ends training at that next step, which is not kept.
    """

    def __init__(
        self,
        directory: str,
        every: int,
        progress: Progress,
        episodes: list[int],
        ergodicity: list,
        deadline: Deadline | None = None,
    ):
        super().__init__()
        self.directory, self.every, self.progress = directory, every, progress
        self.episodes, self.ergodicity = episodes, ergodicity
        self.deadline = deadline or Deadline(None)
        self.last_checkpoint = 0
        self.stopped = False
        self.pending: str | None = None  # "checkpoint" or "stop", asked for at the last step
        self.ended: list[bool] = []  # which environments' episodes ended at the last step

    @property
    def agent_steps(self) -> int:
        return self.num_timesteps // self.training_env.num_envs

    def _on_training_start(self) -> None:
        self.last_checkpoint = self.agent_steps

    def _on_rollout_start(self) -> None:
        if self.pending is not None:
            self._checkpoint()
            self.stopped = self.pending == "stop"
            self.pending = None

    def _on_step(self) -> bool:
        if self.stopped:
            return False  # this step is not kept: the checkpoint was taken before it
        for _ in range(self.training_env.num_envs):
            self.progress()
        dones = self.locals["dones"]
        for index, done in enumerate(dones):
            self.episodes[index] += int(done)
        self.ended = [bool(done) for done in dones]
        if self.deadline.at is not None:
            ended = dones.any() and self.deadline.episode_ended()
            if ended or self.deadline.left() < self.deadline.reserve():
                self.pending = "stop"
                return True
        if self.every and dones.any() and self.agent_steps - self.last_checkpoint >= self.every:
            self.pending = "checkpoint"
        return True

    def _checkpoint(self) -> None:
        start = time.time()
        visited = [sorted(logger.visited) if logger is not None else [] for logger in self.ergodicity]
        save_checkpoint(self.directory, self.model, list(self.episodes), visited, self.ended)
        self.last_checkpoint = self.agent_steps
        self.deadline.save_seconds = max(self.deadline.save_seconds, time.time() - start)


# ----------------------------------------------------------------------------------------------- training


def _new_model(specs: list[RunSpec], env: Any, options: ExecutionOptions, **extra: Any) -> Any:
    """
    A fresh model for the runs ``specs`` (one, or a batch) with their keyword arguments (a copy: SB3 writes into
    ``policy_kwargs``), seeded with the first run's seed.
    """
    algo = batch_algo(specs)
    kwargs = {**batch_kwargs(specs), **options.model_kwargs(algo), **extra}
    return algo("MlpPolicy", env, seed=specs[0].seed, device=specs[0].device, **kwargs)


def _build_or_resume(specs: list[RunSpec], run_dirs: list[str], directory: str, options: ExecutionOptions) -> tuple:
    """The model to train (fresh, or the latest checkpoint with its replay buffer), its agent steps, episodes, cells."""
    first, batched = specs[0], len(specs) > 1
    algo = batch_algo(specs)
    resume = os.path.exists(os.path.join(directory, CHECKPOINT_FILE)) and all(
        os.path.exists(os.path.join(run_dir, MONITOR_FILE)) for run_dir in run_dirs
    )
    exact = False
    if resume:
        checkpoint = read_checkpoint(directory, len(specs))
        for run_dir, episodes in zip(run_dirs, checkpoint["episodes"]):
            _truncate_monitor(os.path.join(run_dir, MONITOR_FILE), episodes)
        stem = os.path.join(directory, f"checkpoint_{checkpoint['timesteps']}")
        env = _training_env(specs, run_dirs, resume=True)
        model = algo.load(f"{stem}.zip", env=env, device=first.device, **options.model_kwargs(algo))
        model.load_replay_buffer(f"{stem}_replay_buffer.pkl")
        done, episodes, visited = checkpoint["agent_timesteps"], checkpoint["episodes"], checkpoint["visited_cells"]
        if os.path.exists(f"{stem}_random_state.pkl"):
            with open(f"{stem}_random_state.pkl", "rb") as file:
                exact = restore_random_state(model, pickle.load(file))
        else:  # a checkpoint of an earlier version
            exact = False
        for run_dir, kept in zip(run_dirs, episodes):
            # another kind of device computes differently: the run goes on, but not as it would have
            same_device = _last_device_type(run_dir, done) == model.device.type
            _record_resume(run_dir, kept, done, exact and same_device, device=str(model.device))
    else:
        remove_checkpoints(directory)
        for run_dir in run_dirs:
            if os.path.exists(os.path.join(run_dir, RESUMES_FILE)):
                os.remove(os.path.join(run_dir, RESUMES_FILE))
        env = _training_env(specs, run_dirs, resume=False)
        model = _new_model(specs, env, options, **({"independent_agents": True} if batched else {}))
        done, episodes, visited = 0, [0] * len(specs), [[] for _ in specs]
    if (batched or done) and not exact:
        # a run resumed where not every episode had ended continues on seeds of its own; a batch's environments
        # follow their seeds
        model.set_random_seed(first.seed + done)
    return model, done, episodes, visited


def _train_single_shot(spec: RunSpec, run_dir: str, progress: Progress, options: ExecutionOptions) -> Trained:
    start = time.perf_counter()
    model = _new_model([spec], make_env(spec.env_id, spec), options)
    hook = _GroupHook(run_dir, 0, progress, [0], [None])
    single = learn_single_shot(model, spec.steps, spec.window, os.path.join(run_dir, WINDOWS_FILE), [hook])
    model.save(os.path.join(run_dir, MODEL_FILE))
    info = {"resumed_from_steps": 0, "window_returns": single.window_returns, "final_distance": single.final_distance}
    return Trained({**info, "train_seconds": time.perf_counter() - start}, model)


def _agent_as_run(model: Any, index: int, spec: RunSpec) -> Any:
    """Agent ``index`` of a batch as a model of ``spec``'s method (an NN-MPPI agent of a MaxDiff batch as an NNMPPI)."""
    if isinstance(model, MaxDiffMPPI) and not issubclass(get_algo(spec.method), MaxDiffMPPI):
        return model.agent(index, as_nnmppi=True)
    return model.agent(index)


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
    if is_mixed(specs):
        write_json(os.path.join(directory, "runs.json"), [spec.relpath for spec in specs])
    model, done, episodes, visited = _build_or_resume(specs, run_dirs, directory, options)
    ergodicity = [
        _ergodicity_logger(run_dir, spec, index, done, cells)
        for index, (run_dir, spec, cells) in enumerate(zip(run_dirs, specs, visited))
    ]
    hook = _GroupHook(directory, specs[0].checkpoint_every, progress, list(episodes), ergodicity, Deadline(options.deadline))
    # the diagnostics see an episode's end before the checkpoint is written
    callbacks = [logger for logger in ergodicity if logger is not None] + [hook]
    model.learn(len(specs) * (specs[0].steps - done), callback=callbacks, reset_num_timesteps=done == 0)
    if hook.stopped:
        raise TimeLimitReached(
            f"stopped before the time limit at {hook.last_checkpoint} of {specs[0].steps} steps per agent, checkpoint in "
            f"{directory}"
        )
    info = {"train_seconds": time.perf_counter() - start, "resumed_from_steps": done}
    if not batched:
        model.save(os.path.join(run_dirs[0], MODEL_FILE))
        remove_checkpoints(directory)
        return [Trained(info, model)]
    info["batched_seeds"] = [spec.seed for spec in specs]
    if is_mixed(specs):
        info["batched_runs"] = [spec.name for spec in specs]
    for index, (spec, run_dir) in enumerate(zip(specs, run_dirs)):
        _agent_as_run(model, index, spec).save(os.path.join(run_dir, MODEL_FILE))
        write_json(os.path.join(run_dir, BATCH_FILE), info)
    remove_checkpoints(directory)
    for path in glob.glob(os.path.join(directory, "*.json")):
        os.remove(path)
    os.rmdir(directory)
    return [Trained(info) for _ in specs]
