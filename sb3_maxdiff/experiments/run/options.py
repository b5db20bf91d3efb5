"""
How runs execute, apart from what they compute: torch threads, CUDA graphs, batched evaluation, and the time
limit by which a run stops with a checkpoint (:class:`Deadline`, :class:`TimeLimitReached`), or the signal that
stops it the same way (:class:`StopRequest`). None of it is part of a run's identity, so a run may resume under
other options.
"""

import contextlib
import dataclasses
import math
import signal
import time
from collections.abc import Iterator
from typing import Any

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
    :param env_threads: threads that step the environments of a batch (training and batched evaluation); 1: one
        after the other. The same results either way: each environment steps on its own state and generator
    :param overlap_updates: NN-MPPI and MaxDiff make each step's model updates before the environments step (on a
        GPU, while the host steps them); the same results (see the models' ``overlap_updates``)
    """

    threads: int = 1
    cuda_graph: bool = False
    deadline: float | None = None
    batch_eval: bool = False
    env_threads: int = 1
    overlap_updates: bool = False

    def model_kwargs(self, algo: type) -> dict[str, Any]:
        """
        Keyword arguments for ``algo``'s constructor and ``load`` (where they override what the saved model
        had): ``cuda_graph`` and ``overlap_updates`` for the model-based methods (SAC has no planner to capture).
        """
        return {"cuda_graph": self.cuda_graph, "overlap_updates": self.overlap_updates} if issubclass(algo, NNMPPI) else {}


# the exit status of a command whose training stopped before its time limit or on a signal, checkpointed
EXIT_TIME_LIMIT = 3


class TimeLimitReached(Exception):
    """A run stopped before the time limit, or on a signal, its training checkpointed: the same command resumes it."""


class StopRequest:
    """
    A stop asked for from outside the process (SIGTERM, as ``kill``, ``timeout`` or a cluster's scheduler send, or
    Ctrl-C's SIGINT): each run of the process then stops as at its time limit, training with a checkpoint at its next
    step and an evaluation (not checkpointed) at its next step, and the same command resumes them. Training stopped in
    the middle of an episode resumes on random draws of its own (``resumes.json`` says ``"exact": false``).
    """

    signal_name: str | None = None  # the first signal received, once one has been

    @classmethod
    def handle(cls, signum: int, frame: Any = None) -> None:
        """Signal handler: note the stop (a repeated signal changes nothing)."""
        if cls.signal_name is None:
            cls.signal_name = signal.Signals(signum).name

    @classmethod
    def install(cls) -> None:
        """Stop on SIGTERM and SIGINT rather than die (in a worker process's main thread)."""
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, cls.handle)

    @classmethod
    @contextlib.contextmanager
    def installed(cls) -> Iterator[None]:
        """
        Within it, SIGTERM and SIGINT stop the runs of this process as :meth:`install` says; the handlers before it
        and "no stop asked for" come back after it (a command run in the main thread of a longer-lived process).
        """
        previous = {signum: signal.signal(signum, cls.handle) for signum in (signal.SIGTERM, signal.SIGINT)}
        try:
            yield
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)
            cls.signal_name = None

    @classmethod
    def raise_if_asked(cls, where: str) -> None:
        """Raise :class:`TimeLimitReached` if a stop was asked for, saying ``where`` (e.g. "during the evaluation of x")."""
        if cls.signal_name is not None:
            raise TimeLimitReached(f"stopped on {cls.signal_name} {where}; the same command resumes it")


