"""The MPPI controller over known dynamics (MaxDiff trajectory synthesis) against cases with known answers."""

import numpy as np
import pytest
import torch as th

from sb3_maxdiff.common.entropy import EntropyBonus, make_path_entropy, path_entropy
from sb3_maxdiff.common.ergodicity import mean_squared_displacement
from sb3_maxdiff.common.mppi import mppi_weights, smoothing_matrix
from sb3_maxdiff.synthesis import (
    DifferentialDrive,
    DoubleIntegrator,
    MPPIController,
    SingleIntegrator,
    bimodal_gaussian_potential,
    quadratic_potential,
    reward_of,
)


def test_with_alpha_zero_it_is_plain_mppi_computed_by_hand(monkeypatch):
    """One command on a single integrator in a quadratic potential, with the noise fixed: MPPI's update by hand."""
    horizon, samples, dt = 3, 4, 0.1
    draws = th.randn(1, samples, horizon, 2, generator=th.Generator().manual_seed(0))
    monkeypatch.setattr(th, "randn", lambda *shape, **kwargs: draws.clone())
    controller = MPPIController(
        SingleIntegrator(dt), running_cost=quadratic_potential(), state_dim=2, action_dim=2, horizon=horizon,
        n_samples=samples, temperature=0.5, noise_std=0.3, control_cost=False,
    )  # fmt: skip
    state = th.tensor([1.0, -2.0])
    action = controller.command(state)
    noise = smoothing_matrix(horizon) @ (draws[0] * 0.3)  # (K, H, 2), around a zero warm start
    positions = state + dt * noise.cumsum(dim=1)  # x_1 .. x_H of each sample
    returns = -(positions**2).sum(dim=(-2, -1))
    weights = mppi_weights(returns[None], 0.5)[0]
    th.testing.assert_close(action, (weights[:, None, None] * noise).sum(dim=0)[0])


def test_plain_mppi_drives_to_the_minimum_of_a_quadratic_potential():
    th.manual_seed(0)
    system = SingleIntegrator()
    controller = MPPIController(system, running_cost=quadratic_potential(), state_dim=2, action_dim=2, horizon=15,
                                n_samples=200, noise_std=1.0, low=[-1, -1], high=[1, 1])  # fmt: skip
    state = th.tensor([-4.0, -2.0])
    for _ in range(120):
        action = controller.command(state)
        assert (action.abs() <= 1.0 + 1e-6).all()  # the bounds hold
        state = system(state[None], action[None])[0]
    assert th.linalg.norm(state) < 0.3


def test_bounded_samples_reach_the_dynamics_mapped_onto_the_bounds():
    """Bounds that are not [-1, 1]: the dynamics see every sample in [low, high], and the command is its image too."""
    low, high = [0.0, -2.0], [2.0, 6.0]
    seen = []

    def dynamics(state: th.Tensor, action: th.Tensor) -> th.Tensor:
        seen.append(action.clone())
        return state + 0.1 * action

    th.manual_seed(0)
    controller = MPPIController(dynamics, running_cost=quadratic_potential((-5.0, 20.0)), state_dim=2, action_dim=2,
                                horizon=4, n_samples=64, noise_std=2.0, control_cost=False, low=low, high=high)  # fmt: skip
    action = controller.command(th.zeros(2))
    actions = th.cat([step.reshape(-1, 2) for step in seen])
    th.testing.assert_close(actions.amin(dim=0), th.tensor(low))  # noise of std 2 clipped at both ends of [-1, 1]
    th.testing.assert_close(actions.amax(dim=0), th.tensor(high))
    # the planner's action in [-1, 1], mapped as the samples were: toward x = -5 and y = 20, near (low, high)
    planned = controller.last.actions[0]
    th.testing.assert_close(action, th.tensor(low) + (planned + 1.0) / 2.0 * (th.tensor(high) - th.tensor(low)))
    assert action[0] < 0.5 and action[1] > 4.0
    mapped = controller.model.to_action(th.tensor([[-3.0, 3.0], [0.0, 0.0]]))  # outside [-1, 1]: at the bounds
    th.testing.assert_close(mapped, th.tensor([[0.0, 6.0], [1.0, 2.0]]))


