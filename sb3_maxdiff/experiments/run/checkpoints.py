"""
Checkpoints of a training group: the model, its replay buffer and every random stream, written between two steps,
and the notes a resumed run keeps (its monitor cut back to the checkpoint, ``resumes.json``). A single-shot run,
whose one episode never ends, also keeps its environment where it was (:func:`episode_state`).
"""

import copy
import glob
import json
import os
import pickle
import random
from typing import Any, NamedTuple

import gymnasium as gym
import mujoco
import numpy as np
import torch as th
from stable_baselines3.common.off_policy_algorithm import OffPolicyAlgorithm

from sb3_maxdiff.experiments.define.specs import CHECKPOINT_FILE, RESUMES_FILE, SPEC_FILE, read_resumes, write_json


def random_state(model: Any, ended: list[bool]) -> dict[str, Any]:
    """
    Every random stream a run draws from: torch's (CPU and CUDA), numpy's and Python's global ones, the action
    space's (random warm-up actions), and each environment's as it was before its last reset where that reset began
    the current episode (``ended``: the environment's episode ended at the last step), None elsewhere.
    """
    envs = model.get_env().envs
    return {
        "torch": th.get_rng_state(),
        "cuda": th.cuda.get_rng_state_all() if th.cuda.is_available() else None,
        "numpy": np.random.get_state(),
        "python": random.getstate(),
        "action_space": copy.deepcopy(model.action_space.np_random.bit_generator.state),
        "envs": [env.get_wrapper_attr("before_last_reset") if done else None for env, done in zip(envs, ended)],
    }


def restore_random_state(model: Any, state: dict[str, Any]) -> bool:
    """
    Put back the streams of :func:`random_state` if every environment's episode had just ended (each environment's
    generator set to redo the reset that began its next episode; SB3 resets them when ``learn`` starts); the run then
    continues exactly as it would have without the stop. Returns False, changing nothing, otherwise.
    """
    if any(env_state is None for env_state in state["envs"]):
        return False
    _restore_streams(model, state)
    vec_env = model.get_env()
    vec_env._reset_seeds()  # SB3's load seeded the next reset (set_random_seed): the restored generators draw it
    for env, env_state in zip(vec_env.envs, state["envs"]):
        generator, _ = gym.utils.seeding.np_random()
        generator.bit_generator.state = env_state
        env.unwrapped.np_random = generator
    return True


def _restore_streams(model: Any, state: dict[str, Any]) -> None:
    """Put back the global random streams and the action space's of :func:`random_state`."""
    th.set_rng_state(state["torch"])
    if state["cuda"] is not None and th.cuda.is_available():
        th.cuda.set_rng_state_all(state["cuda"])
    np.random.set_state(state["numpy"])
    random.setstate(state["python"])
    model.action_space.np_random.bit_generator.state = state["action_space"]


def environment_state(env: gym.Env) -> dict[str, Any]:
    """
    An environment as it is between two steps: its random generator, and a copy of MuJoCo's whole ``MjData`` for a
    MuJoCo environment (not only the integration state: a step's reward also reads positions MuJoCo derived during
    the previous step), a copy of its attributes for an environment written in Python.
    """
    unwrapped = env.unwrapped
    state: dict[str, Any] = {"np_random": copy.deepcopy(unwrapped.np_random.bit_generator.state)}
    data = getattr(unwrapped, "data", None)
    if isinstance(data, mujoco.MjData):
        state["mujoco"] = copy.deepcopy(data)
    else:
        state["attributes"] = copy.deepcopy({key: value for key, value in vars(unwrapped).items() if key != "_np_random"})
    return state


def restore_environment_state(env: gym.Env, state: dict[str, Any]) -> None:
    """Put ``env`` (reset since it was made) back as :func:`environment_state` found it."""
    unwrapped: Any = env.unwrapped  # a MuJoCo environment's has its model and data
    if "mujoco" in state:
        mujoco.mj_copyData(unwrapped.data, unwrapped.model, state["mujoco"])
    else:
        vars(unwrapped).update(copy.deepcopy(state["attributes"]))
    generator, _ = gym.utils.seeding.np_random()
    generator.bit_generator.state = state["np_random"]
    unwrapped.np_random = generator


