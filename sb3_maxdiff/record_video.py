"""
RL Zoo video recording of a trained agent (rl_zoo3 ``record_video`` arguments)::

    python -m sb3_maxdiff.record_video --algo maxdiff --env sb3_maxdiff/PointMass-beta0_01-v0 -f logs/ -n 1000
"""

import runpy
import sys

from sb3_maxdiff.zoo import command_line, register_with_zoo


def main(argv: list[str] | None = None) -> None:
    register_with_zoo()
    with command_line(sys.argv[1:] if argv is None else argv):
        runpy.run_module("rl_zoo3.record_video", run_name="__main__")  # a script in rl_zoo3


if __name__ == "__main__":
    main()
