import numpy as np
import pytest
import torch as th

from sb3_maxdiff.common.entropy import (
    PathEntropySettings,
    default_window_size,
    entropy_from_covariance,
    make_path_entropy,
    path_entropy,
    time_covariance,
    window_covariances,
)


def paths_with_covariance(cov: np.ndarray, length: int = 50, seed: int = 0) -> th.Tensor:
    """A path of `length` states whose unbiased sample covariance is exactly `cov`."""
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(length, cov.shape[0]))
    z -= z.mean(axis=0)
    # whiten so that the sample covariance of z is the identity, then colour it
    whitening = np.linalg.cholesky(np.atleast_2d(np.cov(z, rowvar=False)))
    z = z @ np.linalg.inv(whitening).T
    return th.as_tensor(z @ np.linalg.cholesky(cov).T + rng.normal(size=cov.shape[0]), dtype=th.float64)


@pytest.fixture
def known_cov() -> np.ndarray:
    a = np.array([[2.0, 0.3, 0.0], [0.3, 1.0, -0.2], [0.0, -0.2, 0.5]])
    return a


def test_time_covariance_matches_numpy():
    x = th.randn(3, 20, 4, dtype=th.float64)
    expected = np.stack([np.cov(path, rowvar=False) for path in x.numpy()])
    np.testing.assert_allclose(time_covariance(x).numpy(), expected, rtol=1e-10)


def test_logdet_equals_analytic(known_cov):
    paths = paths_with_covariance(known_cov)
    expected = 0.5 * np.log(np.linalg.det(known_cov))
    assert path_entropy(paths).item() == pytest.approx(expected, rel=1e-6)


def test_weights_scale_the_covariance(known_cov):
    paths = paths_with_covariance(known_cov)
    weights = th.tensor([1.0, 2.0, 0.05], dtype=th.float64)
    weighted_cov = np.diag(weights.numpy()) @ known_cov @ np.diag(weights.numpy())
    weighted = path_entropy(paths, weights, jitter=0.0).item()
    assert weighted == pytest.approx(0.5 * np.log(np.linalg.det(weighted_cov)), rel=1e-9)
    # log det(W C W) = log det C + 2 sum log w
    shift = np.log(weights.numpy()).sum()
    assert weighted == pytest.approx(path_entropy(paths, jitter=0.0).item() + shift, rel=1e-9)


def test_top_eigs_variant(known_cov):
    paths = paths_with_covariance(known_cov)
    eigenvalues = np.sort(np.linalg.eigvalsh(known_cov))[::-1]
    full = path_entropy(paths, method="top_eigs", top_m=3).item()
    assert full == pytest.approx(path_entropy(paths).item(), rel=1e-6)
    assert path_entropy(paths, method="top_eigs", top_m=2).item() == pytest.approx(
        0.5 * np.log(eigenvalues[:2]).sum(), rel=1e-6
    )
    assert path_entropy(paths, method="top_eigs", top_m=1).item() == pytest.approx(0.5 * np.log(eigenvalues[0]), rel=1e-6)


def test_log_trace_variant(known_cov):
    paths = paths_with_covariance(known_cov)
    assert path_entropy(paths, method="log_trace").item() == pytest.approx(0.5 * np.log(np.trace(known_cov)), rel=1e-6)


def test_log_trace_equals_logdet_in_one_dimension():
    paths = paths_with_covariance(np.array([[3.0]]))
    assert path_entropy(paths, method="log_trace").item() == pytest.approx(path_entropy(paths).item(), rel=1e-6)


def test_windows_average_per_window_entropies():
    paths = th.randn(2, 40, 3, dtype=th.float64)
    window, stride = 10, 3
    starts = range(0, 40 - window + 1, stride)
    expected = th.stack([path_entropy(paths[:, s : s + window]) for s in starts]).mean(dim=0)
    th.testing.assert_close(path_entropy(paths, window=window), expected)


def test_window_covariances_are_numpy_s_covariances_of_the_weighted_windows():
    paths = th.randn(2, 30, 3, dtype=th.float64)
    weights = th.tensor([1.0, 0.5, 2.0], dtype=th.float64)
    weighted = paths.numpy() * weights.numpy()
    window, stride = 8, 5
    starts = range(0, 30 - window + 1, stride)  # 0, 5, ..., 20: 5 windows
    expected = np.stack([np.stack([np.cov(path[s : s + window], rowvar=False) for s in starts]) for path in weighted])
    covariances = window_covariances(paths, weights, window, stride)
    assert covariances.shape == (2, 5, 3, 3)
    np.testing.assert_allclose(covariances.numpy(), expected, rtol=1e-10)
    whole = window_covariances(paths, weights)  # one window: the whole path
    np.testing.assert_allclose(whole.numpy(), np.stack([np.cov(path, rowvar=False) for path in weighted])[:, None], rtol=1e-10)


