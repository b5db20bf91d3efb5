"""
The GPU measurements BENCHMARKS.md still waits for, in one call, for a GPU lent for a few minutes: first the tests
that need CUDA, then the runner's end-to-end cost per agent-step of one mixed batch of 20 heavy-tail Swimmers (10
MaxDiff + 10 NN-MPPI, CUDA graphs) with the model updates made while the environments step, one after the other in
the calling thread (measured on 2026-11-28 only with 16 environment threads, the slowest setting on that host),
against the plain batch in the same call, then where a graphed training step of 20 agents spends its time (kernel
launches, host copies, host and GPU milliseconds of the planner and of the updates, and the kernels that take the
GPU's time; and the GPU time of the planner's rollout and of its path entropy, each alone), then the end-to-end cost
of a batch of 20 MaxDiff agents with every speed option of the package at once (the planner in bfloat16, whose
learning the ``swimmer-bfloat16`` runs checked on the CPU, and the updates overlapped), then the same end-to-end run
and profile with cuBLAS allowed to multiply float32 matrices in TF32 on the tensor cores
(``TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1``: a measure of how much of the step is float32 multiplies, not an option of
the package; its effect on learning is unvalidated), then the host's replay draw for 20 agents (the CPU of the GPU
machine, before and after the flat index), then the training cost per agent-step of 20 single-shot Ants in one mixed
batch (whether the paper's single-shot Ant, too slow for a CPU, fits a GPU), then the whole test suite on a machine
where a model's default device is CUDA (two tests that assumed the CPU were found so). Steps run in that order, each
in its own process, its output in ``<out>/<step>.log`` (and ``.json`` where the benchmark writes one); a step starts
only if its expected time fits in what is left of ``--seconds``, so a lease ends with the most important figures
rather than with a killed run.

    python benchmarks/gpu_suite.py --out gpu_results --seconds 540
    python benchmarks/gpu_suite.py --list                       # the steps and their commands, nothing run

Prints one line per step (exit status, seconds) and writes ``<out>/summary.json``.
"""

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "benchmarks"
CUDA_TESTS = [
    "tests/algorithms/test_cuda_graphs.py",
    "tests/algorithms/test_overlap_updates.py",
    "tests/algorithms/test_run.py::test_cuda_run",
    "tests/algorithms/test_save_load.py",
    "tests/algorithms/test_independent_agents.py",
]
MIXED_20 = ["--device", "cuda", "--cuda-graph", "--seeds", "10", "--steps", "1000", "--configurations", "mixed", "--quiet"]
# 20 MaxDiff agents planning in bfloat16 (the swimmer-bfloat16 preset) in one batch: the package's options together
BF16_20 = ["--preset", "swimmer-bfloat16", "--methods", "maxdiff", "--device", "cuda", "--cuda-graph", "--seeds", "20"]
BF16_20 += ["--steps", "1000", "--configurations", "mixed", "--quiet"]
# 10 MaxDiff + 10 NN-MPPI single-shot Ants in one batch: what the paper's one unrun comparison (about 100k steps per
# run, about 28 hours of one CPU core each) would cost on this GPU
ANT_20 = ["--preset", "ant-halfcheetah", "--setting", "ant single-shot", "--methods", "maxdiff", "nnmppi"]
ANT_20 += ["--device", "cuda", "--cuda-graph", "--seeds", "10", "--steps", "300", "--configurations", "mixed", "--quiet"]


class Step(NamedTuple):
    """
    One measurement: its name (log and JSON file stem), its command after the interpreter, its expected seconds,
    whether it writes JSON, and environment variables set for it alone (name, value pairs).
    """

    name: str
    args: list[str]
    expected_seconds: float
    json: bool = True
    env: tuple[tuple[str, str], ...] = ()


TF32 = (("TORCH_ALLOW_TF32_CUBLAS_OVERRIDE", "1"),)


