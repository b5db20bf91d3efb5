"""
RL Zoo evaluation and rendering of a trained agent (rl_zoo3 ``enjoy`` arguments)::

    python -m sb3_maxdiff.enjoy --algo maxdiff --env sb3_maxdiff/PointMass-beta0_01-v0 -f logs/ --no-render
"""

import sys

from sb3_maxdiff.zoo import command_line, register_with_zoo


def main(argv: list[str] | None = None) -> None:
    register_with_zoo()
    from rl_zoo3.enjoy import enjoy

    with command_line(sys.argv[1:] if argv is None else argv):
        enjoy()


if __name__ == "__main__":
    main()
