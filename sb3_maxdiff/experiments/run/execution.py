"""
Executing runs (:func:`execute_group`): a group is one run, or the seeds of one NN-MPPI / MaxDiff cell
trained together (see :mod:`sb3_maxdiff.experiments.run.training`); each run is then evaluated and written into
its own folder (see :mod:`sb3_maxdiff.experiments.define.specs` for the files), resuming from what is on disk.
"""

import json
import os
import time
from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
import torch as th
from stable_baselines3.common.evaluation import evaluate_policy
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env import DummyVecEnv

from sb3_maxdiff.common.vec_env import EnvStepper
from sb3_maxdiff.experiments.define.algos import get_algo
from sb3_maxdiff.experiments.define.specs import (
    BATCH_FILE,
    ERGODICITY_FILE,
    MODEL_FILE,
    RESULT_FILE,
    TRAINING_FILE,
    WINDOWS_FILE,
    RunSpec,
    is_finished,
    open_run_dir,
    read_windows,
    write_json,
)
from sb3_maxdiff.experiments.run.batching import batch_algo, batch_key, batch_kwargs, is_batchable
from sb3_maxdiff.experiments.run.environments import make_env
from sb3_maxdiff.experiments.run.options import Deadline, EvaluationClock, ExecutionOptions
from sb3_maxdiff.experiments.run.training import Progress, Trained, train_group
from sb3_maxdiff.nnmppi import NNMPPI


def _ergodicity_summary(run_dir: str) -> dict[str, float] | None:
    """Final coverage and per-episode medians of the MSD exponent and autocorrelation time, from ``ergodicity.csv``."""
    path = os.path.join(run_dir, ERGODICITY_FILE)
    if not os.path.exists(path):
        return None
    rows = read_windows(path)  # a plain CSV with a header, like windows.csv
    if not rows:
        return None
    return {
        "episodes": len(rows),
        "coverage": float(rows[-1]["coverage"]),
        "msd_exponent": float(np.nanmedian([float(row["msd_exponent"]) for row in rows])),
        "autocorr_time": float(np.nanmedian([float(row["autocorr_time"]) for row in rows])),
    }


def _evaluation_seed(spec: RunSpec, index: int) -> int:
    """The seed of run ``spec``'s evaluation on its ``index``-th evaluation environment (starts differ from training's)."""
    return 10_000 + 100 * spec.seed + index


def _most_steps(envs: Sequence[gym.Env], episodes: int) -> int | None:
    """At most how many steps ``episodes`` episodes on each of ``envs`` take (None where one has no episode limit)."""
    limits = [None if env.spec is None else env.spec.max_episode_steps for env in envs]
    return None if None in limits else episodes * sum(limit for limit in limits if limit is not None)


def _evaluate(model: Any, spec: RunSpec, progress: Progress, deadline: Deadline, seeded: Any = None) -> dict[str, list[float]]:
    """
    Returns of ``spec.eval_episodes`` episodes of the final policy on each evaluation environment; stopped with
    :class:`TimeLimitReached` as soon as it would not end before the deadline (see :class:`EvaluationClock`).
    ``seeded``: the algorithm whose random seed is set before each environment's episodes (default ``model``).
    """
    envs = [Monitor(make_env(env_id, spec)) for env_id in spec.eval_env_ids]
    clock = EvaluationClock(deadline, f"the evaluation of {spec.name}", _most_steps(envs, spec.eval_episodes))

    def each_step(*_: Any) -> None:
        progress()
        clock.step()

    returns = {}
    for index, (env_id, env) in enumerate(zip(spec.eval_env_ids, envs)):
        env.reset(seed=_evaluation_seed(spec, index))
        (model if seeded is None else seeded).set_random_seed(_evaluation_seed(spec, index))
        # the paper's protocol: the planner samples as in training (deterministic=True would fix its noise)
        episode_returns, _ = evaluate_policy(
            model,
            env,
            n_eval_episodes=spec.eval_episodes,
            deterministic=False,
            return_episode_rewards=True,
            callback=each_step,
        )
        returns[env_id] = [float(value) for value in np.atleast_1d(episode_returns)]
    return returns


class ActorAlone:
    """A planner with an actor-critic as ``evaluate_policy`` sees it when it acts with the actor alone."""

    def __init__(self, model: Any):
        self.model = model

    def predict(self, observation: Any, state: Any = None, episode_start: Any = None, deterministic: bool = False) -> Any:
        return self.model.predict(observation, state, episode_start, deterministic, planner=False)


def _evaluate_actor(model: Any, spec: RunSpec, progress: Progress, deadline: Deadline) -> dict[str, list[float]] | None:
    """
    The evaluation of :func:`_evaluate` for the actor alone of a planner with an actor-critic (``terminal_value="q"``),
    with the same seeds, so the same starts (None for a model without an actor).
    """
    if getattr(getattr(model, "policy", None), "actor_critic", None) is None:
        return None
    return _evaluate(ActorAlone(model), spec, progress, deadline, model)


