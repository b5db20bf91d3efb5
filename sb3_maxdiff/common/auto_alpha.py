"""
Automatic alpha (``alpha="auto"``): the weight of the path entropy set during training from what the planner sees.

The rule. The planner scores each sample ``R_k + alpha * S_k``. What the term changes is which samples win, and that
depends on how much ``alpha * S`` varies among the samples compared with how much ``R`` does. Both spreads are
measured at every training plan (the standard deviations over the K samples), and alpha follows

    alpha_target = ratio * std_k(R) / std_k(S),    log alpha <- (1 - rate) * log alpha + rate * log alpha_target

so that ``std_k(alpha * S) / std_k(R)``, averaged geometrically over the last ~``1 / rate`` plans, stays at ``ratio``.

Why this quantity. ``std_k(S)`` carries no units: changing the units of the explored state (metres to centimetres)
adds the same constant to every sample's ``S = 0.5 log det C``, which leaves its spread unchanged; ``std_k(R)``
carries the reward's units, as alpha does. So ``alpha * std_k(S) / std_k(R)`` is the one number without units that
says how much the entropy term weighs in the planner's choice, and the rule is unchanged by a reward scale (alpha
scales with it) and by the state's units. Measured at the published, hand-tuned alphas, this ratio lay between 0.4
and 2 on the two Swimmers and HalfCheetah (per seed), while the temperature-scaled spread ``alpha * std_k(S) / lambda``
differed 30-fold between them; on the point mass and the Ant the ratio was 10-40 times lower (``benchmarks/alpha_scales.py``;
the figures and the choice of the default are in docs/guide/own_env.md, "Choosing alpha").

``"auto"`` starts from the first plan's target (the first plan itself scores without the term); ``"auto_<value>"``
starts at ``value`` and moves from there, as SAC's ``ent_coef="auto_0.1"``.
"""

import math
from dataclasses import dataclass

import torch as th

from sb3_maxdiff.common.mppi import STAT_NAMES
from sb3_maxdiff.common.utils import is_real

AUTO = "auto"
# The default target of std_k(alpha * S) / std_k(R). At the published, hand-tuned alphas this ratio was, per seed
# (median over steps 1000-2000 of a run, 3 seeds): heavy Swimmer (alpha 100) 1.17-1.45, light Swimmer (100) 1.32-1.84,
# HalfCheetah (5) 0.43-1.98; the paper's sweep on the heavy Swimmer found alpha 50 and 100 (ratios ~0.65 and ~1.3)
# best. 1 sits in that band. The point mass (alpha 5) was at 0.03-0.10, far below it, and so was the Ant (alpha 5,
# 0.10-0.12, measured after this default was frozen).
DEFAULT_RATIO = 1.0
# the step of log alpha per training plan: a time constant of about 100 plans
DEFAULT_RATE = 0.01
_RETURN_SPREAD, _ENTROPY_SPREAD = STAT_NAMES.index("return_spread"), STAT_NAMES.index("entropy_spread")


@dataclass(frozen=True)
class AutoAlpha:
    """
    ``alpha="auto"`` or ``"auto_<value>"``, parsed.

    :param initial: the starting alpha; None: the first plan's target
    """

    initial: float | None = None

    def __str__(self) -> str:
        return AUTO if self.initial is None else f"{AUTO}_{self.initial:g}"

    @property
    def start_value(self) -> float:
        """The alpha written before the first plan: NaN (no entropy term yet) where none was given."""
        return math.nan if self.initial is None else self.initial


def parse_auto_alpha(text: str) -> AutoAlpha:
    """``"auto"`` or ``"auto_<value>"`` (a finite value > 0) as an :class:`AutoAlpha`; a ValueError otherwise."""
    if text == AUTO:
        return AutoAlpha()
    prefix = AUTO + "_"
    error = ValueError(
        'alpha must be a float >= 0, a StepSchedule, a schedule of the remaining progress, "auto" or "auto_<value>" '
        f"(a finite value > 0), got {text!r}"
    )
    if not text.startswith(prefix):
        raise error
    try:
        value = float(text[len(prefix) :])
    except ValueError:
        raise error from None
    if not (math.isfinite(value) and value > 0.0):
        raise error
    return AutoAlpha(value)


def check_auto_alpha_options(ratio: float, rate: float) -> None:
    """``alpha_target_ratio`` finite and > 0; ``alpha_rate`` in (0, 1]."""
    if not (is_real(ratio) and math.isfinite(ratio) and ratio > 0):
        raise ValueError(f"alpha_target_ratio must be a finite number > 0, got {ratio!r}")
    if not (is_real(rate) and 0.0 < rate <= 1.0):
        raise ValueError(f"alpha_rate must be a number in (0, 1], got {rate!r}")


@th.no_grad()
def update_auto_alpha(alpha: th.Tensor, stats: th.Tensor, ratio: float, rate: float, auto: th.Tensor | None = None) -> None:
    """
    One step of the rule, in place and on the device (no host copy): where ``auto`` is True, move ``alpha`` toward
    ``ratio * std_k(R) / std_k(S)`` of this plan.

    :param alpha: one weight (shape ()), shared by all environments, or one per agent (shape (N,), one env each)
    :param stats: the plan's statistics (``STAT_NAMES``), shape (E, 6)
    :param ratio: the target of ``std_k(alpha * S) / std_k(R)``
    :param rate: the step in log alpha, in (0, 1]
    :param auto: bool per agent (shape (N,)): which agents follow the rule (None: all)
    """
    return_spread, entropy_spread = stats[:, _RETURN_SPREAD], stats[:, _ENTROPY_SPREAD]
    if alpha.dim() == 0:  # one agent on E environments: their spreads pooled
        return_spread, entropy_spread = return_spread.mean(), entropy_spread.mean()
    target = ratio * return_spread.to(alpha.dtype) / entropy_spread.to(alpha.dtype)
    valid = th.isfinite(target) & (target > 0)
    target = th.where(valid, target, th.ones_like(target))
    started = th.isfinite(alpha) & (alpha > 0)
    moved = th.exp((1.0 - rate) * th.log(th.where(started, alpha, target)) + rate * th.log(target))
    new = th.where(started, moved, target)  # "auto": the first valid target is taken as it is
    keep = ~valid if auto is None else ~valid | ~auto
    alpha.copy_(th.where(keep, alpha, new))
