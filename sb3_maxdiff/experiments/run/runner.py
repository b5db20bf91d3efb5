"""
Run the (setting, method, seed) grid of a preset, locally in parallel processes or on a Ray cluster,
skipping the runs already finished on disk, so that a killed sweep resumes where it stopped. Which runs train
together as one batch of independent agents (``batch_seeds``, ``batch_cells``) is
:func:`sb3_maxdiff.experiments.run.batching.group_runs`'s; the command ``python -m sb3_maxdiff.experiments run`` over
this is :mod:`sb3_maxdiff.experiments.commands.run_command`.
"""

import contextlib
import json
import multiprocessing as mp
import os
import shutil
import signal
import tempfile
import threading
import traceback
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from typing import Any

from sb3_maxdiff.experiments.define.specs import RESULT_FILE, RunSpec, is_finished
from sb3_maxdiff.experiments.run.batching import group_runs
from sb3_maxdiff.experiments.run.execution import execute_group
from sb3_maxdiff.experiments.run.options import ExecutionOptions, StopRequest, TimeLimitReached
from sb3_maxdiff.experiments.run.training import training_steps_done


def _init_worker(counter: Any) -> None:
    global _worker_counter
    _worker_counter = counter
    StopRequest.install()  # a signal stops the worker's runs with a checkpoint, the way the time limit does


_worker_counter: Any = None


