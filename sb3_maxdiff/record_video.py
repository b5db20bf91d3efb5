"""
RL Zoo video recording of a trained agent (rl_zoo3 ``record_video`` arguments)::

    python -m sb3_maxdiff.record_video --algo maxdiff --env sb3_maxdiff/PointMass-beta0_01-v0 -f logs/ -n 1000
"""

import runpy
import sys

from sb3_maxdiff.cli import check_log_folder, load_zoo


def main(argv: list[str] | None = None) -> None:
    prog = "python -m sb3_maxdiff.record_video"
    zoo = load_zoo(prog)
    args = sys.argv[1:] if argv is None else argv
    check_log_folder(prog, args)
    zoo.register_with_zoo()
    with zoo.command_line(args):
        runpy.run_module("rl_zoo3.record_video", run_name="__main__")  # a script in rl_zoo3


if __name__ == "__main__":
    main()
