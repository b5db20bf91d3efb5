"""
The command line of ``python -m sb3_maxdiff.hub``: rl_zoo3's ``push_to_hub`` / ``load_from_hub`` with their own
options, plus this package's (``--n-eval-episodes``, ``--no-video``, and ``package``'s ``--output``).
"""

import argparse
import contextlib
import os
import runpy
import sys

from sb3_maxdiff.cli import (
    check_log_folder,
    fail,
    load_zoo,
    option_value,
    positive_int,
    unreachable,
    with_option_value,
)
from sb3_maxdiff.envs.rendering import choose_offscreen_backend, ffmpeg_executable
from sb3_maxdiff.hub.patches import PackageOnlyMessages, ensure_hf_integration_compat, rl_zoo3_patched

COMMANDS = {"push": "rl_zoo3.push_to_hub", "load": "rl_zoo3.load_from_hub", "package": "rl_zoo3.push_to_hub"}
# the organization a package names in its model card when -orga is not given (package uploads nothing)
PACKAGE_ORGANIZATION = "your-hf-user"


def _video_options(options: list[str], no_video: bool) -> tuple[list[str], str | None]:
    """
    rl_zoo3's options for the replay video, and the ffmpeg to encode it with: the video is made where MuJoCo can
    render (a display, else EGL, else OSMesa; see :func:`choose_offscreen_backend`) and an ffmpeg is there (on the
    PATH or imageio-ffmpeg's); otherwise ``--no-render`` is added and one line says why and how to get the video.
    """
    if no_video or "--no-render" in options:
        return [*options, "--no-render"] if "--no-render" not in options else options, None
    why = None
    backend = choose_offscreen_backend()
    ffmpeg = ffmpeg_executable()
    if backend is None:
        why = (
            "there is no display and MuJoCo renders neither through EGL nor through OSMesa here (install Mesa's EGL or "
            "OSMesa library, or set MUJOCO_GL to a backend that works)"
        )
    elif ffmpeg is None:
        why = "no ffmpeg was found (put one on the PATH, or pip install imageio-ffmpeg)"
    if why is not None:
        print(f"No replay video: {why}; the rest is made as usual (--no-video skips this check).")
        return [*options, "--no-render"], None
    print(f"Replay video: MuJoCo renders through {backend}, ffmpeg is {ffmpeg}.")
    return options, ffmpeg


def _our_options(command: str) -> argparse.ArgumentParser:
    """The options this package adds to rl_zoo3's for ``command``."""
    parser = argparse.ArgumentParser(prog=f"python -m sb3_maxdiff.hub {command}", add_help=False)
    if command in ("push", "package"):
        group = parser.add_argument_group("sb3_maxdiff options")
        group.add_argument(
            "--n-eval-episodes",
            type=positive_int,
            default=10,
            help="episodes of the evaluation that goes into the model card (default 10, as rl_zoo3)",
        )
        group.add_argument(
            "--no-video",
            action="store_true",
            help="make no replay video (as rl_zoo3's --no-render); by default one is made where MuJoCo can render "
            "(a display, else EGL, else OSMesa) and an ffmpeg is there (on the PATH, or imageio-ffmpeg's)",
        )
        if command == "package":
            group.add_argument("--output", help="folder to write the package to (required)")
            group.add_argument(
                "-orga",
                "--organization",
                default=PACKAGE_ORGANIZATION,
                help=f"the Hub user or organization the model card names (optional: nothing is uploaded; default "
                f"{PACKAGE_ORGANIZATION!r})",
            )
    return parser


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m sb3_maxdiff.hub",
        description="Share trained models on the Hugging Face Hub: push (package and upload a run of the log "
        "folder), load (download one into a log folder), or package (build the same folder locally, no upload), "
        "with rl_zoo3's push_to_hub / load_from_hub.",
        epilog="Each command takes rl_zoo3's options (push and package also --n-eval-episodes, package --output DIR): "
        "python -m sb3_maxdiff.hub <command> -h",
    )
    parser.add_argument("command", choices=list(COMMANDS), help="what to do")
    parser.add_argument("options", nargs=argparse.REMAINDER, help="rl_zoo3's options of that command")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    prog = f"python -m sb3_maxdiff.hub {args.command}"
    zoo = load_zoo(prog)
    wants_help = any(option in ("-h", "--help") for option in args.options)
    ours = _our_options(args.command)
    extra, options = ours.parse_known_args(args.options)
    if wants_help:
        print(ours.format_help())  # then rl_zoo3's parser prints its own options and exits
    elif args.command == "package" and extra.output is None:
        fail(prog, "--output DIR is required: the folder to write the package to")
    elif args.command in ("push", "package"):
        check_log_folder(prog, options)
    if args.command == "package":
        options = [*options, "-orga", extra.organization]  # rl_zoo3 requires it; package uploads nothing
    ffmpeg = None
    if args.command in ("push", "package") and not wants_help:
        options, ffmpeg = _video_options(options, extra.no_video)
    zoo.register_with_zoo()
    ensure_hf_integration_compat()
    with contextlib.ExitStack() as stack:
        if args.command in ("push", "package") and not wants_help:
            options = with_option_value(options, ("-f", "--folder"), os.path.abspath)  # the command runs elsewhere
            where = f"copied to {extra.output} at the end" if args.command == "package" else "uploaded from there"
            print(f"The package is built in a temporary folder (removed afterwards) and {where}.")
            algo = option_value(options, "--algo") or ""
            organization = option_value(options, "-orga", "--organization") or ""
            stack.enter_context(
                rl_zoo3_patched(
                    args.command, algo, organization, extra.n_eval_episodes, getattr(extra, "output", None), ffmpeg
                )
            )
        stack.enter_context(zoo.command_line(options))
        sys.argv[0] = f"sb3_maxdiff.hub {args.command}"
        try:
            # scripts in rl_zoo3; package's has no upload to announce
            script_globals = {"print": PackageOnlyMessages.print} if args.command == "package" else None
            runpy.run_module(COMMANDS[args.command], init_globals=script_globals, run_name="__main__")
        except Exception as error:
            network_error = unreachable(error)
            if network_error is None:
                raise
            offline = (
                " `python -m sb3_maxdiff.hub package ... --output DIR` builds the same folder offline."
                if args.command == "push"
                else ""
            )
            fail(prog, f"cannot reach the Hugging Face Hub ({type(network_error).__name__}: {network_error}).{offline}")
