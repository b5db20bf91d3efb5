"""``python -m sb3_maxdiff.experiments <command> ...``: the experiment tools."""

import sys

from sb3_maxdiff.experiments import report, runner, single_shot, transfer

COMMANDS = {"run": runner.main, "report": report.main, "single-shot": single_shot.main, "transfer": transfer.main}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] not in COMMANDS:
        print(f"usage: python -m sb3_maxdiff.experiments {{{','.join(COMMANDS)}}} [options]; add -h for a command's options")
        raise SystemExit(2)
    code = COMMANDS[argv[0]](argv[1:], prog=f"python -m sb3_maxdiff.experiments {argv[0]}")
    return code if isinstance(code, int) else 0


if __name__ == "__main__":
    sys.exit(main())
