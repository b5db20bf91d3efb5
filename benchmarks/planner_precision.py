"""
Planning in bfloat16 against float32 with trained models: the same states and the same noise, then whole evaluation
episodes, then the cost of a training step (plan and model updates) in each.

    python benchmarks/planner_precision.py docs/reproduction/models/alpha_auto_heavy_50k_seed*.zip --episodes 1

For each model (a saved MaxDiff or NN-MPPI agent):

1. *Same states, same noise.* One evaluation episode in float32 gives the states; at every ``--stride``-th of them
   both dtypes plan once from the same warm start with the same noise (a generator seeded alike): the first actions'
   difference (mean and max over the states of the largest absolute difference over action dims; actions are in
   [-1, 1]).
2. *Evaluation returns*: ``--episodes`` episodes in each dtype, from the same environment and torch seeds (0, 1, ...;
   the first float32 one is the episode of item 1).
3. *Training step* (``--step-calls`` > 0): one plan plus ``gradient_steps`` model updates on a replay buffer filled
   with the episode's transitions, both dtypes timed in turn (the process's CPU time on a CPU); the updates are float32
   in both, so only the plan differs.
"""

import argparse
import itertools
import statistics
import time
from typing import cast

import gymnasium as gym
import numpy as np
import torch as th
from stable_baselines3.common.logger import configure
from stable_baselines3.common.preprocessing import get_action_dim, get_obs_shape
from stable_baselines3.common.vec_env import DummyVecEnv

from sb3_maxdiff import MaxDiffMPPI
from sb3_maxdiff.common.precision import cpu_flags, has_native_bfloat16
from sb3_maxdiff.common.utils import flushing_denormals


def load(path: str, env_id: str, dtype: str, device: str) -> MaxDiffMPPI:
    return MaxDiffMPPI.load(path, env=DummyVecEnv([lambda: gym.make(env_id)]), device=device, planner_dtype=dtype)


def episode(model: MaxDiffMPPI, seed: int, record: bool = False) -> tuple[float, list[np.ndarray]]:
    """One evaluation episode (the planner's noise from torch's global stream, seeded); its return and states."""
    env = model.get_env()
    assert env is not None, "the model was loaded without its environment"
    env.seed(seed)
    th.manual_seed(seed)
    states: list[np.ndarray] = []
    obs, total, nominal, start = cast(np.ndarray, env.reset()), 0.0, None, np.ones(1, dtype=bool)
    while True:
        if record:
            states.append(obs.copy())
        action, nominal = model.predict(obs, state=nominal, episode_start=start, deterministic=False)
        next_obs, reward, done, _ = env.step(action)
        obs, total, start = cast(np.ndarray, next_obs), total + float(reward[0]), done
        if done[0]:
            return total, states


def same_noise_actions(models: dict[str, MaxDiffMPPI], states: list[np.ndarray]) -> dict[str, float]:
    """Both dtypes plan from each state with the same warm start and the same noise."""
    differences = []
    policies = {dtype: model.policy for dtype, model in models.items()}
    device = policies["float32"].device
    nominal = policies["float32"].planner.initial_nominal(1, device)
    for state in states:
        obs = th.as_tensor(state, dtype=th.float32, device=device)
        plans = {}
        for dtype, policy in policies.items():
            generator = th.Generator(device=device)
            generator.manual_seed(0)
            planner = policy.planner
            plans[dtype] = planner.plan(policy.model, obs, nominal, generator=generator)
        first = {dtype: plan.actions[0] for dtype, plan in plans.items()}
        differences.append(float((first["float32"] - first["bfloat16"]).abs().max()))
        nominal = plans["float32"].nominal
    return {"mean_max_diff": statistics.fmean(differences), "max_max_diff": max(differences), "states": len(states)}


