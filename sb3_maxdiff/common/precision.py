"""
Whether planning in bfloat16 pays off on this machine, for ``planner_dtype="auto"``: only where the device multiplies
bfloat16 in hardware (a CUDA GPU that supports it; a CPU with AVX512_BF16 or AMX), and only where a few plans of the
model itself run faster in bfloat16 than in float32. Elsewhere bfloat16 is emulated and several times slower.
"""

import dataclasses
import time

import torch as th
from torch import nn

from sb3_maxdiff.common.mppi import PLANNER_DTYPES, MPPIPlanner
from sb3_maxdiff.common.utils import flushing_denormals

AUTO = "auto"
PLANNER_DTYPE_CHOICES = (*PLANNER_DTYPES, AUTO)
# the CPU flags (Linux /proc/cpuinfo) of instructions that multiply bfloat16 natively
BFLOAT16_CPU_FLAGS = frozenset({"avx512_bf16", "amx_bf16"})
# bfloat16 is chosen only where its plans take less than this fraction of float32's (timings vary by a few percent)
SPEED_MARGIN = 0.9


def cpu_flags() -> frozenset[str]:
    """The instruction-set flags of this machine's CPU (empty where ``/proc/cpuinfo`` cannot be read)."""
    try:
        with open("/proc/cpuinfo") as file:
            for line in file:
                if line.startswith("flags"):
                    return frozenset(line.split(":", 1)[1].split())
    except OSError:
        pass
    return frozenset()


def has_native_bfloat16(device: th.device) -> bool:
    """Whether ``device`` multiplies bfloat16 in hardware."""
    if device.type == "cuda":
        return th.cuda.is_bf16_supported()
    return device.type == "cpu" and bool(cpu_flags() & BFLOAT16_CPU_FLAGS)


def time_planner_dtypes(planner: MPPIPlanner, model: nn.Module, obs_dim: int, n_rows: int, calls: int = 5) -> dict[str, float]:
    """
    Seconds of a plan of ``model`` in float32 and in bfloat16: after one warm-up plan each, ``calls`` plans of each
    in turn, the fastest of each kept (the one least disturbed by other work on the machine). The plans start from
    zero observations and draw their noise from a private generator, so that torch's global stream is left as it was.

    :param planner: the planner to time (its settings but the dtype are kept)
    :param model: the dynamics and reward model it plans with
    :param obs_dim: the size of an observation
    :param n_rows: environments planned at once (one per agent for independent agents)
    :param calls: timed plans per dtype
    """
    device = next(model.parameters()).device
    obs = th.zeros(n_rows, obs_dim, device=device)
    nominal = planner.initial_nominal(n_rows, device)
    generator = th.Generator(device=device)
    generator.manual_seed(0)
    trials = {
        dtype: MPPIPlanner(planner.action_dim, dataclasses.replace(planner.settings, dtype=dtype), planner.entropy_bonus)
        for dtype in PLANNER_DTYPES
    }

    def seconds_of_one(trial: MPPIPlanner) -> float:
        start = time.perf_counter()
        trial.plan(model, obs, nominal, generator=generator)
        if device.type == "cuda":
            th.cuda.synchronize(device)
        return time.perf_counter() - start

    seconds = {dtype: float("inf") for dtype in trials}
    with flushing_denormals():  # as training plans run: denormal floats would slow float32 alone
        for trial in trials.values():
            seconds_of_one(trial)
        for _ in range(calls):
            for dtype, trial in trials.items():
                seconds[dtype] = min(seconds[dtype], seconds_of_one(trial))
    return seconds


def choose_planner_dtype(planner: MPPIPlanner, model: nn.Module, obs_dim: int, n_rows: int) -> tuple[str, dict[str, float]]:
    """
    ``"bfloat16"`` where the device has it in hardware and a plan of ``model`` takes less than :data:`SPEED_MARGIN`
    of float32's, else ``"float32"``; with the timings it was chosen on (empty where there was no need to time).
    """
    device = next(model.parameters()).device
    if not has_native_bfloat16(device):
        return "float32", {}
    seconds = time_planner_dtypes(planner, model, obs_dim, n_rows)
    faster = seconds["bfloat16"] < SPEED_MARGIN * seconds["float32"]
    return ("bfloat16" if faster else "float32"), seconds
