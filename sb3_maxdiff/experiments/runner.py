"""
Run the (setting, method, seed) grid of a preset, locally in parallel processes or on a Ray cluster.

Every run writes to its own folder ``<out>/<preset>/<budget>/<setting>/<method>/seed_<n>/``:
``spec.json``, ``monitor.csv`` (multi-shot episodes) or ``windows.csv`` (single-shot windows),
``model.zip``, and last ``result.json`` (evaluation episodes, final distance, timings), whose presence
marks the run as finished: a rerun of the same command skips it. A multi-shot run also keeps a
checkpoint (model and replay buffer, taken at the end of an episode) every ``checkpoint_every`` steps
and continues from the latest one when it is run again.

    python -m sb3_maxdiff.experiments run point-mass-beta --budget reduced --seeds 5 --out results
"""

import argparse
import dataclasses
import glob
import json
import multiprocessing as mp
import os
import re
import shutil
import sys
import tempfile
import time
import traceback
from collections.abc import Iterable
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from typing import Any

from sb3_maxdiff.experiments.presets import BUDGETS, PRESETS, cell_kwargs, get_budget, get_preset

RESULT_FILE = "result.json"
SPEC_FILE = "spec.json"
MODEL_FILE = "model.zip"
CHECKPOINT_FILE = "checkpoint.json"


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
) -> list[RunSpec]:
    """
    The runs of a preset, seed-major (every cell's seed 0, then every cell's seed 1, ...), so that a
    sweep stopped half-way has complete seeds rather than complete cells.
    """
    preset, budget = get_preset(preset_name), get_budget(budget_name)
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
            budget=budget_name,
            setting=cell.setting,
            method=cell.method,
            seed=seed,
            env_id=cell.env_id,
            algo_kwargs=cell_kwargs(cell, budget),
            steps=budget.steps[cell.family],
            single_shot=cell.single_shot,
            eval_env_ids=() if cell.single_shot else (cell.eval_env_ids or (cell.env_id,)),
            eval_episodes=budget.eval_episodes,
            window=budget.window,
            max_episode_steps=budget.max_episode_steps,
            checkpoint_every=0 if cell.single_shot else budget.checkpoint_every,
            device=device,
        )
        for seed in seeds
        for cell in cells
    ]


def is_finished(out: str, spec: RunSpec) -> bool:
    return os.path.exists(os.path.join(out, spec.relpath, RESULT_FILE))


def _write_json(path: str, data: Any) -> None:
    """Write atomically: a run killed while writing leaves the old file or none, never half a file."""
    tmp = f"{path}.tmp"
    with open(tmp, "w") as file:
        json.dump(data, file, indent=1)
    os.replace(tmp, path)


# ---------------------------------------------------------------------------------------------------
# one run (executed in a worker process or on a Ray node)


def _make_env(env_id: str, spec: RunSpec) -> Any:
    import gymnasium as gym

    import sb3_maxdiff  # noqa: F401  (registers the environments)
    from sb3_maxdiff.experiments.single_shot import make_single_shot_env

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


def _callbacks(run_dir: str, spec: RunSpec, progress: _Progress, episodes_before: int) -> list:
    from stable_baselines3.common.callbacks import BaseCallback

    class StepHook(BaseCallback):
        def __init__(self) -> None:
            super().__init__()
            self.episodes = episodes_before
            self.last_checkpoint = 0

        def _on_training_start(self) -> None:
            self.last_checkpoint = self.num_timesteps

        def _on_step(self) -> bool:
            progress()
            if spec.single_shot or not self.locals["dones"][0]:
                return True
            self.episodes += 1
            if spec.checkpoint_every and self.num_timesteps - self.last_checkpoint >= spec.checkpoint_every:
                _save_checkpoint(run_dir, self.model, self.episodes)
                self.last_checkpoint = self.num_timesteps
            return True

    return [StepHook()]


