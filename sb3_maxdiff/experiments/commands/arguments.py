"""
Argument types shared by the experiment commands (``run``, ``single-shot``, ``transfer``): each refuses a bad
value with a message that says what it wanted, which argparse prefixes with the option's name.
"""

import argparse
import json
import re
import time
from typing import Any

from sb3_maxdiff.command_line import int_at_least, non_negative_int, positive_int

__all__ = [
    "describe_time_limit",
    "duration_seconds",
    "gpu_share",
    "int_at_least",
    "json_kwargs",
    "non_negative_int",
    "positive_int",
]


def gpu_share(text: str) -> float:
    """An argparse ``type`` for a Ray GPU request: a fraction in (0, 1] or a whole number of GPUs."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not (0 < value <= 1 or (value > 1 and value.is_integer())):
        raise argparse.ArgumentTypeError(f"must be a fraction in (0, 1] or a whole number of GPUs, got {text}")
    return value


def json_kwargs(text: str) -> dict[str, Any]:
    """An argparse ``type`` for keyword arguments written as a JSON object, e.g. ``'{"n_samples": 100}'``."""
    wanted = """must be a JSON object such as '{"n_samples": 100}'"""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise argparse.ArgumentTypeError(f"{wanted} ({error}), got {text}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"{wanted}, got {text}")
    return value


_DURATION = re.compile(r"^(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m)?(?:(\d+(?:\.\d+)?)s)?$")


def duration_seconds(text: str) -> float:
    """
    An argparse ``type`` for a duration: minutes as a plain number (``90``), or hours, minutes and seconds
    (``2h``, ``1h30m``, ``45m``, ``90s``); returns seconds, > 0.
    """
    stripped = text.strip().lower()
    try:
        seconds = 60.0 * float(stripped)
    except ValueError:
        match = _DURATION.match(stripped)
        if not stripped or match is None:
            raise argparse.ArgumentTypeError(
                f"must be minutes (e.g. 90) or a duration such as 2h, 1h30m, 45m or 90s, got {text}"
            ) from None
        hours, minutes, secs = (float(part) if part else 0.0 for part in match.groups())
        seconds = 3600.0 * hours + 60.0 * minutes + secs
    if not seconds > 0 or seconds == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive duration, got {text}")
    return seconds


def describe_time_limit(seconds: float, now: float | None = None) -> str:
    """
    The line a run prints when it starts with a time limit: when it stops (UTC) and how long that is from now, so
    that a limit read in the wrong unit (``--time-limit 9000`` is 9,000 minutes, not seconds) shows at once.
    """
    now = time.time() if now is None else now
    if seconds < 60.0:
        length = f"{seconds:.0f} s"
    elif seconds < 3600.0:
        length = f"{seconds / 60.0:.1f} min"
    else:
        minutes = round(seconds / 60.0)
        length = f"{minutes // 60} h {minutes % 60:02d} min"
    stop = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(now + seconds))
    return f"time limit {length}: stops by {stop} (a plain number is minutes; 90s or 2h for seconds or hours)"
