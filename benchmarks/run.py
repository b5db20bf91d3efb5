"""
Planner and training throughput at the paper's configurations, against the
straightforward baseline of ``benchmarks/baseline.py`` timed in the same process::

    python benchmarks/run.py                       # all four configurations, 2 threads, CPU
    python benchmarks/run.py --configs swimmer --calls 50 --json swimmer.json
    python benchmarks/run.py --device cuda         # GPU timings and the projected 1M-step time

Every figure is the median of ``--calls`` timed calls after two warm-up calls. Printed tables:

1. per configuration: planner call (ours, float32), the GEMM floor of that call (the same matrix
   multiplies timed alone), the bfloat16 planner, 5 model updates and the whole training step
   (plan + 5 updates) with the replay buffer filled to 10k and to 1M, and the baseline's plan,
   updates and whole step at the same fills;
2. planner time against K * H and against the number of parallel environments (Swimmer).

Seed-batched training (N independent agents in one model against N single-agent models) is timed by
``benchmarks/agents.py``, which reuses this file's configurations and timing helpers.
"""

import argparse
import json
import platform
import statistics
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from functools import partial
from typing import Any

import numpy as np
import torch as th
from baseline import BaselineModel, BaselinePlanner, PermutationReplay, baseline_update
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.logger import configure

import sb3_maxdiff  # noqa: F401  (registers the environments)
from sb3_maxdiff import MaxDiffMPPI
from sb3_maxdiff.common.entropy import EntropyBonus, make_path_entropy
from sb3_maxdiff.common.fused_rollout import _pad_columns
from sb3_maxdiff.common.models import DynamicsRewardModel
from sb3_maxdiff.common.mppi import MPPIPlanner, PlannerSettings
from sb3_maxdiff.common.vec_env import ThreadedVecEnv


@dataclass
class Config:
    """One column of the paper's hyperparameter table (MaxDiff, the heavier of the two planners)."""

    env_id: str
    net_arch: list[int]
    horizon: int
    n_samples: int
    batch_size: int
    explr_dims: list[int] | None
    explr_weights: list[float]
    gradient_steps: int = 5
    kwargs: dict = field(default_factory=dict)


CONFIGS = {
    "point-mass": Config("sb3_maxdiff/PointMass-beta0_01-v0", [128, 128], 30, 500, 128, None, [1.0, 1.0, 0.01, 0.01]),
    "swimmer": Config("sb3_maxdiff/Swimmer-heavy-v0", [200, 200], 40, 500, 128, [0, 1, 5, 6], [1.0, 1.0, 0.05, 0.05]),
    "halfcheetah": Config("sb3_maxdiff/HalfCheetah-v0", [200, 200], 10, 500, 256, [0, 1, 9, 10], [1.0, 1.0, 0.05, 0.05]),
    "ant": Config("sb3_maxdiff/Ant-v0", [512, 512, 512], 20, 1000, 256, [0, 1, 2], [1.0, 1.0, 0.005]),
}


def median_ms(
    function: Callable[[], object], calls: int, device: str, max_seconds: float = float("inf"), warmup: int = 2
) -> tuple[float, int]:
    """Median wall time of ``function`` in ms over ``calls`` calls (fewer if ``max_seconds`` runs out), and the count."""

    def sync() -> None:
        if device.startswith("cuda"):
            th.cuda.synchronize()

    for _ in range(warmup):
        function()
    sync()
    times: list[float] = []
    budget_end = time.perf_counter() + max_seconds
    while len(times) < calls and (len(times) < min(calls, 3) or time.perf_counter() < budget_end):
        start = time.perf_counter()
        function()
        sync()
        times.append(1e3 * (time.perf_counter() - start))
    return statistics.median(times), len(times)


def fill_replay_buffer(model: MaxDiffMPPI, fill: int, rng: np.random.Generator) -> None:
    """Random transitions in the first ``fill`` rows (all rows when ``fill`` equals the buffer size)."""
    buffer = model.replay_buffer
    for name in ("observations", "next_observations", "actions", "next_actions", "rewards"):
        array = getattr(buffer, name)
        array[:fill] = rng.uniform(-1.0, 1.0, array[:fill].shape).astype(array.dtype)
    buffer.bootstrap_masks[:fill] = 1.0
    buffer.full = fill == buffer.buffer_size
    buffer.pos = fill % buffer.buffer_size