def _save_checkpoint(run_dir: str, model: Any, episodes: int) -> None:
    """Model and replay buffer at ``model.num_timesteps``, then the pointer to them, then old ones deleted."""
    steps = model.num_timesteps
    model.save(os.path.join(run_dir, f"checkpoint_{steps}.zip"))
    model.save_replay_buffer(os.path.join(run_dir, f"checkpoint_{steps}_replay_buffer.pkl"))
    _write_json(os.path.join(run_dir, CHECKPOINT_FILE), {"timesteps": steps, "episodes": episodes})
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


def _build_or_resume(run_dir: str, spec: RunSpec) -> tuple[Any, int, int]:
    """The model to train (fresh, or the latest checkpoint with its replay buffer), its steps and episodes."""
    from stable_baselines3.common.monitor import Monitor

    from sb3_maxdiff.experiments.algos import get_algo

    algo = get_algo(spec.method)
    pointer = os.path.join(run_dir, CHECKPOINT_FILE)
    monitor_path = os.path.join(run_dir, "monitor.csv")
    if spec.single_shot:
        return algo("MlpPolicy", _make_env(spec.env_id, spec), seed=spec.seed, device=spec.device, **spec.algo_kwargs), 0, 0
    if os.path.exists(pointer) and os.path.exists(monitor_path):
        with open(pointer) as file:
            checkpoint = json.load(file)
        _truncate_monitor(monitor_path, checkpoint["episodes"])
        env = Monitor(_make_env(spec.env_id, spec), monitor_path, override_existing=False)
        stem = os.path.join(run_dir, f"checkpoint_{checkpoint['timesteps']}")
        model = algo.load(f"{stem}.zip", env=env, device=spec.device)
        model.load_replay_buffer(f"{stem}_replay_buffer.pkl")
        model.set_random_seed(spec.seed + checkpoint["timesteps"])
        return model, checkpoint["timesteps"], checkpoint["episodes"]
    _remove_checkpoints(run_dir)
    env = Monitor(_make_env(spec.env_id, spec), monitor_path)
    return algo("MlpPolicy", env, seed=spec.seed, device=spec.device, **spec.algo_kwargs), 0, 0


def _evaluate(model: Any, spec: RunSpec, progress: _Progress) -> dict[str, list[float]]:
    """Returns of ``spec.eval_episodes`` episodes of the final policy on each evaluation environment."""
    from stable_baselines3.common.evaluation import evaluate_policy
    from stable_baselines3.common.monitor import Monitor

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


def execute_run(spec: RunSpec, out: str, counter: Any = None, threads: int = 1) -> dict[str, Any]:
    """
    Train, save and evaluate one run into ``<out>/<spec.relpath>``, resuming from what is on disk: a
    finished run is returned as it is, a trained but unevaluated model is evaluated, a checkpoint is
    trained on from.
    """
    import torch as th

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
        from sb3_maxdiff.experiments.algos import get_algo

        model = get_algo(spec.method).load(model_path, device=spec.device)
        result["resumed_from_steps"] = spec.steps
    else:
        model, done_steps, episodes = _build_or_resume(run_dir, spec)
        result["resumed_from_steps"] = done_steps
        callbacks = _callbacks(run_dir, spec, progress, episodes)
        if spec.single_shot:
            from sb3_maxdiff.experiments.single_shot import learn_single_shot

            single = learn_single_shot(model, spec.steps, spec.window, os.path.join(run_dir, "windows.csv"), callbacks)
            result.update(window_returns=single.window_returns, final_distance=single.final_distance)
        else:
            model.learn(spec.steps - done_steps, callback=callbacks, reset_num_timesteps=done_steps == 0)
        model.save(model_path)
        _remove_checkpoints(run_dir)
    result["train_seconds"] = time.perf_counter() - start
    if spec.single_shot and "window_returns" not in result:
        result.update(_read_windows(os.path.join(run_dir, "windows.csv")))
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


def _read_windows(path: str) -> dict[str, Any]:
    import csv

    with open(path) as file:
        rows = list(csv.DictReader(file))
    return {"window_returns": [float(row["window_return"]) for row in rows], "final_distance": float(rows[-1]["x_distance"])}


# ---------------------------------------------------------------------------------------------------
# executors


def _init_worker(counter: Any) -> None:
    global _worker_counter
    _worker_counter = counter


