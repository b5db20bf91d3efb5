import json
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_demo_runs_with_a_tiny_budget(tmp_path):
    subprocess.run(
        [sys.executable, str(ROOT / "examples" / "demo_point_mass.py"), "--steps", "1100", "--out", str(tmp_path)],
        check=True,
        timeout=300,
    )
    assert (tmp_path / "point_mass_learning_curves.png").stat().st_size > 10_000
    results = json.loads((tmp_path / "returns.json").read_text())
    for method in ("MaxDiff", "NN-MPPI"):
        assert len(results[method]["returns"]) == 1  # one 1000-step episode finished


@pytest.mark.expensive
def test_quickstart(tmp_path):
    subprocess.run([sys.executable, str(ROOT / "examples" / "quickstart.py")], check=True, cwd=tmp_path, timeout=900)
    assert (tmp_path / "maxdiff_point_mass.zip").exists()