def make_algorithm(
    config: Config,
    device: str,
    buffer_size: int,
    planner_dtype: str = "float32",
    n_envs: int = 1,
    independent_agents: bool = False,
    cuda_graph: bool = False,
    env_threads: int = 1,
    **kwargs: Any,
) -> MaxDiffMPPI:
    """
    The algorithm at ``config``, ready to plan and train: observations reset, past ``learning_starts``; ``kwargs``:
    more of MaxDiffMPPI's arguments (``alpha``, ``control_cost``, one per agent for a mixed batch). ``env_threads``
    > 1: the environments step in that many threads (``ThreadedVecEnv``).
    """
    threaded: dict[str, Any] = (
        {"vec_env_cls": ThreadedVecEnv, "vec_env_kwargs": {"n_threads": env_threads}} if env_threads > 1 else {}
    )
    model = MaxDiffMPPI(
        make_vec_env(config.env_id, n_envs=n_envs, seed=0, **threaded),
        independent_agents=independent_agents,
        cuda_graph=cuda_graph,
        horizon=config.horizon,
        n_samples=config.n_samples,
        batch_size=config.batch_size,
        gradient_steps=config.gradient_steps,
        explr_dims=config.explr_dims,
        explr_weights=config.explr_weights,
        buffer_size=buffer_size,
        learning_starts=0,
        planner_dtype=planner_dtype,
        policy_kwargs=dict(net_arch=config.net_arch),
        device=device,
        seed=0,
        **kwargs,
    )
    model.set_logger(configure(None, [""]))
    model._last_obs = model.env.reset()  # type: ignore[union-attr,assignment]
    model._last_episode_starts = np.zeros(n_envs, dtype=bool)
    model.num_timesteps = 1_000 * n_envs  # past learning_starts, per agent
    return model


def gemm_floor(model: DynamicsRewardModel, horizon: int, n_samples: int, device: str, bias: bool) -> Callable[[], None]:
    """
    The matrix multiplies of one planner rollout (see ``rollout``) and nothing else, on preallocated
    inputs: with ``bias=True`` the ``addmm`` calls exactly as the rollout issues them (a multiply plus
    its bias), with ``bias=False`` bare ``mm`` into preallocated outputs.
    """
    obs_dim, action_dim = model.obs_dim, model.action_dim
    dynamics_layers, reward_layers = model.layer_params("dynamics"), model.layer_params("reward")
    first_t = th.cat([dynamics_layers[0][0], reward_layers[0][0]]).detach().t().contiguous()
    first_bias = th.cat([dynamics_layers[0][1], reward_layers[0][1]]).detach()
    dynamics = [(weight.detach().t().contiguous(), bias.detach()) for weight, bias in dynamics_layers[1:]]
    dynamics[-1] = _pad_columns(*dynamics[-1])  # as the rollout pads it
    reward = [(weight.detach().t().contiguous(), bias.detach()) for weight, bias in reward_layers[1:]]
    state = th.randn(n_samples, obs_dim, device=device)
    actions = th.randn(horizon * n_samples, action_dim, device=device)
    action_part = th.addmm(first_bias, actions, first_t[obs_dim:]).view(horizon, n_samples, -1)

    def layer_calls(step: int) -> list[tuple[th.Tensor, th.Tensor]]:
        return reward if step + 1 == horizon else reward + dynamics  # no dynamics at the last step

    inputs = {id(w): th.randn(n_samples, w.shape[0], device=device) for w, _ in reward + dynamics}
    outputs = {id(w): th.empty(n_samples, w.shape[1], device=device) for w, _ in reward + dynamics}
    first_out = th.empty(n_samples, first_t.shape[1], device=device)

    def with_bias() -> None:
        th.addmm(first_bias, actions, first_t[obs_dim:])
        for step in range(horizon):
            action_part[step].addmm_(state, first_t[:obs_dim])
            for weight_t, layer_bias in layer_calls(step):
                th.addmm(layer_bias, inputs[id(weight_t)], weight_t)

    def bare() -> None:
        th.mm(actions, first_t[obs_dim:], out=action_part.view(horizon * n_samples, -1))
        for step in range(horizon):
            th.mm(state, first_t[:obs_dim], out=first_out)
            for weight_t, _ in layer_calls(step):
                th.mm(inputs[id(weight_t)], weight_t, out=outputs[id(weight_t)])

    return with_bias if bias else bare