def episode_state(model: Any) -> dict[str, Any]:
    """
    What a model needs, besides its saved parameters and :func:`random_state`, to carry on in the middle of its
    environments' episodes: each environment (:func:`environment_state`), the last observations, and the planner's
    warm start and visited states (NN-MPPI, MaxDiff).
    """
    plans = getattr(model, "_plans", None)  # NN-MPPI's and MaxDiff's (SAC has none)
    nominal, visited = (None, None) if plans is None else (plans.nominal, plans.visited)
    return {
        "environments": [environment_state(env) for env in model.get_env().envs],
        "last_obs": copy.deepcopy(model._last_obs),
        "last_original_obs": copy.deepcopy(model._last_original_obs),
        "last_episode_starts": copy.deepcopy(model._last_episode_starts),
        "nominal": None if nominal is None else nominal.detach().cpu().clone(),
        "visited": None if visited is None else copy.deepcopy(visited),
    }


def continue_episode(model: Any, streams: dict[str, Any], state: dict[str, Any]) -> None:
    """
    Put a model loaded from a checkpoint (on a new environment) back in the middle of its episode, as
    :func:`episode_state` and :func:`random_state` found it: ``learn(..., reset_num_timesteps=False)`` then takes the
    next step as the stopped run would have.
    """
    vec_env = model.get_env()
    vec_env.reset()  # a new environment steps only once reset: the reset is then overwritten
    environments = state["environments"]
    if len(environments) != len(vec_env.envs):
        raise ValueError(f"the checkpoint holds {len(environments)} environments, the model has {len(vec_env.envs)}")
    for env, env_state in zip(vec_env.envs, environments):
        restore_environment_state(env, env_state)
    model._last_obs, model._last_original_obs = state["last_obs"], state["last_original_obs"]
    model._last_episode_starts = state["last_episode_starts"]
    if state["nominal"] is not None:
        model._plans.nominal = state["nominal"].to(model.device)
    if state["visited"] is not None:
        model._plans.visited = state["visited"]
    _restore_streams(model, streams)


