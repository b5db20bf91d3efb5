import numpy as np
import pytest
import torch as th
from helpers import TargetActionModel, TruePointMassModel

from sb3_maxdiff.common.entropy import EntropyBonus, make_path_entropy
from sb3_maxdiff.common.models import DynamicsRewardModel
from sb3_maxdiff.common.mppi import MPPIPlanner, mppi_weights, rollout, smoothing_matrix, warm_start


def test_smoothing_matrix_is_the_recursive_filter():
    eps = th.randn(7, 5, 2, dtype=th.float64)
    eta, previous = [], th.zeros(7, 2, dtype=th.float64)
    for t in range(5):
        previous = 0.5 * previous + 0.5 * eps[:, t]
        eta.append(previous)
    th.testing.assert_close(smoothing_matrix(5, dtype=th.float64) @ eps, th.stack(eta, dim=1))


def test_warm_start_shifts_and_resets():
    nominal = th.arange(12, dtype=th.float32).view(2, 3, 2)
    shifted = warm_start(nominal, th.tensor([False, True]))
    th.testing.assert_close(shifted[0], th.tensor([[2.0, 3.0], [4.0, 5.0], [0.0, 0.0]]))
    th.testing.assert_close(shifted[1], th.zeros(3, 2))


def test_mppi_weights():
    scores = th.tensor([[0.0, -1.0, -2.0]])
    weights = mppi_weights(scores, temperature=0.5)
    expected = np.exp(np.array([0.0, -2.0, -4.0])) + 1e-5
    np.testing.assert_allclose(weights.numpy()[0], expected / expected.sum(), rtol=1e-6)
    # invariant to a shift of the scores; a lower temperature concentrates the weights
    th.testing.assert_close(mppi_weights(scores + 100.0, 0.5), weights)
    assert mppi_weights(scores, 0.05)[0, 0] > weights[0, 0]


@pytest.mark.parametrize("control_cost", [True, False])
def test_planner_finds_known_optimal_action(control_cost):
    th.manual_seed(0)
    target = th.tensor([0.6, -0.4])
    planner = MPPIPlanner(action_dim=2, horizon=5, n_samples=400, temperature=0.05, noise_std=0.3, control_cost=control_cost)
    obs, nominal = th.zeros(1, 3), planner.initial_nominal(1, "cpu")
    for _ in range(30):
        result = planner.plan(TargetActionModel(target), obs, nominal)
        nominal = result.nominal
    # the warm start shifts the sequence each call, so the first action is the best estimate
    np.testing.assert_allclose(result.actions[0].numpy(), target.numpy(), atol=0.1)


def test_planner_batches_environments_independently():
    th.manual_seed(0)
    planner = MPPIPlanner(action_dim=2, horizon=4, n_samples=300, temperature=0.05, noise_std=0.3)
    model = TargetActionModel(th.tensor([0.5, 0.5]))
    nominal = th.stack([th.zeros(4, 2), th.full((4, 2), -0.8)])
    result = planner.plan(model, th.zeros(2, 3), nominal, reset=th.tensor([False, True]))
    assert result.actions.shape == (2, 2) and result.nominal.shape == (2, 4, 2)
    # the second env was reset: it starts from zeros like the first, not from -0.8
    assert (result.actions[1] > -0.3).all()


def test_clip_samples_keeps_the_nominal_in_bounds():
    th.manual_seed(0)
    planner = MPPIPlanner(action_dim=2, horizon=4, n_samples=200, temperature=0.05, noise_std=1.0, clip_samples=True)
    model = TargetActionModel(th.tensor([3.0, -3.0]))  # optimum outside the bounds
    nominal = planner.initial_nominal(1, "cpu")
    for _ in range(10):
        nominal = planner.plan(model, th.zeros(1, 3), nominal).nominal
    assert nominal.abs().max() <= 1.0 + 1e-6