def _local_task(specs: list[RunSpec], out: str, options: ExecutionOptions) -> list[dict[str, Any]]:
    """One run, or the seeds of one cell batched in this process."""
    try:
        return execute_group(specs, out, _worker_counter, options)
    except TimeLimitReached:
        raise  # not a failure: what was done is on disk, and the same command resumes it
    except Exception:
        text = traceback.format_exc()
        for spec in specs:
            _record_failure(out, spec, text)
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

    :param steps_before: the steps of the total done before this call (resumed runs' checkpoints): the bar starts
        there, and its rate and time left count only the steps of this call
    """

    def __init__(self, total_steps: int, total_runs: int, steps_before: int = 0):
        try:
            from tqdm import tqdm

            self.bar: Any = tqdm(total=total_steps, initial=steps_before, unit="step", dynamic_ncols=True, smoothing=0.05)
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

    def note(self, line: str) -> None:
        if self.bar is not None:
            self.bar.write(line)
        else:
            print(line, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _summary(result: dict[str, Any]) -> str:
    # a run trained by an earlier version and evaluated later has no record of its training time
    parts = [f"{result['train_seconds']:.0f} s" if "train_seconds" in result else "training time not recorded"]
    for env_id, returns in result.get("eval_returns", {}).items():
        parts.append(f"eval {env_id.split('/')[-1]} {sum(returns) / len(returns):.1f}")
    if "final_distance" in result:
        parts.append(f"final distance {result['final_distance']:.2f}")
    return ", ".join(parts)


def _worker_context() -> Any:
    """
    Where the workers come from: Python's fork server, which imports the training code once (for the whole life of
    this process, however many sweeps it runs) and forks each worker from it, so that a worker does not import
    torch, Gymnasium and SB3 again (about 5 s of CPU each). The server is a fresh process that has run nothing but
    those imports (no thread pool, no CUDA context), so forking it is as safe as starting a new interpreter. Where
    there is no fork server (Windows), each worker is a new interpreter.
    """
    if "forkserver" not in mp.get_all_start_methods():
        return mp.get_context("spawn")
    context = mp.get_context("forkserver")
    context.set_forkserver_preload(["sb3_maxdiff.experiments.run.execution", "sb3_maxdiff.experiments.run.runner"])
    return context


def run_local(groups: list[list[RunSpec]], out: str, jobs: int, options: ExecutionOptions | None = None) -> list[RunSpec]:
    """
    Run each group in one of ``jobs`` worker processes (a group: one run, or the seeds of a cell to batch);
    returns the runs that failed.
    """
    context = _worker_context()
    counter = context.Value("q", 0)
    display = ProgressDisplay(
        sum(spec.work for group in groups for spec in group),
        sum(len(group) for group in groups),
        sum(training_steps_done(out, group) for group in groups),
    )
    failed: list[RunSpec] = []
    with (
        ProcessPoolExecutor(jobs, mp_context=context, initializer=_init_worker, initargs=(counter,)) as pool,
        _stops_passed_to_workers(display) as stops,
    ):
        futures: dict[Future, list[RunSpec]] = {
            pool.submit(_local_task, group, out, options or ExecutionOptions()): group for group in groups
        }
        pending = set(futures)
        while pending:
            finished, pending = wait(pending, timeout=1.0, return_when=FIRST_COMPLETED)
            display.steps(counter.value)
            if stops:  # groups not started yet do not start
                for future in pending:
                    future.cancel()
            for future in finished:
                _report_outcome(future, futures[future], display, failed)
    display.close()
    return failed


@contextlib.contextmanager
def _stops_passed_to_workers(display: ProgressDisplay) -> Iterator[list[int]]:
    """
    While the workers run: a SIGTERM or SIGINT to this process is passed on to them as SIGTERM, so that each stops
    its runs with a checkpoint (:class:`StopRequest`) rather than train on after this process is gone; a second one
    kills them at once. Yields the signals received (a worker gets Ctrl-C's SIGINT from the terminal as well).
    """
    received: list[int] = []
    if threading.current_thread() is not threading.main_thread():  # signal handlers belong to the main thread
        yield received
        return

    def handle(signum: int, frame: Any) -> None:
        received.append(signum)
        workers = mp.active_children()
        if len(received) > 1:
            for worker in workers:
                worker.kill()
            raise KeyboardInterrupt
        display.note(
            f"{signal.Signals(signum).name}: each run stops at its next step, training with a checkpoint (the same "
            "command resumes it); send it again to stop at once, losing what was done since the last checkpoint"
        )
        for worker in workers:
            if worker.pid is not None:  # started
                os.kill(worker.pid, signal.SIGTERM)

    previous = {signum: signal.signal(signum, handle) for signum in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield received
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _report_outcome(future: Future, group: list[RunSpec], display: ProgressDisplay, failed: list[RunSpec]) -> None:
    if future.cancelled():
        display.note(f"{', '.join(spec.name for spec in group)}: not started (stopped by a signal)")
        return
    error = future.exception()
    if error is None:
        for spec, result in zip(group, future.result()):
            display.run_finished(spec, _summary(result))
        return
    if isinstance(error, TimeLimitReached):
        display.note(f"{', '.join(spec.name for spec in group)}: {error}")
        return
    for spec in group:
        failed.append(spec)
        display.run_finished(spec, f"FAILED ({type(error).__name__}: {error}); see error.txt in its folder")


def _ray_task(spec_data: dict[str, Any], options: ExecutionOptions) -> dict[str, bytes]:
    """On a Ray node: run into a scratch folder and send back the run folder's files."""
    spec = RunSpec.from_json(spec_data)
    scratch = tempfile.mkdtemp(prefix="sb3_maxdiff_run_")
    try:
        try:
            execute_group([spec], scratch, None, options)
        except Exception:
            _record_failure(scratch, spec, traceback.format_exc())
        run_dir = os.path.join(scratch, spec.relpath)
        return {name: open(os.path.join(run_dir, name), "rb").read() for name in sorted(os.listdir(run_dir))}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def run_ray(
    specs: list[RunSpec],
    out: str,
    address: str,
    options: ExecutionOptions | None = None,
    gpus_per_run: float | None = None,
) -> list[RunSpec]:
    """
    Send ``specs`` to the Ray cluster at ``address`` (``"local"``: start a Ray instance on this machine),
    one task of ``options.threads`` CPUs per run, and write each run's files under ``out`` as it comes back.
    A run interrupted on a node starts again from scratch; finished runs are never run twice.

    :param gpus_per_run: GPUs each task asks Ray for (a fraction lets runs share a GPU). Default: 1 where the
        runs' device is CUDA, else 0. Ray hides the GPUs from a task that asks for none.
    """
    try:
        import ray
    except ImportError as error:
        raise ImportError("--ray-address needs Ray: pip install 'sb3-maxdiff[ray]'") from error

    if gpus_per_run is None:
        gpus_per_run = 1.0 if any(spec.device.startswith("cuda") for spec in specs) else 0.0
    ray.init(address=None if address == "local" else address, ignore_reinit_error=True, log_to_driver=False)
    cluster_gpus = ray.cluster_resources().get("GPU", 0.0)
    if gpus_per_run > cluster_gpus:
        raise ValueError(
            f"each run asks Ray for {gpus_per_run:g} GPU (device {specs[0].device}), but the cluster at {address} "
            f"has {cluster_gpus:g}; run on GPU nodes or with --device cpu"
        )
    options = options or ExecutionOptions()
    remote = ray.remote(num_cpus=options.threads, num_gpus=gpus_per_run)(_ray_task)
    refs = {remote.remote(spec.to_json(), options): spec for spec in specs}
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
    specs: list[RunSpec],
    out: str,
    jobs: int | None = None,
    options: ExecutionOptions | None = None,
    ray_address: str | None = None,
    batch_seeds: bool = False,
    gpus_per_run: float | None = None,
    batch_cells: bool = False,
) -> tuple[list[RunSpec], list[RunSpec]]:
    """
    Run the unfinished ``specs``; returns (those skipped as already finished, those that failed).

    :param options: how the runs execute (torch threads per run, CUDA graphs); not part of a run's spec, so a run
        started under some options may be resumed under others
    :param batch_seeds: train the seeds of each NN-MPPI / MaxDiff cell together in one process (local runs only)
    :param batch_cells: train the runs of all NN-MPPI / MaxDiff cells that can share one model together (local runs
        only; see :func:`~sb3_maxdiff.experiments.run.execution.group_runs`)
    :param gpus_per_run: GPUs each run asks Ray for (Ray runs only; see :func:`run_ray`)
    """
    skipped = [spec for spec in specs if is_finished(out, spec)]
    todo = [spec for spec in specs if not is_finished(out, spec)]
    if not todo:
        return skipped, []
    if ray_address is not None:
        if batch_seeds or batch_cells:
            raise ValueError("batch_seeds and batch_cells run locally; leave out ray_address (or the batching)")
        return skipped, run_ray(todo, out, ray_address, options, gpus_per_run)
    if gpus_per_run is not None:
        raise ValueError("gpus_per_run is a Ray resource request; give ray_address too (or leave gpus_per_run out)")
    options = options or ExecutionOptions()
    groups = group_runs(todo, batch_seeds, batch_cells)
    jobs = jobs or max(1, (os.cpu_count() or 1) // options.threads)
    return skipped, run_local(groups, out, min(jobs, len(groups)), options)
