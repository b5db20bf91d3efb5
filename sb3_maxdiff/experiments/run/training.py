"""
Training the runs of one group (:func:`train_group`): one run, or the seeds of one NN-MPPI / MaxDiff cell
trained together as the independent agents of one model (``independent_agents=True``, one batched rollout
and one batched update per step). Both take the same path: build or resume the model, learn with the
progress, diagnostics and checkpoint callbacks, save each run's model into its own folder.

A multi-shot group keeps a checkpoint (:mod:`~sb3_maxdiff.experiments.run.checkpoints`, taken at the end of an
episode) every ``checkpoint_every`` steps of each agent, in the run's folder or in the batch's (see
:func:`~sb3_maxdiff.experiments.run.batching.batch_dir`), and continues from the latest one when it is run again.
In a batch the agents share the torch random stream, so seed i of a batch is a different draw from seed i run
alone, with the same distribution; environment i is seeded with seed i. A single-shot run, whose episode never
ends, keeps its checkpoints at any step, with its environment as it was, and carries on exactly from them.
"""

import glob
import os
import time
from typing import Any, NamedTuple

import numpy as np
from stable_baselines3.common.callbacks import BaseCallback

from sb3_maxdiff.common.callbacks import ErgodicityLogger
from sb3_maxdiff.experiments.define.algos import get_algo
from sb3_maxdiff.experiments.define.specs import (
    BATCH_FILE,
    CHECKPOINT_FILE,
    ERGODICITY_FILE,
    MODEL_FILE,
    MONITOR_FILE,
    RESUMES_FILE,
    TRAINING_FILE,
    WINDOWS_FILE,
    RunSpec,
    write_json,
)
from sb3_maxdiff.experiments.run.batching import batch_algo, batch_dir, batch_kwargs, is_mixed
from sb3_maxdiff.experiments.run.checkpoints import (
    episode_state,
    last_device_type,
    load_checkpoint,
    read_checkpoint,
    record_resume,
    remove_checkpoints,
    save_checkpoint,
    truncate_monitor,
)
from sb3_maxdiff.experiments.run.environments import SeedOffset, batch_env, make_env, training_env
from sb3_maxdiff.experiments.run.options import Deadline, ExecutionOptions, TimeLimitReached
from sb3_maxdiff.experiments.run.single_shot import WindowReturnLogger, learn_single_shot
from sb3_maxdiff.maxdiff.maxdiff import MaxDiffMPPI


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


