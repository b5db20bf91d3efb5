"""
The planner's and MaxDiff's options against cases whose answer is known by hand: each test fails for an
implementation that ignores the option or computes it wrongly.
"""

import math

import gymnasium as gym
import numpy as np
import pytest
import torch as th
from helpers import TINY

from sb3_maxdiff import NNMPPI, MaxDiffMPPI, StepSchedule
from sb3_maxdiff.common.entropy import default_window_size, entropy_from_covariance, path_entropy, time_covariance
from sb3_maxdiff.common.mppi import MPPIPlanner, mppi_weights, smoothing_matrix, warm_start

POINT_MASS = "sb3_maxdiff/PointMass-beta1-v0"
H, M, K = 5, 2, 8


class ConstantReturn(th.nn.Module):
    """Every sample predicts the same return (``value`` per step) and stays where it started."""

    def __init__(self, value: float = 1.0):
        super().__init__()
        self.value = value

    def forward(self, state, action):
        return state, th.full(state.shape[:1], self.value)


class NegativeSquaredAction(th.nn.Module):
    """Reward ``-|a|^2`` per step, NaN where the first action component exceeds 0.2 (a diverging model)."""

    def forward(self, state, action):
        reward = -(action**2).sum(dim=-1)
        return state + action.sum(dim=-1, keepdim=True), th.where(action[:, 0] > 0.2, th.nan, reward)


def fixed_noise(monkeypatch, draws: th.Tensor) -> None:
    """The planner's ``th.randn`` returns ``draws`` (of the planner's noise shape)."""
    real = th.randn

    def randn(*shape, **kwargs):
        size = tuple(shape[0]) if len(shape) == 1 and isinstance(shape[0], (tuple, list, th.Size)) else shape
        return draws.clone() if tuple(size) == tuple(draws.shape) else real(*shape, **kwargs)

    monkeypatch.setattr(th, "randn", randn)


# ----------------------------------------------------------------------------------------------- scores


def test_the_control_term_of_a_known_noise_sequence():
    """NN-MPPI's term ``lambda * sum_t log N(eta_t; 0, sigma^2)`` (up to a constant): -0.5 * lambda * sum eta^2 / sigma^2."""
    returns, states = th.zeros(1, 2), th.zeros(1, 2, H, 3)
    noise = th.stack([th.full((H, M), 0.3), th.zeros(H, M)])[None]  # eta = sigma everywhere in sample 0
    on = MPPIPlanner(M, horizon=H, n_samples=2, temperature=0.5, noise_std=0.3, control_cost=True)
    scores, _ = on.scores(returns, noise, states)
    # sample 0: sum eta^2 / sigma^2 = H * M = 10, times 0.5 * lambda = 0.25: -2.5; sample 1: no noise, no cost
    th.testing.assert_close(scores, th.tensor([[-2.5, 0.0]]))
    off = MPPIPlanner(M, horizon=H, n_samples=2, temperature=0.5, noise_std=0.3, control_cost=False)
    assert th.equal(off.scores(returns, noise, states)[0], returns)


def test_ess_of_equal_scores_is_the_number_of_samples_and_falls_as_the_scores_spread():
    planner = MPPIPlanner(M, horizon=H, n_samples=K, control_cost=False)
    result = planner.plan(ConstantReturn(), th.zeros(1, 3), planner.initial_nominal(1, "cpu"))
    assert result.stat("ess").item() == pytest.approx(K, rel=1e-6)
    # ESS of known weights: one score far above the rest leaves one effective sample
    weights = mppi_weights(th.tensor([[100.0] + [0.0] * (K - 1)]), temperature=0.5)
    assert (1.0 / (weights**2).sum()).item() == pytest.approx(1.0, abs=1e-3)