def save_checkpoint(
    directory: str,
    model: Any,
    episodes: list[int],
    visited: list[list],
    ended: list[bool],
    run_state: dict[str, Any] | None = None,
) -> None:
    """
    Model, replay buffer and random streams at ``model.num_timesteps`` (taken between two steps: the last step's
    transition stored, its updates made), then the pointer to them, then old ones deleted.

    :param ended: for each environment, whether its episode ended at the last step
    :param run_state: what else the run needs to carry on (a single-shot run: :func:`episode_state` and its
        window bookkeeping), written beside them as ``checkpoint_<steps>_run_state.pkl``
    """
    steps = model.num_timesteps
    model.save(os.path.join(directory, f"checkpoint_{steps}.zip"))
    model.save_replay_buffer(os.path.join(directory, f"checkpoint_{steps}_replay_buffer.pkl"))
    with open(os.path.join(directory, f"checkpoint_{steps}_random_state.pkl"), "wb") as file:
        pickle.dump(random_state(model, ended), file)
    if run_state is not None:
        with open(os.path.join(directory, f"checkpoint_{steps}_run_state.pkl"), "wb") as file:
            pickle.dump(run_state, file)
    pointer = {"timesteps": steps, "agent_timesteps": steps // len(episodes), "episodes": episodes, "visited_cells": visited}
    write_json(os.path.join(directory, CHECKPOINT_FILE), pointer)
    remove_checkpoints(directory, keep=steps)


def read_checkpoint(directory: str, n_runs: int) -> dict[str, Any]:
    """
    The checkpoint pointer, with per-run lists (``episodes``, ``visited_cells``) checked against ``n_runs``.
    """
    with open(os.path.join(directory, CHECKPOINT_FILE)) as file:
        checkpoint = json.load(file)
    if len(checkpoint["episodes"]) != n_runs:
        raise ValueError(f"the checkpoint in {directory} holds {len(checkpoint['episodes'])} runs, expected {n_runs}")
    return checkpoint


class Resumed(NamedTuple):
    """A model loaded from a checkpoint: the pointer it was read from, and whether training carries on exactly."""

    model: Any
    checkpoint: dict[str, Any]
    exact: bool


def load_checkpoint(
    algo: type[OffPolicyAlgorithm], directory: str, env: Any, n_runs: int, windows: list | None = None, **load_kwargs: Any
) -> Resumed:
    """
    The model of the latest checkpoint in ``directory`` (one run, or a batch of ``n_runs``), on ``env`` (new), with its
    replay buffer and random streams. A single-shot run's (``windows``: its window bookkeeping, restored from the
    checkpoint) is put back in the middle of its episode, and carries on exactly. A multi-shot run's carries on
    exactly where every environment's episode had just ended (:func:`restore_random_state`), and on streams of its own
    otherwise.

    :param load_kwargs: passed on to ``algo.load`` (e.g. ``device``)
    """
    checkpoint = read_checkpoint(directory, n_runs)
    stem = os.path.join(directory, f"checkpoint_{checkpoint['timesteps']}")
    model = algo.load(f"{stem}.zip", env=env, **load_kwargs)
    model.load_replay_buffer(f"{stem}_replay_buffer.pkl")
    with open(f"{stem}_random_state.pkl", "rb") as file:
        streams = pickle.load(file)
    if windows is None:
        return Resumed(model, checkpoint, restore_random_state(model, streams))
    with open(f"{stem}_run_state.pkl", "rb") as file:
        run_state = pickle.load(file)
    continue_episode(model, streams, run_state["episode"])
    for logger, state in zip(windows, run_state["windows"], strict=True):
        logger.restore(state)
    return Resumed(model, checkpoint, True)


def remove_checkpoints(directory: str, keep: int | None = None) -> None:
    """Delete the checkpoint files, all but those of step ``keep`` if given (the pointer too if not)."""
    for path in glob.glob(os.path.join(directory, "checkpoint_*")):
        if keep is None or not os.path.basename(path).startswith((f"checkpoint_{keep}.", f"checkpoint_{keep}_")):
            os.remove(path)
    pointer = os.path.join(directory, CHECKPOINT_FILE)
    if keep is None and os.path.exists(pointer):
        os.remove(pointer)


def truncate_monitor(path: str, episodes: int) -> None:
    """Keep the monitor's two header lines and its first ``episodes`` rows (those the checkpoint saw)."""
    with open(path) as file:
        lines = file.readlines()
    with open(path, "w") as file:
        file.writelines(lines[: 2 + episodes])


def last_device_type(run_dir: str, agent_timesteps: int) -> str:
    """The kind of device ("cpu", "cuda") the run trained on before ``agent_timesteps``: that of its last resume
    before then that noted one, else the one it started on (its ``spec.json``)."""
    for resume in reversed(read_resumes(run_dir)):
        if resume["agent_timesteps"] < agent_timesteps and "device" in resume:
            return th.device(resume["device"]).type
    with open(os.path.join(run_dir, SPEC_FILE)) as file:
        return th.device(json.load(file).get("device", "cpu")).type


def record_resume(run_dir: str, episodes: int, agent_timesteps: int, exact: bool = False, device: str | None = None) -> None:
    """
    Note in ``resumes.json`` that the run continues from ``agent_timesteps`` after its first ``episodes`` monitor
    rows (``exact``: with every random stream put back, as if never stopped; ``device``: the torch device it continues
    on), dropping the notes of later checkpoints (those of an earlier try that was stopped again).
    """
    kept = [resume for resume in read_resumes(run_dir) if resume["agent_timesteps"] < agent_timesteps]
    note: dict[str, Any] = {"episodes": episodes, "agent_timesteps": agent_timesteps, "exact": exact}
    if device is not None:
        note["device"] = device
    write_json(os.path.join(run_dir, RESUMES_FILE), [*kept, note])
