"""
RL Zoo evaluation and rendering of a trained agent (rl_zoo3 ``enjoy`` arguments)::

    python -m sb3_maxdiff.enjoy --algo maxdiff --env sb3_maxdiff/PointMass-beta0_01-v0 -f logs/ --no-render
"""

import importlib

from sb3_maxdiff.cli import run_on_trained_agent


def main(argv: list[str] | None = None) -> None:
    run_on_trained_agent("python -m sb3_maxdiff.enjoy", argv, lambda: importlib.import_module("rl_zoo3.enjoy").enjoy())


if __name__ == "__main__":
    main()