def interleaved_medians(functions: Mapping[str, Callable[[], object]], calls: int, device: str) -> dict[str, float]:
    """
    Median ms of each function, timed in rounds (one call of each per round), so that a slow spell of
    the machine hits all of them alike and their ratios stay fair.
    """
    times: dict[str, list[float]] = {name: [] for name in functions}
    for round_index in range(calls + 2):  # two warm-up rounds
        for name, function in functions.items():
            elapsed = median_ms(function, 1, device, warmup=0)[0] if round_index >= 2 else function()
            if round_index >= 2:
                times[name].append(elapsed)  # type: ignore[arg-type]
    return {name: statistics.median(values) for name, values in times.items()}


def baseline_parts(config: Config, obs_dim: int, action_dim: int, entropy: object) -> tuple:
    model = BaselineModel(obs_dim, action_dim, config.net_arch)
    optimizer = th.optim.Adam(model.parameters(), lr=3e-4, weight_decay=1e-4)
    planner = BaselinePlanner(config.horizon, config.n_samples, action_dim)
    obs = th.zeros(1, obs_dim)
    return model, optimizer, lambda: planner.plan(model, obs, entropy, 5.0)  # type: ignore[arg-type]


def measure_config(name: str, config: Config, args: argparse.Namespace) -> dict:
    rng = np.random.default_rng(0)
    row: dict = {"config": name, **asdict(config)}
    model = make_algorithm(config, args.device, args.buffer_size)
    obs_dim, action_dim = model.policy.model.obs_dim, model.policy.model.action_dim
    on_cpu = args.device == "cpu"
    baseline_model, optimizer, baseline_plan = baseline_parts(config, obs_dim, action_dim, model.policy.path_entropy)
    # the multiplies' floor, over one plain model of the same shapes (the policy's is a batch of one)
    single_model = DynamicsRewardModel(obs_dim, action_dim, config.net_arch).to(args.device)
    planner_calls: dict[str, Callable[[], object]] = {
        "plan_ms": lambda: model._sample_action(0),
        "gemm_floor_ms": gemm_floor(single_model, config.horizon, config.n_samples, args.device, bias=True),
        "mm_floor_ms": gemm_floor(single_model, config.horizon, config.n_samples, args.device, bias=False),
    }
    if on_cpu:
        planner_calls["baseline_plan_ms"] = baseline_plan
    row.update(interleaved_medians(planner_calls, args.calls, args.device))
    steps = config.gradient_steps
    for fill in args.fills:
        fill_replay_buffer(model, fill, rng)

        def step() -> None:
            model._sample_action(0)
            model.train(steps, config.batch_size)

        calls = {f"update_ms_{fill}": lambda: model.train(steps, config.batch_size), f"step_ms_{fill}": step}
        if on_cpu:
            replay = PermutationReplay(fill, obs_dim, action_dim, rng)

            def updates(replay: PermutationReplay = replay) -> None:
                for _ in range(steps):
                    baseline_update(baseline_model, optimizer, replay, config.batch_size)

            def baseline_step(updates: Callable[[], None] = updates) -> None:
                baseline_plan()
                updates()

            calls.update({f"baseline_update_ms_{fill}": updates, f"baseline_step_ms_{fill}": baseline_step})
        row.update(interleaved_medians(calls, args.calls, args.device))
    bf16 = make_algorithm(config, args.device, 1000, planner_dtype="bfloat16")
    row["plan_bf16_ms"], row["plan_bf16_calls"] = median_ms(
        lambda: bf16._sample_action(0), args.calls, args.device, args.bf16_seconds
    )
    return row


def measure_scaling(args: argparse.Namespace) -> list[dict]:
    """Planner call against K * H (one environment) and against the number of environments (K 500, H 40)."""
    config = CONFIGS["swimmer"]
    model = DynamicsRewardModel(10, 2, config.net_arch).to(args.device)
    rows = []
    grid = [(n_samples, horizon, 1) for n_samples in (125, 250, 500, 1000) for horizon in (10, 20, 40)]
    grid += [(500, 40, n_envs) for n_envs in (2, 4, 8)]
    entropy = make_path_entropy(10, min(horizon for _, horizon, _ in grid), config.explr_dims, config.explr_weights)
    for n_samples, horizon, n_envs in grid:
        bonus = EntropyBonus(entropy, alpha=5.0).to(args.device)
        settings = PlannerSettings(horizon, n_samples, temperature=0.1, noise_std=0.3, control_cost=False)
        planner = MPPIPlanner(2, settings, entropy_bonus=bonus)
        obs = th.randn(n_envs, 10, device=args.device)
        nominal = planner.initial_nominal(n_envs, args.device)
        ms, _ = median_ms(partial(planner.plan, model, obs, nominal, None), args.calls, args.device)
        rows.append({"n_samples": n_samples, "horizon": horizon, "n_envs": n_envs, "plan_ms": ms})
    return rows