def _returning(env: gym.Env) -> Callable[[], gym.Env]:
    """A ``DummyVecEnv`` environment function that gives ``env`` itself."""
    return lambda: env


def _batch_for_evaluation(specs: list[RunSpec], out: str, options: ExecutionOptions, env: DummyVecEnv) -> Any:
    """
    The runs' saved agents, each with its weights and alpha, as the independent agents of one model on ``env``
    (one environment per run), to plan for all of them in one call.
    """
    algo = batch_algo(specs)
    assert issubclass(algo, NNMPPI)  # batches hold planner runs (a SAC run runs alone)
    kwargs = {**batch_kwargs(specs), "buffer_size": 2, **options.model_kwargs(algo)}  # no training: no replay
    batch: Any = algo("MlpPolicy", env, independent_agents=True, device=specs[0].device, **kwargs)  # an NNMPPI
    for index, spec in enumerate(specs):
        path = os.path.join(out, spec.relpath, MODEL_FILE)
        agent: Any = get_algo(spec.method).load(path, device=spec.device, **options.model_kwargs(get_algo(spec.method)))
        batch.policy.model.load_agent_state_dict(index, agent.policy.model.agent_state_dict(0))
        if batch.policy.alpha is not None:
            batch.policy.alpha[index] = 0.0 if agent.policy.alpha is None else agent.policy.alpha
    return batch


def _evaluate_batch(
    specs: list[RunSpec], out: str, progress: Progress, options: ExecutionOptions, deadline: Deadline
) -> list[dict]:
    """
    The evaluation of :func:`_evaluate` for the runs of a batch at once: each run's agent on its own environment
    (reset with the same seeds, so the same starts), one batched planner call per step for all of them, the
    planner's noise from torch's global stream seeded with the first run's evaluation seed. A run whose episodes
    are done waits (its agent is still planned for, its environment not stepped) until every run is done. The
    environments of a step are stepped in ``options.env_threads`` threads. Stopped with :class:`TimeLimitReached`
    as soon as it would not end before the deadline (see :class:`EvaluationClock`).
    """
    start = time.perf_counter()
    returns: list[dict[str, list[float]]] = [{} for _ in specs]
    env_lists = [[Monitor(make_env(env_id, spec)) for env_id in spec.eval_env_ids] for spec in specs]
    episodes_each = max(spec.eval_episodes for spec in specs)
    clock = EvaluationClock(deadline, "the batched evaluation", _most_steps(env_lists[0], episodes_each))
    stepper = EnvStepper(options.env_threads)
    try:
        for index in range(len(specs[0].eval_env_ids)):
            envs = [own[index] for own in env_lists]
            batch = _batch_for_evaluation(specs, out, options, DummyVecEnv([_returning(env) for env in envs]))
            for env, spec in zip(envs, specs):
                env.reset(seed=_evaluation_seed(spec, index))  # then a reset without a seed, as evaluate_policy does
            batch.set_random_seed(_evaluation_seed(specs[0], index))
            obs = np.stack([env.reset()[0] for env in envs])
            episodes: list[list[float]] = [[] for _ in specs]
            totals, starts, state = np.zeros(len(specs)), np.ones(len(specs), dtype=bool), None
            while any(len(done) < spec.eval_episodes for done, spec in zip(episodes, specs)):
                actions, state = batch.predict(obs, state=state, episode_start=starts, deterministic=False)
                starts = np.zeros(len(specs), dtype=bool)
                rows = [row for row, spec in enumerate(specs) if len(episodes[row]) < spec.eval_episodes]
                outcomes = stepper.step([envs[row] for row in rows], actions[rows])
                for row, (next_obs, reward, terminated, truncated, _) in zip(rows, outcomes):
                    obs[row] = next_obs
                    totals[row] += float(reward)
                    progress()
                    if terminated or truncated:
                        episodes[row].append(float(totals[row]))
                        totals[row], starts[row] = 0.0, True
                        obs[row] = envs[row].reset()[0]
                clock.step()
            for row, spec in enumerate(specs):
                returns[row][spec.eval_env_ids[index]] = episodes[row]
    finally:
        stepper.close()
    seconds = time.perf_counter() - start
    return [{"eval_returns": own, "eval_seconds": seconds, "evaluation": "batched"} for own in returns]