def closed_loop(planner: MPPIPlanner, model: TruePointMassModel, steps: int) -> th.Tensor:
    state = th.tensor([[-1.0, -1.0, 0.0, 0.0]])
    nominal = planner.initial_nominal(1, "cpu")
    visited = [state]
    for _ in range(steps):
        result = planner.plan(model, state, nominal)
        nominal = result.nominal
        state, _ = model(state, result.actions)
        visited.append(state)
    return th.cat(visited)


def test_true_model_planner_drives_point_mass_to_origin():
    th.manual_seed(0)
    model = TruePointMassModel(beta=1.0)
    planner = MPPIPlanner(action_dim=2, horizon=30, n_samples=300, temperature=0.5, noise_std=0.3)
    states = closed_loop(planner, model, steps=80)
    start_distance = th.linalg.norm(states[0, :2])
    final_distance = th.linalg.norm(states[-20:, :2], dim=1).mean()
    assert final_distance < 0.25 * start_distance


def test_maxdiff_paths_have_more_entropy_than_nnmppi():
    model = TruePointMassModel(beta=1.0)
    entropy = make_path_entropy(obs_dim=4, horizon=30, weights=[1.0, 1.0, 0.01, 0.01])
    common = dict(action_dim=2, horizon=30, n_samples=300, temperature=0.5, noise_std=0.3)
    th.manual_seed(0)
    nnmppi = closed_loop(MPPIPlanner(**common, control_cost=True), model, steps=60)
    th.manual_seed(0)
    maxdiff = closed_loop(MPPIPlanner(**common, control_cost=False, entropy_bonus=EntropyBonus(entropy, 5.0)), model, steps=60)
    # entropy of the executed trajectories, over the same sliding windows the planner scores
    windows = lambda states: states.unfold(0, 30, 5).transpose(-1, -2)  # noqa: E731
    assert entropy(windows(maxdiff)).mean() > entropy(windows(nnmppi)).mean() + 0.5


def test_diverging_model_gives_finite_actions():
    class Diverging(th.nn.Module):
        def forward(self, state, action):
            return state * 1e30 + 1.0, th.full(state.shape[:1], float("nan"))

    planner = MPPIPlanner(action_dim=2, horizon=5, n_samples=10, temperature=0.5, noise_std=0.3)
    result = planner.plan(Diverging(), th.ones(2, 3), planner.initial_nominal(2, "cpu"))
    assert th.isfinite(result.actions).all() and th.isfinite(result.nominal).all()
    assert (result.stat("nonfinite") > 0).all()  # reported as non-finite


def test_a_non_finite_warm_start_is_zeroed_and_counted():
    """A NaN in the nominal sequence handed in (e.g. a corrupted ``predict`` state) does not reach the actions: the
    entries it makes non-finite start again from zero, and the statistics count them."""

    class Linear(th.nn.Module):
        def forward(self, state, action):
            return state + action.sum(dim=-1, keepdim=True), -state.square().sum(dim=-1)

    planner = MPPIPlanner(action_dim=2, horizon=5, n_samples=10, temperature=0.5, noise_std=0.3, control_cost=False)
    nominal = planner.initial_nominal(2, "cpu")
    nominal[0, 2, 1] = float("nan")  # shifted by the warm start to step 1 of environment 0
    result = planner.plan(Linear(), th.ones(2, 1), nominal, generator=th.Generator().manual_seed(0))
    assert th.isfinite(result.actions).all() and th.isfinite(result.nominal).all()
    assert result.nominal[0, 1, 1] == 0.0 and (result.nominal[0, 1, 0] != 0.0) and (result.nominal[1] != 0.0).all()
    # environment 0: its 10 samples carry the NaN (their returns are NaN), and one entry of its updated nominal
    assert result.stat("nonfinite").tolist() == [10.0 + 1.0, 0.0]


def stepped_rollout(model: DynamicsRewardModel, obs: th.Tensor, actions: th.Tensor) -> tuple[th.Tensor, th.Tensor]:
    """Reference: call the model one step at a time, as the MPPI equations read."""
    state, total, visited = obs, th.zeros(obs.shape[0], dtype=obs.dtype), []
    for step in range(actions.shape[1]):
        visited.append(state)
        state, reward = model(state, actions[:, step])
        total = total + reward
    return total, th.stack(visited, dim=1)


