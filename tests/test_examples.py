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
    assert (tmp_path / "point_mass_paths_and_returns.png").stat().st_size > 10_000
    results = json.loads((tmp_path / "returns.json").read_text())
    for method in ("MaxDiff", "NN-MPPI"):
        result = results[method]
        assert len(result["returns"]) >= 1  # a 1000-step episode, or shorter ones that left the box
        assert sum(len(path) for path in result["paths"]) == 1100  # one (x, y) point per step
        assert len(result["paths"]) in (len(result["returns"]), len(result["returns"]) + 1)
        assert 0.0 < result["coverage"] <= 1.0
        assert len(result["msd_exponent"]) == len(result["autocorr_time"]) >= 1


@pytest.mark.expensive
def test_quickstart(tmp_path):
    subprocess.run([sys.executable, str(ROOT / "examples" / "quickstart.py")], check=True, cwd=tmp_path, timeout=900)
    assert (tmp_path / "maxdiff_point_mass.zip").exists()