def test_weighted_nominal_update_and_statistics_against_a_hand_computation(monkeypatch):
    planner = MPPIPlanner(M, horizon=H, n_samples=K, temperature=0.5, noise_std=0.3, control_cost=True)
    draws = th.randn(1, K, H, M, generator=th.Generator().manual_seed(4))
    previous = 0.1 * th.randn(1, H, M, generator=th.Generator().manual_seed(5))
    fixed_noise(monkeypatch, draws)
    result = planner.plan(NegativeSquaredAction(), th.zeros(1, 1), previous)
    # by hand: smoothed noise around the shifted warm start, returns -sum |a|^2 minus the control term
    nominal = warm_start(previous, None)
    noise = smoothing_matrix(H) @ (draws * 0.3)
    samples = nominal[:, None] + noise
    returns = -(samples**2).sum(dim=(-2, -1))
    returns = th.where((samples[..., 0] > 0.2).any(dim=-1), th.nan, returns)
    scores = returns - 0.5 * 0.5 * (noise**2).sum(dim=(-2, -1)) / 0.3**2
    finite = th.isfinite(scores)
    weights = mppi_weights(th.where(finite, scores, -1e30), 0.5)
    expected = nominal + th.einsum("ek,ekhm->ehm", weights, noise)
    th.testing.assert_close(result.nominal, expected)
    th.testing.assert_close(result.actions, expected[:, 0])
    th.testing.assert_close(result.stat("ess"), 1.0 / (weights**2).sum(dim=-1))
    th.testing.assert_close(result.stat("predicted_return"), (weights * th.nan_to_num(returns)).sum(dim=-1))
    # the non-finite samples are counted and get (almost) no weight; the finite ones carry the update
    n_nonfinite = int((~finite).sum())
    assert 0 < n_nonfinite < K and result.stat("nonfinite").item() == n_nonfinite
    assert weights[~finite].max() < 1e-4 and th.isfinite(result.nominal).all()


def test_path_entropy_statistic_is_the_weighted_entropy_of_the_planned_paths(monkeypatch):
    from sb3_maxdiff.common.entropy import EntropyBonus, make_path_entropy

    class Integrator(th.nn.Module):
        def forward(self, state, action):
            return state + action, th.zeros(state.shape[:1])

    entropy = make_path_entropy(obs_dim=2, horizon=H)
    planner = MPPIPlanner(M, horizon=H, n_samples=K, control_cost=False, entropy_bonus=EntropyBonus(entropy, 0.0))
    draws = th.randn(1, K, H, M, generator=th.Generator().manual_seed(6))
    fixed_noise(monkeypatch, draws)
    result = planner.plan(Integrator(), th.zeros(1, 2), planner.initial_nominal(1, "cpu"))
    samples = smoothing_matrix(H) @ (draws * planner.settings.noise_std)
    states = th.cat([th.zeros(1, K, 1, 2), samples.cumsum(dim=-2)[:, :, :-1]], dim=-2)  # s_0 .. s_{H-1}
    # alpha 0 and equal returns: uniform weights, so the statistic is the mean entropy of the paths
    expected = (0.5 * th.linalg.slogdet(time_covariance(states) + 1e-8 * th.eye(2)).logabsdet).mean()
    th.testing.assert_close(result.stat("path_entropy")[0], expected)


def test_a_random_jitter_is_drawn_from_the_planners_generator_after_its_noise():
    """
    ``entropy_jitter="random"`` on a model that never moves: every planned path has a zero covariance, so each
    sample's entropy is that of its own jitter draw, ``0.5 log |det(1e-8 N)|``, N the next draws of the planner's
    generator after the sampling noise; the plan weighs the samples by it. The diagonal jitter gives every sample
    the same entropy.
    """
    from sb3_maxdiff.common.entropy import EntropyBonus, make_path_entropy

    class Still(th.nn.Module):
        def forward(self, state, action):
            return state, th.zeros(state.shape[:1])

    def plan(jitter: str):
        entropy = make_path_entropy(obs_dim=2, horizon=H, jitter=jitter)
        planner = MPPIPlanner(M, horizon=H, n_samples=K, control_cost=False, entropy_bonus=EntropyBonus(entropy, 1.0))
        generator = th.Generator().manual_seed(3)
        return planner, planner.plan(Still(), th.zeros(1, 2), planner.initial_nominal(1, "cpu"), generator=generator)

    planner, result = plan("random")
    generator = th.Generator().manual_seed(3)
    noise = smoothing_matrix(H) @ (th.randn(1, K, H, M, generator=generator) * planner.settings.noise_std)
    if planner.settings.clip_samples:
        noise = noise.clamp(-1.0, 1.0)
    entropy = 0.5 * th.linalg.slogdet(1e-8 * th.randn(1, K, 1, 2, 2, generator=generator)).logabsdet.mean(dim=-1)
    weights = mppi_weights(entropy, planner.settings.temperature)  # alpha 1, returns 0
    th.testing.assert_close(result.nominal, th.einsum("ek,ekhm->ehm", weights, noise))
    th.testing.assert_close(result.stat("path_entropy"), (weights * entropy).sum(dim=-1))
    assert result.stat("entropy_spread").item() > 0.1 and result.stat("ess").item() < K / 2
    th.testing.assert_close(plan("random")[1].nominal, result.nominal, rtol=0, atol=0)  # the same generator, the same plan
    _, diagonal = plan("diagonal")
    assert diagonal.stat("entropy_spread").item() < 1e-5 and diagonal.stat("ess").item() == pytest.approx(K)  # uniform
    th.testing.assert_close(diagonal.stat("path_entropy"), th.tensor([0.5 * 2 * math.log(1e-8)]))


