"""
RL Zoo video recording of a trained agent (rl_zoo3 ``record_video`` arguments)::

    python -m sb3_maxdiff.record_video --algo maxdiff --env sb3_maxdiff/PointMass-beta0_01-v0 -f logs/ -n 1000
"""

import runpy

from sb3_maxdiff.cli import run_on_trained_agent


def _record_video() -> None:
    runpy.run_module("rl_zoo3.record_video", run_name="__main__")  # a script in rl_zoo3


def main(argv: list[str] | None = None) -> None:
    run_on_trained_agent("python -m sb3_maxdiff.record_video", argv, _record_video)


if __name__ == "__main__":
    main()
