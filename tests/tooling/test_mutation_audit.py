"""The mutation audit (``tools/mutation_audit.py``): its mutants still apply to the code, and a mutant is caught."""

from pathlib import Path

import pytest
from helpers import load_tool

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def audit():
    return load_tool("mutation_audit")


def test_every_mutant_changes_one_place_of_the_code_as_it_is(audit):
    """A change to the library that moves a mutant's text must move the mutant too (or the audit would skip it)."""
    names = [mutant.name for mutant in audit.MUTANTS]
    assert len(names) == len(set(names))
    for mutant in audit.MUTANTS:
        text = (ROOT / mutant.path).read_text()
        assert text.count(mutant.old) == 1, mutant.name
        assert mutant.new != mutant.old
    assert all((ROOT / path).exists() for path in audit.TESTS + audit.ANALYSIS_TESTS)


@pytest.mark.skipif(not (ROOT / ".git").exists(), reason="the audit copies the committed tree of the git repository")
def test_a_mutant_is_caught_by_the_test_of_what_it_breaks_and_survives_another(audit, capsys):
    catching = "tests/common/test_entropy.py::test_time_covariance_matches_numpy"
    assert audit.main(["--only", "cov_biased", "--tests", catching]) == 0
    printed = capsys.readouterr().out
    assert "cov_biased: caught" in printed and f"FAILED {catching}" in printed and "1 of 1 mutants caught" in printed
    blind = "tests/common/test_buffers.py::test_next_action_and_masks"  # knows nothing of the entropy
    assert audit.main(["--only", "cov_biased", "--tests", blind]) == 1
    assert "cov_biased: SURVIVED" in capsys.readouterr().out
