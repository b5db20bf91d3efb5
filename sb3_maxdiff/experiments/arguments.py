"""
Argument types shared by the experiment commands (``run``, ``single-shot``, ``transfer``): each refuses a bad
value with a message that says what it wanted, which argparse prefixes with the option's name.
"""

import argparse
from collections.abc import Callable


def int_at_least(minimum: int, what: str) -> Callable[[str], int]:
    """An argparse ``type`` that accepts whole numbers >= ``minimum`` and names ``what`` it wanted otherwise."""

    def parse(text: str) -> int:
        if not text.lstrip("+-").isdigit() or int(text) < minimum:
            raise argparse.ArgumentTypeError(f"must be a {what} integer, got {text}")
        return int(text)

    return parse


positive_int = int_at_least(1, "positive")
non_negative_int = int_at_least(0, "non-negative")


def gpu_share(text: str) -> float:
    """An argparse ``type`` for a Ray GPU request: a fraction in (0, 1] or a whole number of GPUs."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not (0 < value <= 1 or (value > 1 and value.is_integer())):
        raise argparse.ArgumentTypeError(f"must be a fraction in (0, 1] or a whole number of GPUs, got {text}")
    return value
