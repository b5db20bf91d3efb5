"""
The command-line helpers every entry point shares, and which know nothing of RL Zoo: they end an expected failure
with one line that names the problem and what to do, and a non-zero exit status, instead of a traceback; they parse
whole-number options with one argparse type; and they read the options passed on to another command line (``--name
value`` or ``--name=value``) with one set of helpers.
"""

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import NoReturn

EXIT_FAILURE = 1


def fail(prog: str, message: str) -> NoReturn:
    """Print ``<prog>: error: <message>`` on stderr and exit with status 1."""
    print(f"{prog}: error: {message}", file=sys.stderr)
    raise SystemExit(EXIT_FAILURE)


def int_at_least(minimum: int, what: str) -> Callable[[str], int]:
    """An argparse ``type`` that accepts whole numbers >= ``minimum`` and names ``what`` it wanted otherwise."""

    def parse(text: str) -> int:
        if not text.lstrip("+-").isdigit() or int(text) < minimum:
            raise argparse.ArgumentTypeError(f"must be a {what} integer, got {text}")
        return int(text)

    return parse


positive_int = int_at_least(1, "positive")
non_negative_int = int_at_least(0, "non-negative")


def option_value(argv: Sequence[str], *names: str) -> str | None:
    """
    The value given on a command line to the option called one of ``names``, as ``--name value`` or
    ``--name=value``; where it is given twice, the last one (as argparse takes it); None where it is not given.
    """
    value = None
    for index, arg in enumerate(argv):
        for name in names:
            if arg == name and index + 1 < len(argv):
                value = argv[index + 1]
            elif arg.startswith(f"{name}="):
                value = arg.split("=", 1)[1]
    return value


def has_option(argv: Sequence[str], *names: str) -> bool:
    """Whether the command line gives the option called one of ``names`` (a flag, or with a value in either form)."""
    return any(arg == name or arg.startswith(f"{name}=") for arg in argv for name in names)


def with_option_value(argv: Sequence[str], names: Sequence[str], change: Callable[[str], str]) -> list[str]:
    """``argv`` with every value of the option called one of ``names`` (either form) replaced by ``change(value)``."""
    changed = list(argv)
    for index, arg in enumerate(changed):
        for name in names:
            if arg == name and index + 1 < len(changed):
                changed[index + 1] = change(changed[index + 1])
            elif arg.startswith(f"{name}="):
                changed[index] = f"{name}={change(arg.split('=', 1)[1])}"
    return changed
