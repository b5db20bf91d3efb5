"""
Which runs train together as the independent agents of one model: the seeds of one cell (``--batch-seeds``) or
the cells of a preset that share the model's shapes (``--batch-cells``: MaxDiff agents of several alphas and
NN-MPPI agents in one batch), and the batch's algorithm, keyword arguments and checkpoint folder.
"""

import copy
import dataclasses
import hashlib
import inspect
import json
import os
from collections.abc import Iterable
from typing import Any

from stable_baselines3.common.off_policy_algorithm import OffPolicyAlgorithm

from sb3_maxdiff.experiments.define.algos import get_algo
from sb3_maxdiff.experiments.define.specs import RunSpec
from sb3_maxdiff.maxdiff.maxdiff import MaxDiffMPPI
from sb3_maxdiff.nnmppi.nnmppi import NNMPPI


def is_batchable(spec: RunSpec) -> bool:
    """
    Runs of the model-based methods can be batched, multi-shot and single-shot ones (apart: the spec's
    ``single_shot`` is part of :func:`batch_key`); SAC runs, and planners with an actor-critic
    (``terminal_value="q"``: the batched evaluation does not evaluate their actor alone), run alone.
    """
    return issubclass(get_algo(spec.method), NNMPPI) and spec.algo_kwargs.get("terminal_value") != "q"


# what agents of one batch may each have of their own (MaxDiff and NN-MPPI agents plan with one planner: NN-MPPI is
# alpha 0 with the control term on), and the path entropy's settings, which only MaxDiff agents have
PER_AGENT_KWARGS = ("alpha", "control_cost")
ENTROPY_KWARGS = tuple(name for name in MaxDiffMPPI.ENTROPY_PARAMETERS if name not in PER_AGENT_KWARGS)


def batch_key(spec: RunSpec) -> str:
    """
    What runs must share to train in one batch (``--batch-cells``): everything but the setting, method and seed,
    and but the keyword arguments an agent may have of its own or that only MaxDiff has.
    """
    shared = {key: value for key, value in spec.algo_kwargs.items() if key not in (*PER_AGENT_KWARGS, *ENTROPY_KWARGS)}
    return json.dumps({**spec.to_json(), "setting": "", "method": "", "seed": -1, "algo_kwargs": shared}, sort_keys=True)


def _entropy_kwargs(spec: RunSpec) -> str | None:
    """The path entropy's settings of a MaxDiff run (None for NN-MPPI, which has none)."""
    if not issubclass(get_algo(spec.method), MaxDiffMPPI):
        return None
    return json.dumps({key: spec.algo_kwargs.get(key) for key in ENTROPY_KWARGS}, sort_keys=True)


def split_by_entropy(group: list[RunSpec]) -> list[list[RunSpec]]:
    """
    A group of runs split so that the MaxDiff runs of each part share their path entropy's settings (one model has
    one); the NN-MPPI runs go with the first part.
    """
    parts: dict[str | None, list[RunSpec]] = {}
    for spec in group:
        parts.setdefault(_entropy_kwargs(spec), []).append(spec)
    if len(parts) <= 1 or None not in parts:
        return list(parts.values())
    nnmppi = parts.pop(None)
    first = next(iter(parts))
    parts[first] = [spec for spec in group if spec in nnmppi or spec in parts[first]]
    return list(parts.values())


def is_mixed(specs: list[RunSpec]) -> bool:
    """Whether a batch holds runs of several cells (``--batch-cells``), not only the seeds of one."""
    return len({(spec.setting, spec.method) for spec in specs}) > 1


def batch_algo(specs: list[RunSpec]) -> type[OffPolicyAlgorithm]:
    """The algorithm a batch trains with: MaxDiff where a MaxDiff run is in it (its NN-MPPI agents plan with alpha 0)."""
    algos = [get_algo(spec.method) for spec in specs]
    return next((algo for algo in algos if issubclass(algo, MaxDiffMPPI)), algos[0]) if is_mixed(specs) else algos[0]


def batch_kwargs(specs: list[RunSpec]) -> dict[str, Any]:
    """
    The keyword arguments of a batch's model: those of its runs, with ``alpha`` and ``control_cost`` given per agent
    where the runs differ in them (an NN-MPPI run's agent: alpha 0, its own control-cost setting).
    """
    algo = batch_algo(specs)
    first = next(spec for spec in specs if get_algo(spec.method) is algo)
    kwargs = copy.deepcopy(first.algo_kwargs)
    if not is_mixed(specs):
        return kwargs
    for name in PER_AGENT_KWARGS:
        if name not in inspect.signature(algo).parameters:
            continue
        values = [_own_value(spec, name) for spec in specs]
        kwargs[name] = values if any(value != values[0] for value in values) else values[0]
    return kwargs


def _own_value(spec: RunSpec, name: str) -> Any:
    """A run's ``alpha`` or ``control_cost``: its keyword argument, else its algorithm's default (NN-MPPI: alpha 0)."""
    if name in spec.algo_kwargs:
        return copy.deepcopy(spec.algo_kwargs[name])
    parameters = inspect.signature(get_algo(spec.method)).parameters
    return parameters[name].default if name in parameters else 0.0


def batch_dir(out: str, specs: list[RunSpec]) -> str:
    """
    Where a batch keeps its checkpoints: ``<cell>/batch_<seeds>/`` for the seeds of one cell; for several cells,
    ``<preset>/<budget>/batch_cells_<digest of the runs' folders>/``, with the list of its runs in ``runs.json``.
    """
    if not is_mixed(specs):
        cell = os.path.dirname(os.path.join(out, specs[0].relpath))
        return os.path.join(cell, "batch_" + "-".join(str(spec.seed) for spec in specs))
    digest = hashlib.md5("\n".join(spec.relpath for spec in specs).encode()).hexdigest()[:10]
    return os.path.join(out, specs[0].preset, specs[0].budget, f"batch_cells_{digest}")


def group_runs(specs: Iterable[RunSpec], batch_seeds: bool = False, batch_cells: bool = False) -> list[list[RunSpec]]:
    """
    The groups that :func:`execute_group` runs, in order: one run each; with ``batch_seeds`` the batchable runs
    grouped by cell (every field but the seed); with ``batch_cells`` the batchable runs of all cells that can
    share one model (same environment, budget and settings but for alpha and the control term: MaxDiff agents
    of several alphas and NN-MPPI agents in one batch; see :func:`batch_key`).
    """
    groups: dict[Any, list[RunSpec]] = {}
    for index, spec in enumerate(specs):
        if not is_batchable(spec) or not (batch_seeds or batch_cells):
            key: Any = index
        elif batch_cells:
            key = batch_key(spec)
        else:
            key = json.dumps(dataclasses.replace(spec, seed=-1).to_json(), sort_keys=True)
        groups.setdefault(key, []).append(spec)
    return [part for group in groups.values() for part in split_by_entropy(group)]
