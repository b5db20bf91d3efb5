"""Schedules over environment steps (e.g. the paper's point-mass alpha schedule)."""

import itertools
import numbers
from collections.abc import Callable, Mapping, Sequence
from typing import Any


class StepSchedule:
    """
    Piecewise-constant schedule indexed by the number of environment steps:
    ``values[i]`` from step ``boundaries[i - 1]`` on (``values[0]`` before ``boundaries[0]``).

    The point-mass runs of the paper used ``StepSchedule([0.5, 5.0], [1000])`` for alpha.

    :param values: the successive values, one more than ``boundaries``
    :param boundaries: increasing step counts at which the value changes
    """

    def __init__(self, values: Sequence[float], boundaries: Sequence[int]):
        if len(values) != len(boundaries) + 1:
            raise ValueError(f"values must have len(boundaries) + 1 = {len(boundaries) + 1} entries, got {len(values)}")
        if any(b2 <= b1 for b1, b2 in itertools.pairwise(boundaries)):
            raise ValueError(f"boundaries must be strictly increasing, got {list(boundaries)}")
        self.values = [float(v) for v in values]
        self.boundaries = [int(b) for b in boundaries]

    def __call__(self, num_timesteps: int) -> float:
        index = sum(num_timesteps >= boundary for boundary in self.boundaries)
        return self.values[index]

    def __repr__(self) -> str:
        return f"StepSchedule(values={self.values}, boundaries={self.boundaries})"


AlphaSchedule = float | Callable[[float], float] | StepSchedule


def as_alpha_schedule(alpha: AlphaSchedule | Mapping[str, Any]) -> AlphaSchedule:
    """Accept ``{"values": [...], "boundaries": [...]}`` (YAML, RL Zoo) as a :class:`StepSchedule`."""
    if isinstance(alpha, Mapping):
        if set(alpha) != {"values", "boundaries"}:
            raise ValueError(f"alpha as a mapping must have exactly the keys 'values' and 'boundaries', got {sorted(alpha)}")
        return StepSchedule(alpha["values"], alpha["boundaries"])
    return alpha


def alpha_value(alpha: AlphaSchedule, num_timesteps: int, progress_remaining: float) -> float:
    """
    Current value of ``alpha``: a float, a :class:`StepSchedule` (indexed by environment steps),
    or an SB3-style schedule (a callable of the remaining progress, 1 -> 0).
    """
    if not (isinstance(alpha, numbers.Real) or callable(alpha)):  # a StepSchedule is callable
        raise ValueError(
            "alpha must be a float >= 0, a StepSchedule, {'values': [...], 'boundaries': [...]} or a schedule of the "
            f"remaining progress, got {alpha!r}"
        )
    if isinstance(alpha, StepSchedule):
        value = alpha(num_timesteps)
    elif callable(alpha):
        value = float(alpha(progress_remaining))
    else:
        value = float(alpha)
    if not value >= 0.0:
        raise ValueError(f"alpha must be >= 0 (a float, a StepSchedule or a schedule of the progress), got {value}")
    return value