class TrainingHook(BaseCallback):
    """
    Progress, each run's episode count and the group's checkpoints: when an episode ends (every ``every`` agent steps
    at most), and when training must stop (the time limit: at an episode end where it can, at any step where it must;
    a signal: at the next step).

    SB3 gives a callback two places that matter here, and the flow follows from them. ``_on_step`` comes right after
    the environments step, before SB3 stores that step's transition and makes its model updates; only there can a
    callback end training (by returning False), and SB3 then drops the step it was called for. ``_on_rollout_start``
    comes before the next step is planned, once the last one is stored and learned from. So a step only *asks* for a
    checkpoint or a stop (:meth:`_on_step`); the checkpoint is written at the start of the next step
    (:meth:`_on_rollout_start`), where the run is whole; and for a stop, that next step, already taken, is dropped:
    the run resumes from the checkpoint before it.

    :param episodes: each environment's finished episodes so far (default: none)
    :param ergodicity: each environment's ergodicity logger, whose visited cells a checkpoint keeps (default: none)
    :param single_shot: the window bookkeeping of a single-shot run (one per agent of a batch): its checkpoints are
        taken at any step (the episode never ends) and keep the environment and the bookkeeping as well
    """

    CHECKPOINT, STOP = "checkpoint", "stop"

    def __init__(
        self,
        directory: str,
        every: int,
        progress: Progress,
        deadline: Deadline | None = None,
        *,
        episodes: list[int] | None = None,
        ergodicity: list | None = None,
        single_shot: list[WindowReturnLogger] | None = None,
    ):
        super().__init__()
        self.first_step = self.timed_after = 0
        self.clock: list[tuple[int, float]] = []  # (agent steps, time) when the timing starts and when training ends
        self.directory, self.every, self.progress = directory, every, progress
        self.episodes, self.ergodicity = episodes, ergodicity
        self.deadline = deadline or Deadline(None)
        self.single_shot = single_shot
        self.last_checkpoint = 0
        self.stopped = False
        self.asked: str | None = None  # CHECKPOINT or STOP, asked for by the last step
        self.ended: list[bool] = []  # which environments' episodes ended at the last step

    @property
    def agent_steps(self) -> int:
        return self.num_timesteps // self.training_env.num_envs

    def _on_training_start(self) -> None:
        n_envs = self.training_env.num_envs
        self.episodes = [0] * n_envs if self.episodes is None else self.episodes
        self.ergodicity = [None] * n_envs if self.ergodicity is None else self.ergodicity
        self.last_checkpoint = self.first_step = self.agent_steps
        # the pace is timed after the first quarter of this call's steps: past building, graph captures, compilation
        to_train = (self.locals.get("total_timesteps", self.num_timesteps) - self.num_timesteps) // n_envs
        self.timed_after = max(to_train // 4, 1)

    def _on_training_end(self) -> None:
        if len(self.clock) == 1:
            self.clock.append((self.agent_steps, time.perf_counter()))

    def late_pace(self) -> dict[str, Any]:
        """
        What a run's result records of its pace: ``late_train_pace``, the agent steps of this call after its first
        quarter (per agent) and the seconds they took (checkpoints included); nothing where training stopped before them.
        """
        if len(self.clock) < 2 or self.clock[1][0] <= self.clock[0][0]:
            return {}
        (start_steps, start), (end_steps, end) = self.clock
        return {"late_train_pace": {"agent_steps": end_steps - start_steps, "seconds": end - start}}

    def _on_rollout_start(self) -> None:
        """The last step is stored and learned from: write the checkpoint it asked for (and stop, if it asked to)."""
        if self.asked is not None:
            self._checkpoint()
            self.stopped = self.asked == self.STOP
            self.asked = None

    def _on_step(self) -> bool:
        if self.stopped:
            return False  # SB3 drops this step: the run resumes from the checkpoint written before it
        dones = self.locals["dones"]
        self._count_step(dones)
        self.asked = self._what_to_ask(dones)
        return True

    def _count_step(self, dones: np.ndarray) -> None:
        """The progress bar, the pace's clock, the episodes."""
        for _ in range(self.training_env.num_envs):
            self.progress()
        if not self.clock and self.agent_steps - self.first_step >= self.timed_after:
            self.clock.append((self.agent_steps, time.perf_counter()))
        assert self.episodes is not None  # made at the start of training
        for index, done in enumerate(dones):
            self.episodes[index] += int(done)
        self.ended = [bool(done) for done in dones]

    def _what_to_ask(self, dones: np.ndarray) -> str | None:
        """A stop where the time limit or a signal needs one, else a checkpoint where one is due, else nothing."""
        if self.deadline.active:
            ended = dones.any() and self.deadline.episode_ended()
            if ended or self.deadline.left() < self.deadline.reserve():
                return self.STOP
        at_an_end = dones.any() or self.single_shot is not None
        if self.every and at_an_end and self.agent_steps - self.last_checkpoint >= self.every:
            return self.CHECKPOINT
        return None

    def _checkpoint(self) -> None:
        start = time.time()
        assert self.episodes is not None and self.ergodicity is not None  # made at the start of training
        visited = [sorted(logger.visited) if logger is not None else [] for logger in self.ergodicity]
        run_state = None
        if self.single_shot is not None:
            run_state = {"episode": episode_state(self.model), "windows": [logger.state() for logger in self.single_shot]}
        save_checkpoint(self.directory, self.model, list(self.episodes), visited, self.ended, run_state)
        self.last_checkpoint = self.agent_steps
        self.deadline.save_seconds = max(self.deadline.save_seconds, time.time() - start)


def _new_model(specs: list[RunSpec], env: Any, options: ExecutionOptions, **extra: Any) -> Any:
    """
    A fresh model for the runs ``specs`` (one, or a batch) with their keyword arguments (a copy: SB3 writes into
    ``policy_kwargs``), seeded with the first run's seed.
    """
    algo = batch_algo(specs)
    kwargs = {**batch_kwargs(specs), **options.model_kwargs(algo), **extra}
    return algo("MlpPolicy", env, seed=specs[0].seed, device=specs[0].device, **kwargs)


def _forget_earlier_tries(directory: str, run_dirs: list[str]) -> None:
    """Before a fresh start: remove the checkpoints left in ``directory`` and the runs' notes of earlier resumes."""
    remove_checkpoints(directory)
    for run_dir in run_dirs:
        if os.path.exists(os.path.join(run_dir, RESUMES_FILE)):
            os.remove(os.path.join(run_dir, RESUMES_FILE))


class Start(NamedTuple):
    """Where a group's training starts: its model, the steps done per agent, each run's episodes and visited cells."""

    model: Any
    done: int
    episodes: list[int]
    visited: list[list]


def _build_or_resume(
    specs: list[RunSpec], run_dirs: list[str], directory: str, options: ExecutionOptions, windows: list | None = None
) -> Start:
    """
    The model to train, fresh or from the latest checkpoint in ``directory`` (:func:`load_checkpoint`: its replay
    buffer and random streams), for a group of multi-shot runs or (``windows``: their window bookkeeping, restored
    from the checkpoint) of single-shot runs. A resumed multi-shot run's monitor is cut back to the checkpoint's
    episodes first; every resumed run notes in its ``resumes.json`` whether it carries on exactly.
    """
    first, batched, single_shot = specs[0], len(specs) > 1, windows is not None
    algo = batch_algo(specs)
    resume = os.path.exists(os.path.join(directory, CHECKPOINT_FILE)) and (
        single_shot or all(os.path.exists(os.path.join(run_dir, MONITOR_FILE)) for run_dir in run_dirs)
    )
    if not resume:
        _forget_earlier_tries(directory, run_dirs)
        if single_shot:
            env = _single_shot_env(specs, options.env_threads)
        else:
            env = training_env(specs, run_dirs, resume=False, env_threads=options.env_threads)
        model = _new_model(specs, env, options, **({"independent_agents": True} if batched else {}))
        if batched and not single_shot:  # a batch's environments follow their seeds
            model.set_random_seed(first.seed)
        return Start(model, 0, [0] * len(specs), [[] for _ in specs])
    if single_shot:
        env = _single_shot_env(specs, options.env_threads)
    else:
        for run_dir, episodes in zip(run_dirs, read_checkpoint(directory, len(specs))["episodes"]):
            truncate_monitor(os.path.join(run_dir, MONITOR_FILE), episodes)
        env = training_env(specs, run_dirs, resume=True, env_threads=options.env_threads)
    load_kwargs = {"device": first.device, **options.model_kwargs(algo)}
    model, checkpoint, exact = load_checkpoint(algo, directory, env, len(specs), windows, **load_kwargs)
    done = checkpoint["agent_timesteps"]
    episodes = [0] * len(specs) if single_shot else checkpoint["episodes"]  # a single-shot episode never ends
    for run_dir, kept in zip(run_dirs, episodes):
        # another kind of device computes differently: the run goes on, but not as it would have
        same_device = last_device_type(run_dir, done) == model.device.type
        record_resume(run_dir, kept, done, exact and same_device, device=str(model.device))
    if not exact:  # a run resumed where not every episode had ended continues on seeds of its own
        model.set_random_seed(first.seed + done)
    return Start(model, done, episodes, checkpoint["visited_cells"])


def _single_shot_env(specs: list[RunSpec], env_threads: int = 1) -> Any:
    """
    The never-ending environment of a single-shot run, or one per run of a batch, each following its run's seed
    (stepped in ``env_threads`` threads).
    """
    if len(specs) == 1:
        return make_env(specs[0].env_id, specs[0])

    def make(index: int, spec: RunSpec) -> Any:
        offset = spec.seed - specs[0].seed - index  # SB3 seeds environment i with (first seed) + i
        return lambda: SeedOffset(make_env(spec.env_id, spec), offset) if offset else make_env(spec.env_id, spec)

    return batch_env([make(index, spec) for index, spec in enumerate(specs)], env_threads)


def _train_single_shot(specs: list[RunSpec], out: str, progress: Progress, options: ExecutionOptions) -> list[Trained]:
    """Train a single-shot run, or the runs of a batch of them (one never-ending environment per agent)."""
    start = time.perf_counter()
    run_dirs = [os.path.join(out, spec.relpath) for spec in specs]
    directory = checkpoint_dir(out, specs)
    os.makedirs(directory, exist_ok=True)
    batched = len(specs) > 1
    windows = [
        WindowReturnLogger(spec.window, os.path.join(run_dir, WINDOWS_FILE), env_index=index if batched else None)
        for index, (spec, run_dir) in enumerate(zip(specs, run_dirs))
    ]
    model, done, _, _ = _build_or_resume(specs, run_dirs, directory, options, windows)
    n = len(specs)
    deadline = Deadline(options.deadline)
    hook = TrainingHook(directory, specs[0].checkpoint_every, progress, deadline, single_shot=windows)
    if batched:
        model.learn(n * (specs[0].steps - done), callback=[*windows, hook], reset_num_timesteps=done == 0)
    else:
        learn_single_shot(model, specs[0].steps - done, callback=[hook], logger=windows[0])
    if hook.stopped:
        raise TimeLimitReached(
            f"{hook.deadline.reason()} at {hook.last_checkpoint} of {specs[0].steps} steps"
            f"{' per agent' if batched else ''}, checkpoint in {directory}"
        )
    seconds = time.perf_counter() - start
    trained = []
    for index, (spec, run_dir, logger) in enumerate(zip(specs, run_dirs, windows)):
        info = {"resumed_from_steps": done, "window_returns": logger.window_returns, "final_distance": logger.x_distance}
        info.update(hook.late_pace())
        if batched:
            info["batched_seeds"] = [other.seed for other in specs]
            if is_mixed(specs):
                info["batched_runs"] = [other.name for other in specs]
            _agent_as_run(model, index, spec).save(os.path.join(run_dir, MODEL_FILE))
            write_json(os.path.join(run_dir, BATCH_FILE), {**info, "train_seconds": seconds})
        else:
            model.save(os.path.join(run_dir, MODEL_FILE))
            write_json(os.path.join(run_dir, TRAINING_FILE), {**info, "train_seconds": seconds})
        trained.append(Trained({**info, "train_seconds": seconds}, None if batched else model))
    remove_checkpoints(directory)
    if batched:
        for path in glob.glob(os.path.join(directory, "*.json")):
            os.remove(path)
        os.rmdir(directory)
    return trained


def _agent_as_run(model: Any, index: int, spec: RunSpec) -> Any:
    """Agent ``index`` of a batch as a model of ``spec``'s method (an NN-MPPI agent of a MaxDiff batch as an NNMPPI)."""
    if isinstance(model, MaxDiffMPPI) and not issubclass(get_algo(spec.method), MaxDiffMPPI):
        return model.agent(index, as_nnmppi=True)
    return model.agent(index)


def checkpoint_dir(out: str, specs: list[RunSpec]) -> str:
    """Where the group ``specs`` keeps its checkpoints: its batch's folder, or its one run's."""
    return batch_dir(out, specs) if len(specs) > 1 else os.path.join(out, specs[0].relpath)


def training_steps_done(out: str, specs: list[RunSpec]) -> int:
    """
    Environment steps of training the unfinished group ``specs`` has behind it, all agents together: every step of
    the runs already trained (their model saved, their evaluation to come) and those of the others' checkpoint.
    """
    trained = [spec for spec in specs if os.path.exists(os.path.join(out, spec.relpath, MODEL_FILE))]
    untrained = [spec for spec in specs if spec not in trained]
    done = sum(spec.steps for spec in trained)
    if untrained and os.path.exists(os.path.join(checkpoint_dir(out, untrained), CHECKPOINT_FILE)):
        done += read_checkpoint(checkpoint_dir(out, untrained), len(untrained))["timesteps"]
    return done


def train_group(specs: list[RunSpec], out: str, progress: Progress, options: ExecutionOptions) -> list[Trained]:
    """
    Train the runs ``specs`` (one run, or the seeds of one batchable cell; their folders made by
    :func:`~sb3_maxdiff.experiments.define.specs.open_run_dir`) and save each run's model in its folder. A batch also
    writes what each run's result records of the training to its ``batch.json``, so that a run evaluated later
    in another process still has it.
    """
    start = time.perf_counter()
    run_dirs = [os.path.join(out, spec.relpath) for spec in specs]
    if specs[0].single_shot:
        return _train_single_shot(specs, out, progress, options)
    batched = len(specs) > 1
    directory = checkpoint_dir(out, specs)
    os.makedirs(directory, exist_ok=True)
    if is_mixed(specs):
        write_json(os.path.join(directory, "runs.json"), [spec.relpath for spec in specs])
    model, done, episodes, visited = _build_or_resume(specs, run_dirs, directory, options)
    ergodicity = [
        _ergodicity_logger(run_dir, spec, index, done, cells)
        for index, (run_dir, spec, cells) in enumerate(zip(run_dirs, specs, visited))
    ]
    deadline = Deadline(options.deadline)
    hook = TrainingHook(
        directory, specs[0].checkpoint_every, progress, deadline, episodes=list(episodes), ergodicity=ergodicity
    )
    # the diagnostics see an episode's end before the checkpoint is written
    callbacks = [logger for logger in ergodicity if logger is not None] + [hook]
    model.learn(len(specs) * (specs[0].steps - done), callback=callbacks, reset_num_timesteps=done == 0)
    if hook.stopped:
        raise TimeLimitReached(
            f"{hook.deadline.reason()} at {hook.last_checkpoint} of {specs[0].steps} steps per agent, checkpoint in "
            f"{directory}"
        )
    info = {"train_seconds": time.perf_counter() - start, "resumed_from_steps": done, **hook.late_pace()}
    if not batched:
        model.save(os.path.join(run_dirs[0], MODEL_FILE))
        write_json(os.path.join(run_dirs[0], TRAINING_FILE), info)
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