def step_seconds(model: MaxDiffMPPI, calls: int) -> float:
    """CPU seconds (wall-clock on a GPU) of one plan plus one ``train`` call of ``gradient_steps`` updates."""
    device = model.device
    obs = th.zeros(1, *get_obs_shape(model.observation_space), device=device)
    clock = time.perf_counter if device.type == "cuda" else time.process_time
    best = float("inf")
    for _ in range(calls):
        start = clock()
        model.policy.plan(obs)
        model.train(gradient_steps=model.gradient_steps, batch_size=model.batch_size)
        if device.type == "cuda":
            th.cuda.synchronize()
        best = min(best, clock() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("models", nargs="+", help="saved MaxDiffMPPI / NNMPPI models (.zip)")
    parser.add_argument("--env", default="sb3_maxdiff/Swimmer-heavy-v0", help="the environment the models act in")
    parser.add_argument("--episodes", type=int, default=1, help="evaluation episodes per dtype and model")
    parser.add_argument("--stride", type=int, default=20, help="compare the plans at every stride-th state")
    parser.add_argument("--step-calls", type=int, default=5, help="timed training steps per dtype (0: none)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    th.set_num_threads(args.threads)
    device = th.device(args.device)
    print(f"torch {th.__version__}, {args.threads} thread(s), device {device}, native bfloat16: "
          f"{has_native_bfloat16(device)} (CPU flags {sorted(cpu_flags() & {'avx512_bf16', 'amx_bf16'})})")  # fmt: skip
    print("| model | states | first action, mean of max abs diff | max | eval float32 | eval bfloat16 | step float32 ms "
          "| step bfloat16 ms | bf16 / f32 |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|")
    with flushing_denormals():  # as `learn` does: denormal floats would slow the float32 arithmetic alone
        compare(args)


def compare(args: argparse.Namespace) -> None:
    """One table row per model."""
    for path in args.models:
        models = {dtype: load(path, args.env, dtype, args.device) for dtype in ("float32", "bfloat16")}
        # the first float32 episode also gives the states of the same-noise comparison
        first, states = episode(models["float32"], seed=0, record=True)
        returns = {
            "float32": [first] + [episode(models["float32"], seed=index)[0] for index in range(1, args.episodes)],
            "bfloat16": [episode(models["bfloat16"], seed=index)[0] for index in range(args.episodes)],
        }
        actions = same_noise_actions(models, states[:: args.stride])
        step = {"float32": float("nan"), "bfloat16": float("nan")}
        if args.step_calls > 0:
            for model in models.values():
                model.set_logger(configure(None, []))  # train() records its losses
                model.replay_buffer = models["float32"].replay_buffer
            if _fill(models["float32"], states):
                # two rounds, the dtypes in turn within each, the fastest of each kept
                rounds = [{dtype: step_seconds(model, args.step_calls) for dtype, model in models.items()} for _ in range(2)]
                step = {dtype: min(seconds[dtype] for seconds in rounds) for dtype in models}
        name = path.rsplit("/", 1)[-1]
        print(
            f"| {name} | {actions['states']} | {actions['mean_max_diff']:.4f} | {actions['max_max_diff']:.4f} | "
            f"{statistics.fmean(returns['float32']):.1f} | {statistics.fmean(returns['bfloat16']):.1f} | "
            f"{1e3 * step['float32']:.1f} | {1e3 * step['bfloat16']:.1f} | {step['bfloat16'] / step['float32']:.2f} |"
        )


def _fill(model: MaxDiffMPPI, states: list[np.ndarray]) -> bool:
    """Put the episode's transitions (with zero actions and rewards) in the replay buffer, to train on."""
    buffer = model.replay_buffer
    if buffer is None or len(states) < model.batch_size + 2:
        return False
    zeros = np.zeros((1, get_action_dim(model.action_space)), dtype=np.float32)
    for state, next_state in itertools.pairwise(states):
        buffer.add(state, next_state, zeros, np.zeros(1), np.zeros(1, dtype=bool), [{}])
    return True


if __name__ == "__main__":
    main()
