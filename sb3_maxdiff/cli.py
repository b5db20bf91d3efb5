"""
What the command-line entry points (train, enjoy, record_video, hub, the experiment commands) share: they end an
expected failure (a missing extra, a missing log folder, an unreachable Hub) with one line that names the problem
and what to do, and a non-zero exit status, instead of a traceback; they parse whole-number options with one
argparse type; and they read the options they pass on to rl_zoo3 (``--name value`` or ``--name=value``) with one
pair of helpers.
"""

import argparse
import importlib
import os
import socket
import sys
from collections.abc import Callable, Sequence
from types import ModuleType
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
