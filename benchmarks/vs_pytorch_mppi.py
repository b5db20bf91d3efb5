"""
Control steps per second of :class:`~sb3_maxdiff.synthesis.MPPIController` against pytorch_mppi's ``MPPI`` on the
same known system, number of samples and horizon.

pytorch_mppi is not a dependency of this package; install it for this benchmark only::

    pip install pytorch_mppi==0.9.1
    python benchmarks/vs_pytorch_mppi.py --samples 500 1000 --horizons 20 40

Both controllers plan the differential drive (state x, y, heading; action speed, turn rate in [-1, 1]) in the
quadratic potential, from (-4, -2), with the running cost taken on the state each action leads to, noise std 0.3
and temperature 0.5. Each round times ``--calls`` consecutive ``command`` calls of each controller in turn, after
warm-up calls, so that both see the same machine load; the table gives the median over rounds and the ratio of
the medians. Ours runs plain MPPI (alpha 0) and MaxDiff (alpha 10, the path entropy over x, y). On the CPU the
time is the process's CPU time (``time.process_time``; with one torch thread, the work of the call itself, not the
time another process held the core), on a GPU the wall-clock time.
"""

import argparse
import statistics
import time

import torch as th

from sb3_maxdiff.synthesis import MPPIController
from sb3_maxdiff.synthesis.systems import DifferentialDrive, quadratic_potential

NOISE_STD, TEMPERATURE, START = 0.3, 0.5, (-4.0, -2.0, 0.0)


def ours(samples: int, horizon: int, alpha: float, device: str) -> MPPIController:
    system = DifferentialDrive()
    return MPPIController(
        system,
        running_cost=quadratic_potential(),
        state_dim=3,
        action_dim=2,
        horizon=horizon,
        n_samples=samples,
        temperature=TEMPERATURE,
        noise_std=NOISE_STD,
        alpha=alpha,
        explr_dims=[0, 1] if alpha > 0 else None,
        low=[-1.0, -1.0],
        high=[1.0, 1.0],
        device=device,
    )


def theirs(samples: int, horizon: int, device: str):
    from pytorch_mppi import MPPI

    system, potential = DifferentialDrive(), quadratic_potential()
    return MPPI(
        system,
        lambda state, action: potential(state, action),
        3,
        noise_sigma=th.eye(2, device=device) * NOISE_STD**2,
        num_samples=samples,
        horizon=horizon,
        lambda_=TEMPERATURE,
        u_min=-th.ones(2, device=device),
        u_max=th.ones(2, device=device),
        device=device,
    )


def time_calls(controller, calls: int, device: str) -> float:
    """Seconds per ``command`` call over ``calls`` calls, the state advanced by the true dynamics as in control."""
    system, state = DifferentialDrive(), th.tensor(START, device=device)
    clock = time.perf_counter if device.startswith("cuda") else time.process_time
    start = clock()
    for _ in range(calls):
        action = controller.command(state)
        state = system(state[None], action.reshape(1, 2).to(state))[0]
    if device.startswith("cuda"):
        th.cuda.synchronize()
    return (clock() - start) / calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=int, nargs="+", default=[500, 1000])
    parser.add_argument("--horizons", type=int, nargs="+", default=[20, 40])
    parser.add_argument("--calls", type=int, default=50, help="command calls per controller per round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--ours-only", action="store_true", help="time this package's controllers alone")
    args = parser.parse_args()
    th.set_num_threads(args.threads)
    th.manual_seed(0)
    print(f"torch {th.__version__}, {args.threads} thread(s), device {args.device}")
    print("| K samples | H horizon | pytorch_mppi ms | ours, alpha 0, ms | speed-up | ours, alpha 10, ms | speed-up |")
    print("|---|---|---|---|---|---|---|")
    for samples in args.samples:
        for horizon in args.horizons:
            controllers = {
                "plain": ours(samples, horizon, 0.0, args.device),
                "maxdiff": ours(samples, horizon, 10.0, args.device),
            }
            if not args.ours_only:
                controllers["theirs"] = theirs(samples, horizon, args.device)
            times: dict[str, list[float]] = {name: [] for name in controllers}
            for controller in controllers.values():
                time_calls(controller, args.warmup, args.device)
            for _ in range(args.rounds):
                for name, controller in controllers.items():
                    times[name].append(time_calls(controller, args.calls, args.device))
            ms = {name: 1e3 * statistics.median(seconds) for name, seconds in times.items()}
            theirs_ms = ms.get("theirs", float("nan"))
            print(
                f"| {samples} | {horizon} | {theirs_ms:.2f} | {ms['plain']:.2f} | {theirs_ms / ms['plain']:.2f}x | "
                f"{ms['maxdiff']:.2f} | {theirs_ms / ms['maxdiff']:.2f}x |"
            )


if __name__ == "__main__":
    main()