def test_settings_covariances_select_the_dims_and_give_the_settings_entropy():
    settings = make_path_entropy(5, 40, dims=[0, 3], weights=[1.0, 0.1], window=True)
    paths = th.cumsum(th.randn(4, 40, 5, dtype=th.float64), dim=1)
    covariances = settings.covariances(paths)
    n_windows = len(range(0, 40 - settings.window + 1, max(settings.window // 3, 1)))
    assert covariances.shape == (4, n_windows, 2, 2)
    th.testing.assert_close(
        covariances, window_covariances(paths[..., [0, 3]], th.tensor([1.0, 0.1]).double(), settings.window)
    )
    th.testing.assert_close(settings(paths), entropy_from_covariance(covariances).mean(dim=-1))


def test_diffusing_path_has_more_entropy_than_a_straight_line():
    t = th.linspace(0, 1, 30, dtype=th.float64)[:, None]
    line = th.cat([t, 2 * t], dim=1)  # rank-one covariance
    walk = th.cumsum(th.randn(30, 2, dtype=th.float64), dim=0)
    assert path_entropy(walk).item() > path_entropy(line).item()


def test_singular_covariance_is_finite_and_sign_safe():
    constant = th.ones(1, 10, 3)
    value = path_entropy(constant)
    assert th.isfinite(value).all()
    # jitter only: 0.5 * log det(1e-8 * I)
    assert value.item() == pytest.approx(0.5 * 3 * np.log(1e-8), rel=1e-3)


def test_random_jitter_is_the_authors_draw_on_every_entry():
    """
    ``jitter="random"``: ``0.5 log |det(C + 1e-8 N)|`` with N standard normal in every entry (not symmetric), new for
    every path and window, from the generator given; on a well-conditioned C the draw changes nothing measurable.
    """
    random, diagonal = PathEntropySettings(window=10, jitter="random"), PathEntropySettings(window=10)
    walks = th.cumsum(th.randn(4, 40, 3, dtype=th.float64), dim=-2)
    assert th.allclose(random(walks, th.Generator().manual_seed(1)), diagonal(walks), rtol=0, atol=1e-6)
    # constant paths: C = 0, so the entropy is the draw's alone, window by window
    constant = th.ones(2, 40, 3, dtype=th.float64)
    covariances = random.covariances(constant)  # (2, n_windows, 3, 3), all zero
    assert covariances.abs().max() == 0 and covariances.shape[1] > 1
    draw = th.randn(covariances.shape, dtype=th.float64, generator=th.Generator().manual_seed(7))
    expected = (0.5 * th.linalg.slogdet(1e-8 * draw).logabsdet).mean(dim=-1)
    assert th.equal(random(constant, th.Generator().manual_seed(7)), expected)
    assert not th.equal(expected[0], expected[1])  # a new draw for each path
    assert th.equal(diagonal(constant), th.full((2,), 0.5 * 3 * np.log(1e-8), dtype=th.float64))


def test_batched_shapes():
    paths = th.randn(5, 7, 30, 4)
    assert path_entropy(paths).shape == (5, 7)
    assert path_entropy(paths, window=8).shape == (5, 7)


def test_entropy_from_covariance_errors():
    with pytest.raises(ValueError, match="method"):
        entropy_from_covariance(th.eye(2), method="bad")
    with pytest.raises(ValueError, match="top_m"):
        entropy_from_covariance(th.eye(2), method="top_eigs", top_m=3)
    with pytest.raises(ValueError, match="paths"):
        time_covariance(th.zeros(1, 3))
    with pytest.raises(ValueError, match="weights"):
        path_entropy(th.randn(10, 3), th.ones(2))
    with pytest.raises(ValueError, match="window"):
        path_entropy(th.randn(10, 3), window=11)


def test_make_path_entropy_validation():
    term = make_path_entropy(obs_dim=10, horizon=40, dims=[0, 1, 5, 6], weights=[1, 1, 0.05, 0.05], window=True)
    assert term.window == default_window_size(40, 4) == 10
    assert term(th.randn(3, 40, 10)).shape == (3,)
    with pytest.raises(ValueError, match="explr_dims"):
        make_path_entropy(obs_dim=4, horizon=10, dims=[0, 4])
    with pytest.raises(ValueError, match="explr_weights"):
        make_path_entropy(obs_dim=4, horizon=10, dims=[0, 1], weights=[1.0])
    with pytest.raises(ValueError, match="window"):
        make_path_entropy(obs_dim=4, horizon=10, window=11)
    with pytest.raises(ValueError, match="entropy_method"):
        make_path_entropy(obs_dim=4, horizon=10, method="det")
    with pytest.raises(ValueError, match="entropy_top_m"):
        make_path_entropy(obs_dim=4, horizon=10, method="top_eigs", top_m=5)
    with pytest.raises(ValueError, match="horizon"):
        make_path_entropy(obs_dim=4, horizon=1)
    assert make_path_entropy(obs_dim=4, horizon=10, jitter="random").jitter == "random"
    assert make_path_entropy(obs_dim=4, horizon=10).jitter == "diagonal"
    with pytest.raises(ValueError, match="entropy_jitter must be one of"):
        make_path_entropy(obs_dim=4, horizon=10, jitter="entries")
    with pytest.raises(ValueError, match="needs entropy_method='logdet'"):
        make_path_entropy(obs_dim=4, horizon=10, method="top_eigs", jitter="random")


def test_logdet_weights_shift_every_path_by_the_same_constant():
    # log det(W C W) = log det C + 2 sum log w: with "logdet", explr_weights cannot change which path scores higher
    th.manual_seed(0)
    paths = th.randn(50, 30, 4, dtype=th.float64).cumsum(dim=1)
    weights = th.tensor([1.0, 1.0, 0.01, 0.01], dtype=th.float64)
    plain = path_entropy(paths, jitter=0.0)
    weighted = path_entropy(paths, weights, jitter=0.0)
    th.testing.assert_close(weighted - plain, th.full_like(plain, weights.log().sum().item()))
