"""``python -m sb3_maxdiff.experiments <command> ...``: the experiment tools."""

import argparse
import sys

from sb3_maxdiff.experiments.analyse import report
from sb3_maxdiff.experiments.commands import episode_commands, run_command, single_shot_command
from sb3_maxdiff.experiments.run import transfer

COMMANDS = {
    "run": run_command.main,
    "report": report.main,
    "export": episode_commands.export_main,
    "tabulate": episode_commands.tabulate_main,
    "single-shot": single_shot_command.main,
    "transfer": transfer.main,
}
SUMMARIES = {
    "run": "train and evaluate the (setting, method, seed) runs of a paper preset, resuming what is on disk",
    "report": "tables, Welch t-tests and figures of the finished runs",
    "export": "one CSV of every training and evaluation episode of the finished runs, with their diagnostics",
    "tabulate": "per-seed tables and tests from such a CSV",
    "single-shot": "one reset-free training run, returns per window",
    "transfer": "evaluate a trained swimmer on both tails",
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m sb3_maxdiff.experiments",
        description="The paper's experiments: " + "; ".join(f"{name}: {text}" for name, text in SUMMARIES.items()) + ".",
        epilog="Each command has its own options: python -m sb3_maxdiff.experiments <command> -h",
    )
    parser.add_argument("command", choices=list(COMMANDS), help="what to do")
    parser.add_argument("options", nargs=argparse.REMAINDER, help="the command's options")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    return COMMANDS[args.command](args.options, prog=f"python -m sb3_maxdiff.experiments {args.command}")


if __name__ == "__main__":
    sys.exit(main())
