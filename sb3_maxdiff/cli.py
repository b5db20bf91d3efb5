"""
What the entry points that drive RL Zoo and the Hub (train, enjoy, record_video, hub) share: loading the RL Zoo glue
with a one-line error where its extra is missing, checking a log folder before rl_zoo3 looks in it, and telling an
unreachable Hub from other errors. The helpers that know nothing of RL Zoo are in :mod:`sb3_maxdiff.command_line`
(re-exported here for the entry points).
"""

import argparse
import importlib
import os
import socket
import sys
from collections.abc import Callable
from types import ModuleType

from sb3_maxdiff.command_line import (
    EXIT_FAILURE,
    fail,
    has_option,
    int_at_least,
    non_negative_int,
    option_value,
    positive_int,
    with_option_value,
)

__all__ = [
    "EXIT_FAILURE",
    "check_log_folder",
    "fail",
    "has_option",
    "int_at_least",
    "load_zoo",
    "non_negative_int",
    "option_value",
    "positive_int",
    "run_on_trained_agent",
    "unreachable",
    "with_option_value",
]


def load_zoo(prog: str) -> ModuleType:
    """The RL Zoo glue (:mod:`sb3_maxdiff.zoo`), or one line saying which extra brings it."""
    try:
        return importlib.import_module("sb3_maxdiff.zoo")
    except ImportError as error:
        fail(prog, str(error))


def check_log_folder(prog: str, argv: list[str]) -> None:
    """
    Refuse, in one line, to look for a trained agent in a log folder that does not hold runs of the algorithm
    (rl_zoo3 would end in an assertion's traceback).
    """
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--algo")
    parser.add_argument("--env")
    parser.add_argument("-f", "--folder", "--log-folder", dest="folder")
    known, _ = parser.parse_known_args(argv)
    if known.algo is None or known.folder is None or "-h" in argv or "--help" in argv:
        return  # argparse names what is missing
    runs = os.path.join(known.folder, known.algo)
    if not os.path.isdir(runs):
        env = known.env or "<env id>"
        fail(
            prog,
            f"no {known.algo} runs in the log folder {known.folder!r} ({runs} not found); "
            f"train one with: python -m sb3_maxdiff.train --algo {known.algo} --env {env} -f {known.folder}",
        )


def run_on_trained_agent(prog: str, argv: list[str] | None, command: Callable[[], object]) -> None:
    """
    Run an rl_zoo3 command that loads a trained agent (``enjoy``, ``record_video``) on the arguments ``argv``
    (default: the command line), with our algorithms registered and the log folder checked first.
    """
    zoo = load_zoo(prog)
    args = sys.argv[1:] if argv is None else argv
    check_log_folder(prog, args)
    zoo.register_with_zoo()
    with zoo.command_line(args):
        command()


def _network_errors() -> tuple[type[BaseException], ...]:
    """The exception types that mean "the Hub could not be reached", from whichever HTTP clients are installed."""
    types: list[type[BaseException]] = [ConnectionError, TimeoutError, socket.gaierror]
    for module_name, names in (
        ("httpx2", ("TransportError",)),
        ("httpx", ("TransportError",)),
        ("requests.exceptions", ("ConnectionError", "Timeout")),
        ("huggingface_hub.errors", ("OfflineModeIsEnabled",)),
    ):
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        types += [getattr(module, name) for name in names if isinstance(getattr(module, name, None), type)]
    return tuple(types)


def unreachable(error: BaseException) -> BaseException | None:
    """The network error behind ``error`` (itself, or one it was raised from), if any."""
    network_errors = _network_errors()
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        if isinstance(current, network_errors):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None