def print_tables(rows: list[dict], scaling: list[dict], args: argparse.Namespace) -> None:
    low, high = args.fills
    print(f"\nmedian ms per call, {args.calls} calls, {th.get_num_threads()} threads, device {args.device}\n")
    header = (
        "| config | plan | GEMM floor | plan / floor | bare mm floor | plan bf16 | 5 updates 10k | 5 updates 1M "
        "| step 10k | step 1M | 1M / 10k |"
    )
    print(header.replace(" 10k", f" {low:,}").replace(" 1M", f" {high:,}"))
    print("|" + "---|" * (header.count("|") - 1))
    for row in rows:
        print(
            f"| {row['config']} | {row['plan_ms']:.2f} | {row['gemm_floor_ms']:.2f} | "
            f"{row['plan_ms'] / row['gemm_floor_ms']:.2f} | {row['mm_floor_ms']:.2f} | "
            f"{row['plan_bf16_ms']:.1f} (n={row['plan_bf16_calls']}) | "
            f"{row[f'update_ms_{low}']:.2f} | {row[f'update_ms_{high}']:.2f} | {row[f'step_ms_{low}']:.2f} | "
            f"{row[f'step_ms_{high}']:.2f} | {row[f'step_ms_{high}'] / row[f'step_ms_{low}']:.3f} |"
        )
    if "baseline_plan_ms" in rows[0]:
        print(
            f"\n| config | baseline plan | baseline 5 updates {low:,} | baseline 5 updates {high:,} "
            f"| baseline step {high:,} | ours step {high:,} | speed-up |"
        )
        print("|---|---|---|---|---|---|---|")
        for row in rows:
            print(
                f"| {row['config']} | {row['baseline_plan_ms']:.2f} | {row[f'baseline_update_ms_{low}']:.2f} | "
                f"{row[f'baseline_update_ms_{high}']:.2f} | {row[f'baseline_step_ms_{high}']:.2f} | "
                f"{row[f'step_ms_{high}']:.2f} | {row[f'baseline_step_ms_{high}'] / row[f'step_ms_{high}']:.2f}x |"
            )
    if scaling:
        base = next(r for r in scaling if (r["n_samples"], r["horizon"], r["n_envs"]) == (500, 40, 1))
        print("\n| K | H | envs | K * H * envs | plan ms | ms per 1000 K * H * envs | vs K 500, H 40, 1 env |")
        print("|---|---|---|---|---|---|---|")
        for r in scaling:
            work = r["n_samples"] * r["horizon"] * r["n_envs"]
            print(
                f"| {r['n_samples']} | {r['horizon']} | {r['n_envs']} | {work:,} | {r['plan_ms']:.2f} | "
                f"{1e3 * r['plan_ms'] / work:.3f} | {r['plan_ms'] / base['plan_ms']:.2f} (work x{work / 20000:.2f}) |"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--configs", nargs="+", default=list(CONFIGS), choices=list(CONFIGS))
    parser.add_argument("--calls", type=int, default=20, help="timed calls per figure (median)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--buffer-size", type=int, default=1_000_000)
    parser.add_argument("--fills", type=int, nargs=2, default=[10_000, 1_000_000], help="low and high replay fill")
    parser.add_argument("--bf16-seconds", type=float, default=60.0, help="time cap per bfloat16 figure (>= 3 calls)")
    parser.add_argument("--no-scaling", action="store_true", help="skip the K * H and environments table")
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()
    th.set_num_threads(args.threads)
    th.set_flush_denormal(True)  # as learn() does, for ours and the baseline alike
    th.manual_seed(0)
    print(
        f"{platform.processor() or platform.machine()}, torch {th.__version__}, CPU capability "
        f"{th.backends.cpu.get_cpu_capability()}, mkldnn bf16 {th.ops.mkldnn._is_mkldnn_bf16_supported()}"
    )
    if args.device.startswith("cuda"):
        print(th.cuda.get_device_name())
    rows = [measure_config(name, CONFIGS[name], args) for name in args.configs]
    scaling = [] if args.no_scaling else measure_scaling(args)
    print_tables(rows, scaling, args)
    if args.json:
        with open(args.json, "w") as file:
            json.dump({"threads": args.threads, "device": args.device, "configs": rows, "scaling": scaling}, file, indent=1)


if __name__ == "__main__":
    main()
