import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]


def readme_commands() -> list[str]:
    return re.findall(r"```bash\n(.+?)\n```", (ROOT / "README.md").read_text())


def test_readme_has_exactly_two_commands():
    commands = readme_commands()
    assert len(commands) == 2, commands
    assert "examples/demo_swimmer.py" in commands[0] and "pytest" in commands[1]
    assert all("\n" not in command for command in commands)  # each one line, to paste as it is


def test_ci_runs_the_readme_test_command():
    ci_lines = (ROOT / ".ci" / "run").read_text().splitlines()
    assert readme_commands()[1] in ci_lines
