"""
RL Zoo training with sb3-maxdiff's algorithms and hyperparameters::

    python -m sb3_maxdiff.train --algo maxdiff --env sb3_maxdiff/Swimmer-heavy-v0

Takes every rl_zoo3 ``train`` argument; ``--algo`` also accepts maxdiff, nnmppi and sac_maxdiff, and
our ``hyperparams/<algo>.yml`` is the default config (``-conf`` overrides it).
"""

import sys

from sb3_maxdiff.cli import load_zoo


def main(argv: list[str] | None = None) -> None:
    zoo = load_zoo("python -m sb3_maxdiff.train")
    zoo.register_with_zoo()
    from rl_zoo3.train import train

    args = zoo.with_defaults(sys.argv[1:] if argv is None else argv)
    zoo.prepare_study(args)
    with zoo.command_line(args):
        train()


if __name__ == "__main__":
    main()