def spread(alpha: float, seed: int = 0, steps: int = 300) -> float:
    """Std of the positions a differential drive visits in the quadratic potential, after it has come down."""
    th.manual_seed(seed)
    system = DifferentialDrive()
    controller = MPPIController(
        system, running_reward=reward_of(quadratic_potential()), state_dim=3, action_dim=2, horizon=20, n_samples=200,
        temperature=0.5, noise_std=0.3, alpha=alpha, explr_dims=[0, 1], control_cost=False, low=[-1, -1], high=[1, 1],
    )  # fmt: skip
    state, visited = th.tensor([-4.0, -2.0, 0.0]), []
    for _ in range(steps):
        state = system(state[None], controller.command(state)[None])[0]
        visited.append(state[:2].clone())
    return float(th.stack(visited[steps // 2 :]).std(dim=0).mean())


def test_the_spread_of_the_visited_positions_grows_with_alpha():
    """alpha 0 settles at the bottom; with the entropy term the vehicle keeps moving over the basin, more for larger alpha."""
    spreads = [spread(alpha) for alpha in (0.0, 10.0, 100.0)]
    assert spreads[0] < 0.1 and spreads[1] > 0.25 and spreads[2] > 1.2 * spreads[1], spreads


def test_each_state_of_a_batch_has_its_own_warm_start_and_reset_forgets_them():
    th.manual_seed(1)
    controller = MPPIController(DoubleIntegrator(), running_cost=quadratic_potential(), state_dim=4, action_dim=2,
                                horizon=5, n_samples=32)  # fmt: skip
    states = th.tensor([[1.0, 0.0, 0.0, 0.0], [-1.0, 2.0, 0.0, 0.0]])
    actions = controller.command(states)
    assert actions.shape == (2, 2) and controller.nominal.shape == (2, 5, 2)
    kept = controller.nominal.clone()
    controller.command(states)
    assert not th.equal(controller.nominal, kept)  # planned on from the previous sequences
    controller.reset()
    assert controller.nominal is None
    assert controller.command(states[0]).shape == (2,)


def test_the_bimodal_potential_has_its_wells_at_its_centres():
    potential = bimodal_gaussian_potential(((-2.0, 0.0), (2.0, 0.0)), width=1.0)
    values = potential(th.tensor([[-2.0, 0.0], [2.0, 0.0], [0.0, 0.0], [10.0, 10.0]]))
    assert values[0] == values[1] and values[0] < values[2] < values[3]
    assert values[0].item() == pytest.approx(-1.0 - np.exp(-8.0))


def test_the_integrators_take_an_explicit_euler_step():
    """The position moves with the velocity of the start of the step, not the one the action leads to."""
    next_state = DoubleIntegrator(dt=0.1)(th.tensor([[1.0, 2.0, 3.0, -1.0]]), th.tensor([[0.5, 2.0]]))
    th.testing.assert_close(next_state, th.tensor([[1.3, 1.9, 3.05, -0.8]]))
    next_position = SingleIntegrator(dt=0.5)(th.tensor([[1.0, 2.0]]), th.tensor([[-2.0, 4.0]]))
    th.testing.assert_close(next_position, th.tensor([[0.0, 4.0]]))


def test_a_differential_drive_moves_along_its_heading():
    state = th.tensor([[0.0, 0.0, np.pi / 2]])
    next_state = DifferentialDrive(dt=0.5)(state, th.tensor([[2.0, 0.4]]))
    th.testing.assert_close(next_state, th.tensor([[0.0, 1.0, np.pi / 2 + 0.2]]), atol=1e-6, rtol=0)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(running_reward=None), "exactly one of running_reward and running_cost"),
        (dict(low=[-1, -1]), "both low and high"),
        (dict(low=[1, -1], high=[-1, 1]), "low < high"),
        (dict(alpha=-1.0), "alpha must be a number >= 0"),
        (dict(horizon=0), "horizon must be an integer >= 1"),
        (dict(history=-1), "history must be an integer >= 0"),
        (dict(history=2.5), "history must be an integer >= 0"),
        (dict(alpha=1.0, entropy_jitter="entries"), "entropy_jitter must be one of"),
    ],
)
def test_bad_arguments_name_the_parameter(kwargs, match):
    arguments = {"running_reward": reward_of(quadratic_potential()), "state_dim": 2, "action_dim": 2, **kwargs}
    with pytest.raises(ValueError, match=match):
        MPPIController(SingleIntegrator(), **arguments)


def test_a_state_of_the_wrong_size_is_refused():
    controller = MPPIController(SingleIntegrator(), running_cost=quadratic_potential(), state_dim=2, action_dim=2)
    with pytest.raises(ValueError, match=r"state must have shape \(2,\) or \(E, 2\), got \(3,\)"):
        controller.command([0.0, 0.0, 0.0])