class Deadline:
    """
    When to stop before a time limit. Training stops at the end of an episode if the next one might not end before
    the limit (the longest stretch between two episode ends seen so far, times 1.5, plus twice the time a checkpoint
    took to write), and at any step once only the time to write a checkpoint is left. A run starts training only with
    a minute or more left: one started later would build its model and stop with a checkpoint a step or two on.

    :param at: the limit, as ``time.time()``; None: never stop
    """

    MARGIN_SECONDS = 10.0
    START_SECONDS = 60.0  # a run starts training only with this much left (building it and a checkpoint take seconds)

    def __init__(self, at: float | None):
        self.at = at
        self.longest_gap = 0.0
        self.save_seconds = 0.0
        self.last_end = time.time()

    @property
    def active(self) -> bool:
        """Whether training must watch for a stop: a limit is set, or a signal asked for a stop."""
        return self.at is not None or StopRequest.signal_name is not None

    def left(self) -> float:
        """Seconds left before the limit (none once a signal asked for a stop)."""
        if StopRequest.signal_name is not None:
            return -math.inf
        return math.inf if self.at is None else self.at - time.time()

    def reason(self) -> str:
        """Why training stopped: the limit, or the signal."""
        return "stopped before the time limit" if StopRequest.signal_name is None else f"stopped on {StopRequest.signal_name}"

    def episode_ended(self) -> bool:
        """Note an episode end; whether training should stop here."""
        now = time.time()
        self.longest_gap, self.last_end = max(self.longest_gap, now - self.last_end), now
        return self.left() < 1.5 * self.longest_gap + self.reserve()

    def reserve(self) -> float:
        """Time kept to write a checkpoint."""
        return 2.0 * self.save_seconds + self.MARGIN_SECONDS

    def check_start(self, what: str) -> None:
        """Raise :class:`TimeLimitReached` unless there is time to start ``what`` and get something done before the limit."""
        self._require(self.START_SECONDS, what, f"less than {self.START_SECONDS:.0f} s left to start {what}")

    def check(self, needed: float, what: str) -> None:
        """Raise :class:`TimeLimitReached` unless ``needed`` seconds are left for ``what``."""
        self._require(needed, what, f"{what} ({needed:.0f} s) would not end before it")

    def _require(self, needed: float, what: str, shortfall: str) -> None:
        """Raise on a signal's stop request, or with ``shortfall`` unless ``needed`` seconds and the margin are left."""
        StopRequest.raise_if_asked(f"before {what}")
        if self.left() < needed + self.MARGIN_SECONDS:
            raise TimeLimitReached(f"stopped before the time limit: {shortfall}")


class EvaluationClock:
    """
    Stops an evaluation before a time limit. An evaluation is not checkpointed (one stopped starts again from its
    first step), so it stops as soon as it is known not to end in time: at any step once only the margin is left, and
    once its rate so far says its remaining steps would not end before the limit. The rate is measured from its
    second step on (the first builds the planner and, on a GPU, its CUDA graphs) and used after ``PROJECTION_SECONDS``.

    :param deadline: the limit
    :param what: the evaluation, for the messages ("the batched evaluation")
    :param most_steps: at most how many steps the evaluation takes (episodes times the episode limit); None: unknown,
        and only the margin is watched
    """

    PROJECTION_SECONDS = 15.0
    AGAIN = "the models are saved, and the same command with a longer limit evaluates them"

    def __init__(self, deadline: Deadline, what: str, most_steps: int | None):
        self.deadline, self.what, self.most_steps = deadline, what, most_steps
        self.done = 0
        self.first_step_end = 0.0

    def step(self) -> None:
        """Note a step of the evaluation; raise :class:`TimeLimitReached` if it should stop here."""
        StopRequest.raise_if_asked(f"during {self.what}")
        self.done += 1
        if self.deadline.at is None:
            return
        now = time.time()
        if self.done == 1:
            self.first_step_end = now
        left = self.deadline.at - now
        if left < Deadline.MARGIN_SECONDS:
            raise TimeLimitReached(f"stopped before the time limit {self.done} steps into {self.what}: {self.AGAIN}")
        measured = now - self.first_step_end
        if self.most_steps is None or measured < self.PROJECTION_SECONDS:
            return
        needed = measured / (self.done - 1) * (self.most_steps - self.done)
        if needed + Deadline.MARGIN_SECONDS > left:
            raise TimeLimitReached(
                f"stopped before the time limit: {self.what} would need about {needed:.0f} s more ({self.done} of at most "
                f"{self.most_steps} steps done, {left:.0f} s left) and is not checkpointed: {self.AGAIN}"
            )
