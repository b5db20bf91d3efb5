"""Models with known answers for the planner tests."""

import contextlib
import importlib.util
import random
import runpy
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import gymnasium as gym
import numpy as np
import torch as th
from torch import nn

from sb3_maxdiff.common.utils import flush_denormal_enabled


class TruePointMassModel(nn.Module):
    """The point mass's exact RK4 dynamics and reward, with the planner's model interface."""

    def __init__(self, beta: float = 1.0, dt: float = 0.1):
        super().__init__()
        self.beta, self.dt = beta, dt

    def _derivative(self, state: th.Tensor, action: th.Tensor) -> th.Tensor:
        return th.stack([self.beta * state[:, 2], state[:, 3], action[:, 0], action[:, 1]], dim=1)

    def forward(self, state: th.Tensor, action: th.Tensor) -> tuple[th.Tensor, th.Tensor]:
        action = action.clamp(-1.0, 1.0)  # the environment clips executed actions
        k1 = self._derivative(state, action)
        k2 = self._derivative(state + 0.5 * self.dt * k1, action)
        k3 = self._derivative(state + 0.5 * self.dt * k2, action)
        k4 = self._derivative(state + self.dt * k3, action)
        next_state = state + self.dt / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)
        return next_state, -(next_state[:, 0] ** 2 + next_state[:, 1] ** 2)


class TargetActionModel(nn.Module):
    """Static state; reward -||a - target||^2, so the optimal action is ``target``."""

    def __init__(self, target: th.Tensor):
        super().__init__()
        self.target = target

    def forward(self, state: th.Tensor, action: th.Tensor) -> tuple[th.Tensor, th.Tensor]:
        return state, -((action - self.target) ** 2).sum(dim=-1)


def cpu_platform() -> str:
    """
    The kind of host as far as float rounding goes: torch's minor version, the CPU capability its kernels use and
    whether the CPU is of the AMX generation (Intel's from Sapphire Rapids on round some float32 kernels differently
    from older ones), e.g. ``"torch2.13-AVX512"`` or ``"torch2.13-AVX512-AMX"``. That generation is told by
    ``amx_tile`` or, where a virtual machine hides the AMX flags, by ``avx512_fp16``, which only it has: an Emerald
    Rapids VM that shows no AMX flag rounds as the AMX hosts.
    """
    version = ".".join(th.__version__.split("+")[0].split(".")[:2])
    try:
        with open("/proc/cpuinfo") as file:
            flags = next((set(line.split(":", 1)[1].split()) for line in file if line.startswith("flags")), set())
    except OSError:
        flags = set()
    amx = bool(flags & {"amx_tile", "avx512_fp16"})
    return f"torch{version}-{th.backends.cpu.get_cpu_capability()}{'-AMX' if amx else ''}"


# where the bit-exact references of tests/data were recorded
RECORDING_PLATFORM = "torch2.13-AVX512"


def on_recording_platform() -> bool:
    """Whether torch rounds as where the bit-exact references were recorded (CPU kernels of PyTorch 2.13, AVX512, no AMX)."""
    return cpu_platform() == RECORDING_PLATFORM


# the smallest planner and networks that still exercise every code path: for tests that train a few steps
TINY: dict[str, Any] = dict(horizon=5, n_samples=16, learning_starts=20, batch_size=16, policy_kwargs=dict(net_arch=[16, 16]))


# the limit on a test's child process: a guard against a hung process, not a check of speed, so generous enough that
# a machine busy with other work still passes
SUBPROCESS_TIMEOUT = 1800


@contextlib.contextmanager
def process_state_kept(argv: list[str] | None = None, path_first: str | None = None) -> Iterator[None]:
    """
    Run a command's ``main`` in this process as if in its own: ``sys.argv`` set to ``argv`` (where given) and
    ``path_first`` put first on ``sys.path``, then these, the torch thread count, the flushing of denormals and the
    global random states it may set are put back, so that the tests that follow in this process see no change.
    """
    saved_argv, saved_path = sys.argv, list(sys.path)
    threads, flushing = th.get_num_threads(), flush_denormal_enabled()
    states = th.get_rng_state(), np.random.get_state(), random.getstate()
    if argv is not None:
        sys.argv = argv
    if path_first is not None:
        sys.path[:0] = [path_first]
    try:
        yield
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path
        th.set_num_threads(threads)
        th.set_flush_denormal(flushing)
        th.set_rng_state(states[0])
        np.random.set_state(states[1])
        random.setstate(states[2])


@contextlib.contextmanager
def registered_episodes_of(steps: int, *env_ids: str) -> Iterator[None]:
    """
    ``gym.make`` of these registered ids cuts their episodes at ``steps`` steps (their registered time limit set to
    it), then as registered: for tests that evaluate whole episodes where the episode's length is not the point.
    """
    specs = [gym.registry[env_id] for env_id in env_ids]
    saved = [spec.max_episode_steps for spec in specs]
    for spec in specs:
        spec.max_episode_steps = steps
    try:
        yield
    finally:
        for spec, limit in zip(specs, saved):
            spec.max_episode_steps = limit


def run_script(path: Path, args: list[str]) -> dict:
    """
    Run a script of this repository in this process, as ``python path *args`` runs it (its ``__main__`` block, its
    folder first on ``sys.path``), without a new interpreter's imports, and with the process's state kept (see
    :func:`process_state_kept`). What it prints goes to pytest's capture; a ``SystemExit`` with a non-zero code
    propagates. Returns the script's globals as it ended (empty where it exited with status 0 before its end).
    """
    with process_state_kept([str(path), *args], str(Path(path).parent)):
        try:
            return runpy.run_path(str(path), run_name="__main__")
        except SystemExit as exit_info:
            if exit_info.code not in (None, 0):
                raise
            return {}


def load_tool(name: str) -> ModuleType:
    """The module of ``tools/<name>.py`` (the tools are scripts, not a package)."""
    spec = importlib.util.spec_from_file_location(name, Path(__file__).resolve().parents[1] / "tools" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
