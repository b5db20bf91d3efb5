"""``tools/entropy_jitter.py``: its entropies are the library's, and its jitters differ only where
the covariance is near singular."""

import pytest
import torch as th
from helpers import load_tool

from sb3_maxdiff.common.entropy import make_path_entropy


@pytest.fixture(scope="module")
def tool():
    return load_tool("entropy_jitter")


@pytest.mark.parametrize("window", [False, True])
def test_with_the_diagonal_jitter_the_tool_gives_the_library_s_entropy(tool, window):
    settings = make_path_entropy(10, 40, dims=[0, 1, 5, 6], weights=[1.0, 1.0, 0.05, 0.05], window=window)
    paths = th.cumsum(th.randn(7, 40, 10, generator=th.Generator().manual_seed(0)), dim=1)
    ours = tool.entropies(settings.covariances(paths), "diagonal")
    assert th.allclose(ours.float(), settings(paths), rtol=1e-4, atol=1e-4)


def test_the_two_jitters_agree_on_a_spread_path_and_not_on_a_nearly_still_one(tool):
    settings = make_path_entropy(4, 40, window=True)
    generator = th.Generator().manual_seed(1)
    spread = th.cumsum(th.randn(64, 40, 4, generator=generator), dim=1)
    still = spread * 1e-6  # covariance eigenvalues around 1e-12, below the 1e-8 jitter
    for paths, agree in ((spread, True), (still, False)):
        covariances = settings.covariances(paths)
        diagonal = tool.entropies(covariances, "diagonal")
        entries = tool.entropies(covariances, "entries", th.Generator().manual_seed(2))
        correlation = th.corrcoef(th.stack([diagonal, entries]))[0, 1]
        assert (correlation > 0.999) == agree, float(correlation)
    with pytest.raises(ValueError, match="jitter must be one of"):
        tool.entropies(covariances, "identity")