def steps() -> list[Step]:
    """The measurements, most wanted first (expected times from the H200 runs of 2026-11-27 and 28, start-up included)."""
    e2e = str(BENCHMARKS / "runner_end_to_end.py")
    profile = [str(BENCHMARKS / "profile_step.py"), "--device", "cuda", "--calls", "5", "--tables"]
    return [
        Step("cuda_tests", ["-m", "pytest", "-q", "-n", "8", "-p", "no:cacheprovider", *CUDA_TESTS], 60.0, json=False),
        Step("e2e_overlap", [e2e, *MIXED_20, "--env-threads", "1", "--overlap-updates"], 100.0),
        Step("e2e_plain", [e2e, *MIXED_20, "--env-threads", "1"], 100.0),
        Step("profile_n20", [*profile, "--cases", "20:graph", "--plan-parts"], 60.0),
        Step("e2e_bf16_overlap", [e2e, *BF16_20, "--env-threads", "1", "--overlap-updates"], 100.0),
        Step("e2e_plain_tf32", [e2e, *MIXED_20, "--env-threads", "1"], 100.0, env=TF32),
        Step("profile_n20_tf32", [*profile, "--cases", "20:graph", "--plan-parts"], 60.0, env=TF32),
        Step("replay_draw", [str(BENCHMARKS / "replay_draw.py"), "--learn-steps", "0"], 30.0, json=False),
        Step("ant_single_shot", [e2e, *ANT_20], 120.0),
        Step("all_tests", ["-m", "pytest", "-q", "-n", "8", "-p", "no:cacheprovider", "tests"], 240.0, json=False),
    ]


def command(step: Step, out: Path) -> list[str]:
    """The step's full command line; benchmarks that write JSON write it to ``<out>/<name>.json``."""
    return [sys.executable, *step.args, *(["--json", str(out / f"{step.name}.json")] if step.json else [])]


def run_steps(plan: list[Step], out: Path, seconds: float) -> list[dict]:
    """Run ``plan`` in order within ``seconds``; a step that might not end in time is skipped (and said so)."""
    out.mkdir(parents=True, exist_ok=True)
    deadline, rows = time.monotonic() + seconds, []
    for step in plan:
        left = deadline - time.monotonic()
        if step.expected_seconds > left:
            rows.append({"step": step.name, "status": "skipped", "seconds": 0.0, "left_seconds": round(left, 1)})
            print(f"{step.name}: skipped ({step.expected_seconds:.0f} s expected, {left:.0f} s left)", flush=True)
            continue
        start = time.monotonic()
        with open(out / f"{step.name}.log", "w") as log:
            status: int | str
            try:
                done = subprocess.run(
                    command(step, out),
                    cwd=ROOT,
                    env={**os.environ, **dict(step.env)},
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    timeout=left,
                )
                status = done.returncode
            except subprocess.TimeoutExpired:
                status = "timed out"
        rows.append({"step": step.name, "status": status, "seconds": round(time.monotonic() - start, 1)})
        print(f"{step.name}: exit {status} in {rows[-1]['seconds']:.0f} s", flush=True)
    with open(out / "summary.json", "w") as file:
        json.dump({"steps": rows, "python": sys.executable, "cwd": os.getcwd()}, file, indent=1)
    return rows


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="gpu_results", help="folder for the logs, JSON files and summary.json")
    parser.add_argument("--seconds", type=float, default=540.0, help="time for all the steps together")
    parser.add_argument("--only", nargs="+", default=None, help="run only these steps (names from --list)")
    parser.add_argument("--list", action="store_true", help="print the steps and their commands, and stop")
    args = parser.parse_args(argv)
    out, plan = Path(args.out), steps()
    names = [step.name for step in plan]
    if args.only is not None:
        unknown = sorted(set(args.only) - set(names))
        if unknown:
            parser.error(f"--only: unknown steps {unknown}; the steps are {names}")
        plan = [step for step in plan if step.name in args.only]
    if args.list:
        for step in plan:
            settings = "".join(f"{name}={value} " for name, value in step.env)
            print(f"{step.name} (~{step.expected_seconds:.0f} s): {settings}{' '.join(command(step, out))}")
        return []
    return run_steps(plan, out, args.seconds)


if __name__ == "__main__":
    main()