@pytest.mark.parametrize("net_arch", [[32], [64, 48], [40, 40, 40]])
def test_fused_rollout_equals_stepping_the_model(net_arch):
    th.manual_seed(0)
    model = DynamicsRewardModel(obs_dim=5, action_dim=3, net_arch=net_arch).double()
    for parameter in model.parameters():  # larger weights than the init, so that every layer matters
        parameter.data.normal_(0.0, 0.3)
    obs, actions = th.randn(7, 5, dtype=th.float64), th.randn(7, 6, 3, dtype=th.float64)
    with th.no_grad():
        expected_returns, expected_states = stepped_rollout(model, obs, actions)
        returns, states = rollout(model, obs, actions, state_bound=1e6, dtype=th.float64)
    th.testing.assert_close(returns, expected_returns)
    th.testing.assert_close(states, expected_states)


def test_rollout_clamps_states_to_the_bound():
    model = DynamicsRewardModel(obs_dim=2, action_dim=1, net_arch=[8])
    with th.no_grad():
        model.dynamics[-1].bias.fill_(10.0)  # every step adds 10 to each state dim
        _, states = rollout(model, th.zeros(3, 2), th.zeros(3, 4, 1), state_bound=25.0)
    th.testing.assert_close(states[0, :, 0], th.tensor([0.0, 10.0, 20.0, 25.0]), atol=0.1, rtol=0)


def test_bfloat16_rollout_is_close_to_float32():
    th.manual_seed(0)
    model = DynamicsRewardModel(obs_dim=4, action_dim=2, net_arch=[64, 64])
    for parameter in model.parameters():
        parameter.data.normal_(0.0, 0.1)
    obs, actions = th.randn(50, 4), th.randn(50, 8, 2)
    with th.no_grad():
        returns, states = rollout(model, obs, actions, 1e6)
        returns_bf16, states_bf16 = rollout(model, obs, actions, 1e6, th.bfloat16)
    assert states_bf16.dtype == th.float32 and returns_bf16.dtype == th.float32  # accumulated in float32
    # bfloat16 keeps 8 significant bits: relative errors of about 1%, not more
    assert (returns_bf16 - returns).abs().max() <= 0.03 * returns.abs().max()
    assert (states_bf16 - states).abs().max() <= 0.03 * states.abs().max()


def test_bfloat16_planner_acts_like_float32():
    differences = []
    for seed in range(5):
        th.manual_seed(100 + seed)
        model = DynamicsRewardModel(obs_dim=4, action_dim=2, net_arch=[64, 64])
        for parameter in model.parameters():
            parameter.data.normal_(0.0, 0.2)
        actions = {}
        for dtype in ("float32", "bfloat16"):
            th.manual_seed(seed)  # the same noise draws for both
            planner = MPPIPlanner(action_dim=2, horizon=10, n_samples=200, temperature=0.5, noise_std=0.3, dtype=dtype)
            actions[dtype] = planner.plan(model, th.randn(3, 4), planner.initial_nominal(3, "cpu")).actions
        differences.append((actions["bfloat16"] - actions["float32"]).abs().max().item())
    # rounding moves the MPPI weights a little; the planned actions (noise std 0.3) stay close
    assert max(differences) < 0.05 and sum(differences) / len(differences) < 0.02, differences


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(horizon=0), "horizon must be an integer >= 1, got 0"),
        (dict(n_samples=2.5), "n_samples must be an integer >= 1, got 2.5"),
        (dict(temperature=0.0), "temperature must be a number > 0, got 0.0"),
        (dict(noise_std="0.3"), "noise_std must be a number > 0, got '0.3'"),
        (dict(dtype="float16"), "planner_dtype must be one of"),
    ],
)
def test_a_planner_built_directly_checks_its_settings(kwargs, message):
    settings = dict(action_dim=2, horizon=4, n_samples=8, temperature=0.5, noise_std=0.3)
    with pytest.raises(ValueError, match=message):
        MPPIPlanner(**{**settings, **kwargs})