# ----------------------------------------------------------------------------------------------- entropy options


def paths() -> th.Tensor:
    return th.randn(3, 12, 4, generator=th.Generator().manual_seed(2), dtype=th.float64)


def test_top_eigs_with_all_dims_is_logdet_and_with_fewer_drops_the_smallest_eigenvalues():
    covariance = time_covariance(paths())
    logdet = entropy_from_covariance(covariance, "logdet")
    th.testing.assert_close(entropy_from_covariance(covariance, "top_eigs", top_m=4), logdet)
    eigenvalues = th.linalg.eigvalsh(covariance + 1e-8 * th.eye(4, dtype=th.float64))  # ascending
    dropped = 0.5 * eigenvalues[..., :2].log().sum(dim=-1)
    th.testing.assert_close(entropy_from_covariance(covariance, "top_eigs", top_m=2), logdet - dropped)
    trace = th.diagonal(covariance, dim1=-2, dim2=-1).sum(dim=-1) + 4e-8
    th.testing.assert_close(entropy_from_covariance(covariance, "log_trace"), 0.5 * trace.log())


@pytest.mark.parametrize(
    "options, expected",
    [
        (dict(entropy_method="top_eigs", entropy_top_m=2), lambda x: path_entropy(x, method="top_eigs", top_m=2)),
        (dict(entropy_method="log_trace"), lambda x: path_entropy(x, method="log_trace")),
        (dict(window=True), lambda x: path_entropy(x, window=default_window_size(TINY["horizon"], 4))),
        (dict(window=4, explr_dims=[0, 1]), lambda x: path_entropy(x[..., :2], window=4)),
        (dict(explr_dims=[1, 3], explr_weights=[2.0, 0.5]), lambda x: path_entropy(x[..., [1, 3]], th.tensor([2.0, 0.5]))),
    ],
)
def test_maxdiff_options_set_the_entropy_the_planner_scores(options, expected):
    """What the planner of a MaxDiffMPPI built with these options computes, on known paths (T = horizon)."""
    # the diagonal jitter of path_entropy: the default random one moves the log-determinant of a window of 5 states in
    # 4 dims (smallest eigenvalue near 1e-4) by about 1e-4, beyond assert_close's float32 tolerance
    model = MaxDiffMPPI(POINT_MASS, seed=0, device="cpu", entropy_jitter="diagonal", **{**TINY, **options})
    x = th.randn(2, 3, TINY["horizon"], 4, generator=th.Generator().manual_seed(7))
    bonus = model.policy.planner.entropy_bonus
    th.testing.assert_close(bonus.entropy(x), expected(x))
    # and training runs with them
    model.learn(40)


def test_a_progress_schedule_of_alpha_gives_its_value_at_the_remaining_progress():
    model = MaxDiffMPPI(POINT_MASS, seed=0, alpha=lambda progress: 10.0 * progress, **TINY)
    model.learn(50)
    # the last planning step saw progress_remaining = 1 - 49 / 50 (SB3 updates it after each step)
    assert model.policy.alpha.item() == pytest.approx(10.0 * (1 - 49 / 50), rel=1e-6)


