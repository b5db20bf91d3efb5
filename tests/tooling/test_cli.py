"""The helpers the command-line entry points share: whole-number options and reading rl_zoo3's options."""

import argparse
import os

import pytest

from sb3_maxdiff.cli import has_option, int_at_least, option_value, positive_int, with_option_value


def test_option_value_reads_both_forms_and_takes_the_last_as_argparse_does():
    argv = ["--algo", "maxdiff", "-f=logs", "--env", "Swimmer-v5", "--folder", "other", "--storage=sqlite:///x.db"]
    parser = argparse.ArgumentParser()
    parser.add_argument("-f", "--folder")
    assert option_value(argv, "-f", "--folder") == parser.parse_known_args(argv)[0].folder == "other"
    assert option_value(argv, "--algo") == "maxdiff"
    assert option_value(argv, "--storage") == "sqlite:///x.db"
    assert option_value(argv, "--study-name") is None
    assert option_value(["--algo"], "--algo") is None  # no value after it
    assert option_value(["--algorithm", "x"], "--algo") is None  # another option that starts the same


def test_has_option_sees_flags_and_values_in_either_form():
    assert has_option(["-optimize", "--algo", "x"], "-optimize", "--optimize-hyperparameters")
    assert has_option(["--storage=sqlite:///x.db"], "--storage")
    assert not has_option(["--storage-type", "x"], "--storage")


def test_with_option_value_changes_every_value_and_nothing_else(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    argv = ["--algo", "maxdiff", "-f", "logs", "--folder=more", "--env", "f"]
    changed = with_option_value(argv, ("-f", "--folder"), os.path.abspath)
    assert changed == ["--algo", "maxdiff", "-f", str(tmp_path / "logs"), f"--folder={tmp_path / 'more'}", "--env", "f"]
    assert argv[3] == "logs"  # the given list is left as it was


@pytest.mark.parametrize("text", ["0", "-1", "two", "1e3", "1.5", ""])
def test_positive_int_refuses_what_is_not_a_whole_number_above_zero(text):
    with pytest.raises(argparse.ArgumentTypeError, match=f"must be a positive integer, got {text}"):
        positive_int(text)


def test_int_at_least_accepts_its_minimum():
    assert int_at_least(0, "non-negative")("0") == 0 and positive_int("+3") == 3
