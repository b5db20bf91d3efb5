"""
The environments of a run: built as its spec says (episode length, never-ending for single-shot), each of a
batch on its own seed, with the random state before each reset noted so that a checkpoint can redo that reset.
"""

import copy
import os
from collections.abc import Mapping
from typing import Any

import gymnasium as gym
from stable_baselines3.common.monitor import Monitor

import sb3_maxdiff  # noqa: F401  (registers the environments)
from sb3_maxdiff.common.vec_env import ThreadedVecEnv
from sb3_maxdiff.experiments.define.specs import MONITOR_FILE, RunSpec
from sb3_maxdiff.experiments.run.single_shot import make_single_shot_env


def make_env(env_id: str, spec: RunSpec) -> gym.Env:
    """The environment ``env_id`` as ``spec`` runs it: never-ending for a single-shot run, else its episode length."""
    if spec.single_shot:
        return make_single_shot_env(env_id)
    kwargs: dict[str, Any] = {} if spec.max_episode_steps is None else {"max_episode_steps": spec.max_episode_steps}
    return gym.make(env_id, **kwargs)


class ResetRandomState(gym.Wrapper):
    """
    Notes the state of the environment's random generator just before each reset, so that a checkpoint taken after
    an episode ended can restore it and redo that reset exactly (:func:`restore_random_state`).
    """

    def __init__(self, env: gym.Env):
        super().__init__(env)
        self.before_last_reset: Mapping[str, Any] | None = None

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        self.before_last_reset = None if seed is not None else copy.deepcopy(self.env.unwrapped.np_random.bit_generator.state)
        return self.env.reset(seed=seed, options=options)


class SeedOffset(gym.Wrapper):
    """
    Adds ``offset`` to every seed that ``reset`` is given: environment i of a VecEnv, which SB3 seeds with
    ``seed + i``, then follows a seed of its own.
    """

    def __init__(self, env: gym.Env, offset: int):
        super().__init__(env)
        self.offset = offset

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        return self.env.reset(seed=None if seed is None else seed + self.offset, options=options)


def batch_env(env_fns: list, env_threads: int = 1) -> ThreadedVecEnv:
    """
    The environments of ``env_fns`` as one VecEnv, stepped in ``env_threads`` threads (1: one after the other, in the
    calling thread). A :class:`ThreadedVecEnv` even with one thread: its steps are those of a ``DummyVecEnv``, and it
    copies each step's info dicts rather than deep-copying them, host time that a GPU would wait for
    (``benchmarks/env_threads.py`` times both).
    """
    return ThreadedVecEnv(env_fns, env_threads)


def training_env(specs: list[RunSpec], run_dirs: list[str], resume: bool, env_threads: int = 1) -> ThreadedVecEnv:
    """
    One monitored environment per run; environment i follows seed i of ``specs`` wherever SB3 seeds the VecEnv.

    :param env_threads: threads that step them (1: one after the other)
    """

    def make(index: int, spec: RunSpec, run_dir: str) -> Any:
        def build() -> gym.Env:
            env: gym.Env = ResetRandomState(make_env(spec.env_id, spec))
            offset = spec.seed - specs[0].seed - index  # SB3 seeds environment i with (first seed) + i
            env = SeedOffset(env, offset) if offset else env
            return Monitor(env, os.path.join(run_dir, MONITOR_FILE), override_existing=not resume)

        return build

    return batch_env([make(index, spec, run_dir) for index, (spec, run_dir) in enumerate(zip(specs, run_dirs))], env_threads)