def test_the_entropy_with_a_history_is_that_of_the_visited_states_followed_by_each_path():
    generator = th.Generator().manual_seed(0)
    paths, history = th.randn(2, 3, 6, 4, generator=generator), th.randn(2, 5, 4, generator=generator)
    settings = make_path_entropy(obs_dim=4, horizon=6, dims=[0, 2], window=4)  # windows across the joint
    entropy, bonus = EntropyBonus(settings, alpha=2.0)(paths, history)
    joined = th.cat([history[:, None].expand(2, 3, 5, 4), paths], dim=2)[..., [0, 2]]
    expected = path_entropy(joined, window=4)
    th.testing.assert_close(entropy, expected)
    th.testing.assert_close(bonus, 2.0 * expected)
    # the order matters with windows: the history goes first, as the states were visited
    reversed_order = path_entropy(th.cat([paths, history[:, None].expand(2, 3, 5, 4)], dim=2)[..., [0, 2]], window=4)
    assert not th.allclose(entropy, reversed_order)
    th.testing.assert_close(EntropyBonus(settings, 2.0)(paths, history[:, :0])[0], path_entropy(paths[..., [0, 2]], window=4))


def free_path(history: int, steps: int = 1200, seed: int = 0, alpha: float = 10.0) -> np.ndarray:
    """The positions a free single integrator (no reward at all) visits, exploring with ``alpha``."""
    th.manual_seed(seed)
    system = SingleIntegrator(dt=0.1)
    controller = MPPIController(
        system, running_reward=lambda state, action: th.zeros(state.shape[0]), state_dim=2, action_dim=2, horizon=20,
        n_samples=200, temperature=0.5, noise_std=0.3, alpha=alpha, history=history, control_cost=False,
        low=[-1, -1], high=[1, 1],
    )  # fmt: skip
    state, path = th.zeros(2), []
    for _ in range(steps):
        path.append(state.numpy().copy())
        state = system(state[None], controller.command(state)[None])[0]
    return np.array(path)


def test_the_realized_path_loops_and_the_recent_states_in_the_entropy_widen_the_loop():
    """
    Over its own horizon alone the entropy is largest for a loop: the realized path stays in a small region. With the
    last 40 states in, it moves away from where it just was, which widens the loop (over 10-80 steps its MSD grows
    about linearly, as a diffusion's would) but does not open it: a diffusion with that MSD would have spread several
    times further in the run than the path does.
    """
    lags, steps = np.arange(10, 81, 10), 1200
    found = {}
    for history in (0, 40):
        path = free_path(history, steps=steps)
        msd = mean_squared_displacement(path, lags)
        exponent = float(np.polyfit(np.log(lags), np.log(msd), 1)[0])
        diffusion_reach = float(np.sqrt(msd[-1] * steps / lags[-1]))  # a diffusion's RMS displacement over the run
        found[history] = (exponent, float(np.linalg.norm(path - path[0], axis=1).max()), diffusion_reach)
    assert found[0][0] < 0.2 and found[0][1] < 2.5, found  # a small loop
    assert 0.8 < found[40][0] < 1.5 and found[40][1] > 1.5 * found[0][1], found  # a wider one
    assert found[40][1] < 0.5 * found[40][2], found  # that stays where it is


def test_the_history_enters_the_entropy_alone_and_reset_forgets_it():
    assert np.array_equal(free_path(40, steps=30, alpha=0.0), free_path(0, steps=30, alpha=0.0))  # no entropy term
    assert not np.array_equal(free_path(40, steps=30), free_path(0, steps=30))
    controller = MPPIController(SingleIntegrator(), running_cost=quadratic_potential(), state_dim=2, action_dim=2,
                                alpha=1.0, history=3, horizon=5, n_samples=8)  # fmt: skip
    for value in range(5):
        controller.command([float(value), 0.0])
    assert controller.visited.states.shape == (1, 3, 2) and controller.visited.states[0, :, 0].tolist() == [2.0, 3.0, 4.0]
    controller.reset()
    assert controller.visited.states is None and controller.nominal is None


def test_the_random_jitter_reaches_the_controllers_path_entropy():
    arguments = dict(running_cost=quadratic_potential(), state_dim=2, action_dim=2, horizon=10, n_samples=64, alpha=1.0)
    controller = MPPIController(SingleIntegrator(), entropy_jitter="random", **arguments)
    assert controller.planner.entropy_bonus.entropy.jitter == "random"
    assert MPPIController(SingleIntegrator(), **arguments).planner.entropy_bonus.entropy.jitter == "diagonal"
    th.manual_seed(0)
    action = controller.command([0.5, -0.5])
    assert action.shape == (2,) and th.isfinite(action).all()