def _trained_earlier(run_dir: str, spec: RunSpec) -> Trained:
    """A run trained in an earlier process: what its result records of the training (a batch wrote it down)."""
    info: dict[str, Any] = {"resumed_from_steps": spec.steps}
    for name in (BATCH_FILE, TRAINING_FILE):  # a batch's, or a run's trained alone (runs of earlier versions: none)
        path = os.path.join(run_dir, name)
        if os.path.exists(path):
            with open(path) as file:
                info.update(json.load(file))
    if spec.single_shot:
        rows = read_windows(os.path.join(run_dir, WINDOWS_FILE))
        info.update(window_returns=[float(row["window_return"]) for row in rows], final_distance=float(rows[-1]["x_distance"]))
    return Trained(info)


def _evaluate_and_write(
    spec: RunSpec,
    out: str,
    progress: Progress,
    options: ExecutionOptions,
    deadline: Deadline,
    trained: Trained,
    evaluated: dict | None = None,
) -> dict:
    """
    Evaluate the trained run (its model in memory, else the saved one) and write its ``result.json``; ``evaluated``:
    its evaluation already made with the other runs of its batch (:func:`_evaluate_batch`).
    """
    run_dir = os.path.join(out, spec.relpath)
    model = trained.model
    if model is None and evaluated is None and spec.eval_env_ids:  # a single-shot run has nothing to evaluate
        algo = get_algo(spec.method)
        model = algo.load(os.path.join(run_dir, MODEL_FILE), device=spec.device, **options.model_kwargs(algo))
    result: dict[str, Any] = {"spec": spec.to_json(), **trained.info}
    ergodicity = _ergodicity_summary(run_dir)
    if ergodicity is not None:
        result["ergodicity"] = ergodicity
    if evaluated is None:
        start = time.perf_counter()
        result["eval_returns"] = _evaluate(model, spec, progress, deadline)
        result.update(eval_seconds=time.perf_counter() - start, evaluation="one agent at a time")
        actor_returns = _evaluate_actor(model, spec, progress, deadline)
        if actor_returns is not None:
            result["actor_eval_returns"] = actor_returns
    else:
        result.update(evaluated)
    write_json(os.path.join(run_dir, RESULT_FILE), result)
    return result


def execute_group(
    specs: list[RunSpec], out: str, counter: Any = None, options: ExecutionOptions | None = None
) -> list[dict[str, Any]]:
    """
    Train the runs of ``specs`` that have no model yet (one run, or the seeds of one batchable cell, as the
    independent agents of one model), then evaluate and write each run into ``<out>/<spec.relpath>``,
    resuming from what is on disk: a finished run is returned as it is, a trained but unevaluated model is
    evaluated, a checkpoint is trained on from.

    :param counter: a shared ``multiprocessing.Value`` that counts environment steps (progress display)
    :param options: how to run (torch threads, CUDA graphs); not part of the runs' specs
    """
    options = options or ExecutionOptions()
    if len(specs) > 1 and not (all(is_batchable(spec) for spec in specs) and len({batch_key(spec) for spec in specs}) == 1):
        raise ValueError(
            "a group of several runs must be NN-MPPI / MaxDiff runs that can share one model "
            "(all multi-shot or all single-shot)"
        )
    th.set_num_threads(options.threads)
    progress, deadline = Progress(counter), Deadline(options.deadline)
    unfinished = [spec for spec in specs if not is_finished(out, spec)]
    for spec in unfinished:  # refuses a folder of a run started with other settings, before any work
        open_run_dir(out, spec)
    untrained = [spec for spec in unfinished if not os.path.exists(os.path.join(out, spec.relpath, MODEL_FILE))]
    if untrained:
        deadline.check_start("training")
    trained = dict(zip(map(id, untrained), train_group(untrained, out, progress, options))) if untrained else {}
    pending = [spec for spec in specs if not is_finished(out, spec)]
    evaluated: dict[int, dict] = {}
    if options.batch_eval and len(pending) > 1:
        deadline.check_start("the batched evaluation")
        evaluated = dict(zip(map(id, pending), _evaluate_batch(pending, out, progress, options, deadline)))
    results, evaluation_seconds = [], 0.0
    for spec in specs:
        result_path = os.path.join(out, spec.relpath, RESULT_FILE)
        if os.path.exists(result_path):
            with open(result_path) as file:
                results.append(json.load(file))
            continue
        # a run's evaluation is not checkpointed: start it only where the longest one so far still fits
        if id(spec) not in evaluated:
            deadline.check(1.5 * evaluation_seconds, f"the evaluation of {spec.name}")
        training = trained.get(id(spec)) or _trained_earlier(os.path.join(out, spec.relpath), spec)
        results.append(_evaluate_and_write(spec, out, progress, options, deadline, training, evaluated.get(id(spec))))
        evaluation_seconds = max(evaluation_seconds, results[-1]["eval_seconds"])
    return results


def execute_run(spec: RunSpec, out: str, counter: Any = None, options: ExecutionOptions | None = None) -> dict[str, Any]:
    """Train, save and evaluate one run: :func:`execute_group` of a group of one."""
    return execute_group([spec], out, counter, options)[0]