_worker_counter: Any = None


def _local_task(spec: RunSpec, out: str, threads: int) -> dict[str, Any]:
    try:
        return execute_run(spec, out, _worker_counter, threads)
    except Exception:
        _record_failure(out, spec, traceback.format_exc())
        raise


def _record_failure(out: str, spec: RunSpec, text: str) -> None:
    run_dir = os.path.join(out, spec.relpath)
    os.makedirs(run_dir, exist_ok=True)
    with open(os.path.join(run_dir, "error.txt"), "w") as file:
        file.write(text)


class ProgressDisplay:
    """
    Environment steps done, training and evaluation (a bar with rate and ETA when tqdm is installed),
    and one line per finished run. Episodes that end early make the total an upper bound.
    """

    def __init__(self, total_steps: int, total_runs: int):
        try:
            from tqdm import tqdm

            self.bar: Any = tqdm(total=total_steps, unit="step", dynamic_ncols=True, smoothing=0.05)
        except ImportError:
            self.bar = None
        self.total_runs, self.finished, self.shown = total_runs, 0, 0

    def steps(self, done: int) -> None:
        if self.bar is not None and done > self.shown:
            self.bar.update(done - self.shown)
        self.shown = max(self.shown, done)

    def run_finished(self, spec: RunSpec, message: str) -> None:
        self.finished += 1
        line = f"[{self.finished}/{self.total_runs}] {spec.name}: {message}"
        if self.bar is not None:
            self.bar.write(line)
        else:
            print(line, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _summary(result: dict[str, Any]) -> str:
    parts = [f"{result['train_seconds']:.0f} s"]
    for env_id, returns in result.get("eval_returns", {}).items():
        parts.append(f"eval {env_id.split('/')[-1]} {sum(returns) / len(returns):.1f}")
    if "final_distance" in result:
        parts.append(f"final distance {result['final_distance']:.2f}")
    return ", ".join(parts)


def run_local(specs: list[RunSpec], out: str, jobs: int, threads: int = 1) -> list[RunSpec]:
    """Run ``specs`` in ``jobs`` worker processes; returns the runs that failed."""
    context = mp.get_context("spawn")
    counter = context.Value("q", 0)
    display = ProgressDisplay(sum(spec.work for spec in specs), len(specs))
    failed: list[RunSpec] = []
    with ProcessPoolExecutor(jobs, mp_context=context, initializer=_init_worker, initargs=(counter,)) as pool:
        futures: dict[Future, RunSpec] = {pool.submit(_local_task, spec, out, threads): spec for spec in specs}
        pending = set(futures)
        while pending:
            finished, pending = wait(pending, timeout=1.0, return_when=FIRST_COMPLETED)
            display.steps(counter.value)
            for future in finished:
                _report_outcome(future, futures[future], display, failed)
    display.close()
    return failed


def _report_outcome(future: Future, spec: RunSpec, display: ProgressDisplay, failed: list[RunSpec]) -> None:
    error = future.exception()
    if error is None:
        display.run_finished(spec, _summary(future.result()))
    else:
        failed.append(spec)
        display.run_finished(spec, f"FAILED ({type(error).__name__}: {error}); see error.txt in its folder")


def _ray_task(spec_data: dict[str, Any], threads: int) -> dict[str, bytes]:
    """On a Ray node: run into a scratch folder and send back the run folder's files."""
    spec = RunSpec.from_json(spec_data)
    scratch = tempfile.mkdtemp(prefix="sb3_maxdiff_run_")
    try:
        try:
            execute_run(spec, scratch, None, threads)
        except Exception:
            _record_failure(scratch, spec, traceback.format_exc())
        run_dir = os.path.join(scratch, spec.relpath)
        return {name: open(os.path.join(run_dir, name), "rb").read() for name in sorted(os.listdir(run_dir))}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def run_ray(specs: list[RunSpec], out: str, address: str, threads: int = 1) -> list[RunSpec]:
    """
    Send ``specs`` to the Ray cluster at ``address`` (``"local"``: start a Ray instance on this machine),
    one task of ``threads`` CPUs per run, and write each run's files under ``out`` as it comes back.
    A run interrupted on a node starts again from scratch; finished runs are never run twice.
    """
    try:
        import ray
    except ImportError as error:
        raise ImportError("--ray-address needs Ray: pip install 'sb3-maxdiff[ray]'") from error

    ray.init(address=None if address == "local" else address, ignore_reinit_error=True, log_to_driver=False)
    remote = ray.remote(num_cpus=threads)(_ray_task)
    refs = {remote.remote(spec.to_json(), threads): spec for spec in specs}
    display = ProgressDisplay(sum(spec.work for spec in specs), len(specs))
    failed: list[RunSpec] = []
    pending = list(refs)
    while pending:
        ready, pending = ray.wait(pending, num_returns=1)
        spec = refs[ready[0]]
        try:
            files = ray.get(ready[0])
        except ray.exceptions.RayError as error:  # the node or its worker died
            files = {"error.txt": f"{type(error).__name__}: {error}".encode()}
        run_dir = os.path.join(out, spec.relpath)
        os.makedirs(run_dir, exist_ok=True)
        for name, data in files.items():
            with open(os.path.join(run_dir, name), "wb") as file:
                file.write(data)
        display.steps(display.shown + spec.work)
        if RESULT_FILE in files:
            display.run_finished(spec, _summary(json.loads(files[RESULT_FILE])))
        else:
            failed.append(spec)
            display.run_finished(spec, "FAILED; see error.txt in its folder")
    display.close()
    return failed


def run_specs(
    specs: list[RunSpec], out: str, jobs: int | None = None, threads: int = 1, ray_address: str | None = None
) -> tuple[list[RunSpec], list[RunSpec]]:
    """Run the unfinished ``specs``; returns (those skipped as already finished, those that failed)."""
    skipped = [spec for spec in specs if is_finished(out, spec)]
    todo = [spec for spec in specs if not is_finished(out, spec)]
    if not todo:
        return skipped, []
    if ray_address is not None:
        return skipped, run_ray(todo, out, ray_address, threads)
    jobs = jobs or max(1, (os.cpu_count() or 1) // threads)
    return skipped, run_local(todo, out, min(jobs, len(todo)), threads)


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text}")
    return value


def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    parser = argparse.ArgumentParser(prog=prog, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("preset", choices=sorted(PRESETS))
    parser.add_argument("--budget", choices=BUDGETS, default="reduced")
    parser.add_argument("--seeds", type=_positive_int, default=None, help="seeds 0..N-1 (default: the budget's)")
    parser.add_argument("--out", default="results", help="results folder")
    parser.add_argument("--settings", nargs="+", default=None, help="only these settings of the preset")
    parser.add_argument("--methods", nargs="+", default=None, help="only these methods")
    parser.add_argument("--jobs", type=_positive_int, default=None, help="parallel runs (default: cores / threads)")
    parser.add_argument("--threads", type=_positive_int, default=1, help="torch threads per run")
    parser.add_argument("--device", default="cpu", help="torch device of each run")
    parser.add_argument("--ray-address", default=None, help="run on this Ray cluster ('local': a Ray instance here)")
    parser.add_argument("--list", action="store_true", help="print the runs and whether they are finished, and stop")
    args = parser.parse_args(argv)

    seeds = range(args.seeds or get_budget(args.budget).seeds)
    try:
        specs = build_specs(args.preset, args.budget, seeds, args.settings, args.methods, args.device)
    except ValueError as error:
        parser.error(str(error))
    if args.list:
        for spec in specs:
            print(f"{'done' if is_finished(args.out, spec) else 'todo'}  {spec.relpath}")
        return 0
    skipped, failed = run_specs(specs, args.out, args.jobs, args.threads, args.ray_address)
    done = len(specs) - len(failed)
    print(
        f"{done}/{len(specs)} runs finished ({len(skipped)} were already on disk), {len(failed)} failed; results in {args.out}"
    )
    if failed:
        print("failed: " + "; ".join(spec.name for spec in failed), file=sys.stderr)
    return 1 if failed else 0