def test_window_size_is_a_quarter_of_the_horizon_at_least_twice_the_dims_and_at_most_the_horizon():
    assert default_window_size(40, 4) == 10  # H // 4
    assert default_window_size(20, 4) == 8  # 2 * d > H // 4
    assert default_window_size(6, 4) == 6  # 2 * d = 8, capped at the horizon


def test_step_schedule_changes_at_its_boundary_and_refuses_bad_input():
    schedule = StepSchedule([0.5, 5.0, 50.0], [100, 200])
    assert [schedule(step) for step in (0, 99, 100, 199, 200, 10**6)] == [0.5, 0.5, 5.0, 5.0, 50.0, 50.0]
    with pytest.raises(ValueError, match="values must have len\\(boundaries\\) \\+ 1 = 3 entries, got 2"):
        StepSchedule([0.5, 5.0], [100, 200])
    with pytest.raises(ValueError, match="boundaries must be strictly increasing, got \\[200, 100\\]"):
        StepSchedule([0.5, 5.0, 50.0], [200, 100])


# ----------------------------------------------------------------------------------------------- training loop


def test_the_training_warm_start_is_zeroed_where_an_episode_ends(monkeypatch):
    """After the last step of an episode the next planning call starts that environment's nominal at zero."""
    env = gym.make(POINT_MASS, max_episode_steps=10)
    model = NNMPPI(env, seed=0, device="cpu", **{**TINY, "learning_starts": 0}, warmup_actions="planner")
    seen = []
    real_plan = model.policy.planner.plan

    def plan(model_, obs, nominal, reset=None, generator=None, history=None):
        result = real_plan(model_, obs, nominal, reset, generator, history)
        seen.append((None if reset is None else reset.clone(), nominal.clone(), result.nominal.clone()))
        return result

    monkeypatch.setattr(model.policy.planner, "plan", plan)
    model.learn(25)
    starts = [bool(reset[0]) for reset, _, _ in seen]
    assert [index for index, start in enumerate(starts) if start] == [0, 10, 20]
    # the call after an episode's end gets the previous call's nominal but plans from zero
    for index in (10, 20):
        assert th.equal(seen[index][1], seen[index - 1][2]) and seen[index][1].abs().sum() > 0
        assert th.equal(warm_start(seen[index][1], seen[index][0]), th.zeros_like(seen[index][1]))


def test_a_new_learn_call_does_not_bootstrap_across_the_reset_it_makes():
    """``learn`` resets the environments (``reset_num_timesteps=True``): the last transition of the call before has no
    next action of its episode, so the TD-like reward target must not bootstrap from the new episode's first action."""
    model = NNMPPI(gym.make(POINT_MASS, max_episode_steps=100), seed=0, device="cpu", **TINY)
    model.learn(30)
    model.learn(5)
    masks = model.replay_buffer.bootstrap_masks[:35, 0]
    assert masks[:29].tolist() == [1.0] * 29  # within the first call's episode
    assert masks[29] == 0.0  # the episode the second call's reset cut
    assert masks[30:34].tolist() == [1.0] * 4


def test_control_cost_option_reaches_the_planner_of_both_algorithms():
    for algo, default in ((NNMPPI, True), (MaxDiffMPPI, False)):
        assert algo(POINT_MASS, **TINY).policy.planner.settings.control_cost is default
        assert algo(POINT_MASS, control_cost=not default, **TINY).policy.planner.settings.control_cost is (not default)


def test_entropy_of_a_gaussian_path_is_half_the_log_determinant_of_its_covariance():
    """A long path of independent N(0, diag(s^2)) states: S -> 0.5 * sum log s^2."""
    scales = th.tensor([1.0, 2.0, 0.5], dtype=th.float64)
    x = th.randn(200_000, 3, generator=th.Generator().manual_seed(0), dtype=th.float64) * scales
    assert path_entropy(x).item() == pytest.approx(0.5 * math.log(float((scales**2).prod())), abs=0.01)
    np.testing.assert_allclose(time_covariance(x).numpy(), np.diag((scales**2).numpy()), atol=0.05)
