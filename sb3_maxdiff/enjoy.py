"""
RL Zoo evaluation and rendering of a trained agent (rl_zoo3 ``enjoy`` arguments)::

    python -m sb3_maxdiff.enjoy --algo maxdiff --env sb3_maxdiff/PointMass-beta0_01-v0 -f logs/ --no-render
"""

import sys

from sb3_maxdiff.cli import check_log_folder, load_zoo


def main(argv: list[str] | None = None) -> None:
    prog = "python -m sb3_maxdiff.enjoy"
    zoo = load_zoo(prog)
    args = sys.argv[1:] if argv is None else argv
    check_log_folder(prog, args)
    zoo.register_with_zoo()
    from rl_zoo3.enjoy import enjoy

    with zoo.command_line(args):
        enjoy()


if __name__ == "__main__":
    main()
