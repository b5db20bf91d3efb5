"""The terminal value: its TD target, its target network, the planner's score with it, and a far reward it finds."""

import numpy as np
import pytest
import torch as th
from torch import nn

from sb3_maxdiff import NNMPPI, MaxDiffMPPI
from sb3_maxdiff.common.models import BatchedDynamicsRewardModel, DynamicsRewardModel
from sb3_maxdiff.common.mppi import MPPIPlanner, PlannerSettings, rollout
from sb3_maxdiff.common.training import model_updates

POINT_MASS = "sb3_maxdiff/PointMass-beta1-v0"


def set_layers(layers, *weights_and_biases) -> None:
    """Write (weight, bias) pairs into linear layers (or the target's frozen copies)."""
    with th.no_grad():
        for layer, (weight, bias) in zip(layers, weights_and_biases):
            layer.weight.copy_(th.tensor(weight))
            layer.bias.copy_(th.tensor(bias))


def hand_model() -> DynamicsRewardModel:
    """obs and action of size 1; V(s) = 2 relu(s) + 1, V_target(s) = 3 relu(s), gamma 0.9."""
    model = DynamicsRewardModel(1, 1, [4], value_net_arch=[2], value_discount=0.9)
    set_layers(model.value, ([[1.0], [0.0]], [0.0, 0.0]), ([[2.0, 0.0]], [1.0]))
    set_layers(model.value_target, ([[1.0], [0.0]], [0.0, 0.0]), ([[3.0, 0.0]], [0.0]))
    return model


def hand_batch() -> list[th.Tensor]:
    obs, next_obs = th.tensor([[1.0], [2.0]]), th.tensor([[2.0], [0.5]])
    actions = th.zeros(2, 1)
    rewards, masks, dones = th.tensor([[1.0], [-1.0]]), th.ones(2, 1), th.tensor([[0.0], [1.0]])
    return [obs, actions, next_obs, actions, rewards, masks, dones]


def test_td_target_on_a_hand_computed_batch():
    model = hand_model()
    losses = model.loss(*hand_batch())
    # targets: 1 + 0.9 * V_target(2) = 1 + 0.9 * 6 = 6.4; -1 (terminated: no bootstrap). V(s) = 3 and 5
    expected = ((6.4 - 3.0) ** 2 + (-1.0 - 5.0) ** 2) / 2
    assert losses.value is not None
    th.testing.assert_close(losses.value, th.tensor(expected))
    th.testing.assert_close(losses.total, 0.5 * losses.reward + losses.dynamics + 0.5 * losses.value)
    # a truncated row (done 0) bootstraps: -1 + 0.9 * V_target(0.5) = 0.35
    batch = hand_batch()
    batch[-1] = th.zeros(2, 1)
    th.testing.assert_close(model.loss(*batch).value, th.tensor(((6.4 - 3.0) ** 2 + (0.35 - 5.0) ** 2) / 2))
    # without the dones column no row terminated
    th.testing.assert_close(model.loss(*batch[:-1]).value, model.loss(*batch).value)


def test_td_target_is_detached_and_trains_the_value_only():
    model = hand_model()
    model.loss(*hand_batch()).value.backward()
    for layer in model.value_target:
        assert not layer.weight.requires_grad
    # dV/d(output bias) = mean(-2 * (target - V)) over the rows
    expected = -((6.4 - 3.0) + (-1.0 - 5.0))
    th.testing.assert_close(model.value[1].bias.grad, th.tensor([expected]))
    assert all(p.grad is None or not p.grad.any() for p in model.dynamics.parameters())


def test_target_network_follows_by_polyak_averaging():
    model = DynamicsRewardModel(3, 1, [8], value_net_arch=[5], value_tau=0.25)
    before = [layer.weight.clone() for layer in model.value_target]
    with th.no_grad():
        for layer in model.value:
            layer.weight.add_(1.0)
    model.update_value_target()
    for target, old, online in zip(model.value_target, before, model.value):
        th.testing.assert_close(target.weight, 0.75 * old + 0.25 * online.weight)


def test_batched_agents_match_single_models():
    th.manual_seed(0)
    batched = BatchedDynamicsRewardModel(3, 4, 2, [8], value_net_arch=[6], value_tau=0.1)
    singles = []
    for index in range(3):
        single = DynamicsRewardModel(4, 2, [8], value_net_arch=[6], value_tau=0.1)
        single.load_state_dict(batched.agent_state_dict(index))
        singles.append(single)
    data = [th.randn(3, 5, 4), th.randn(3, 5, 2), th.randn(3, 5, 4), th.randn(3, 5, 2), th.randn(3, 5, 1)]
    data += [th.ones(3, 5, 1), th.zeros(3, 5, 1)]
    losses = batched.loss(*data)
    for index, single in enumerate(singles):
        th.testing.assert_close(losses.value[index], single.loss(*(t[index] for t in data)).value)
    # the target moves per agent, and a round trip through the state dict keeps it
    with th.no_grad():
        batched.flat.add_(1.0)
    batched.update_value_target()
    for index, single in enumerate(singles):
        with th.no_grad():
            for param in single.parameters():
                param.add_(1.0)
        single.update_value_target()
        for name, tensor in single.state_dict().items():
            th.testing.assert_close(batched.agent_state_dict(index)[name], tensor)


def constant_model(reward: float, value: float, batched: int | None = None):
    """A model whose state never moves, whose reward is ``reward`` and whose value is ``value`` everywhere."""
    model: DynamicsRewardModel | BatchedDynamicsRewardModel
    if batched is None:
        model = DynamicsRewardModel(2, 1, [4], value_net_arch=[3], value_discount=0.9)
    else:
        model = BatchedDynamicsRewardModel(batched, 2, 1, [4], value_net_arch=[3], value_discount=0.9)
    outputs = {"dynamics": 0.0, "reward": reward, "value": value}
    with th.no_grad():
        for network, constant in outputs.items():
            weight, bias = model.layer_params(network)[-1]
            weight.zero_()
            bias.fill_(constant)
    return model


@pytest.mark.parametrize("batched", [None, 2])
def test_rollout_scores_discounted_rewards_plus_discounted_value(batched):
    horizon, gamma = 5, 0.9
    model = constant_model(reward=2.0, value=10.0, batched=batched)
    lead = (2, 3)
    returns, states = rollout(model, th.randn(*lead, 2), th.randn(*lead, horizon, 1), 1e6, value_discount=gamma)
    expected = 2.0 * (1 - gamma**horizon) / (1 - gamma) + gamma**horizon * 10.0
    th.testing.assert_close(returns, th.full(lead, expected))
    assert states.shape == (*lead, horizon, 2)
    # without the value: the plain sum, as published
    plain, _ = rollout(model, th.randn(*lead, 2), th.randn(*lead, horizon, 1), 1e6)
    th.testing.assert_close(plain, th.full(lead, 2.0 * horizon))


def test_fused_rollout_reaches_the_state_after_the_last_action():
    th.manual_seed(0)
    model = DynamicsRewardModel(3, 2, [8], value_net_arch=[4], value_discount=0.8)
    obs, actions = th.randn(6, 3), th.randn(6, 4, 2)
    returns, _ = model.rollout(obs, actions, 1e6, value_discount=0.8)
    state, expected = obs, th.zeros(6)
    for step in range(4):
        next_state, reward = model(state, actions[:, step])
        expected, state = expected + 0.8**step * reward, next_state
    expected = expected + 0.8**4 * model.terminal_value(state)
    th.testing.assert_close(returns, expected)


def test_value_needs_a_value_net():
    with pytest.raises(ValueError, match="value net"):
        DynamicsRewardModel(2, 1, [4]).rollout(th.zeros(1, 2), th.zeros(1, 3, 1), 1e6, value_discount=0.9)
    with pytest.raises(ValueError, match="terminal_value"):
        rollout(nn.Identity(), th.zeros(1, 2), th.zeros(1, 3, 1), 1e6, value_discount=0.9)
    with pytest.raises(ValueError, match="value_discount must be a number in"):
        PlannerSettings(value_discount=1.5)
    for name, value in (("gamma", 0.0), ("tau", 2.0), ("terminal_value", "yes")):
        with pytest.raises(ValueError, match=name):
            NNMPPI(POINT_MASS, **{name: value})
    with pytest.raises(ValueError, match="value_net_arch"):
        NNMPPI(POINT_MASS, terminal_value=True, policy_kwargs={"value_net_arch": []})


# ----- a reward beyond the horizon --------------------------------------------------------------
STEP, GOAL, LURE, EPISODE = 0.5, 2.0, 0.05, 30


class Corridor(nn.Module):
    """
    A 1-D corridor from x = 0: x' = x + 0.5 a (a clipped to [-1, 1]). Every step ending at x >= 2 pays 1, every
    step ending at x < 0 pays 0.05 (a lure next to the start), the rest nothing. Going right pays 26 of 30 steps'
    worth; the goal lies 4 steps away, so a planner that looks 2 steps ahead sees only the lure.
    """

    def __init__(self, value: DynamicsRewardModel | None = None):
        super().__init__()
        self.value = value

    def forward(self, state: th.Tensor, action: th.Tensor) -> tuple[th.Tensor, th.Tensor]:
        next_state = state + STEP * action.clamp(-1.0, 1.0)
        x = next_state[:, 0]
        reward = th.where(x >= GOAL, 1.0, th.where(x < 0.0, LURE, 0.0))
        return next_state, reward

    def terminal_value(self, states: th.Tensor) -> th.Tensor:
        assert self.value is not None
        return self.value.terminal_value(states)


def run_episode(planner: MPPIPlanner, model: Corridor) -> tuple[float, list[tuple]]:
    """One episode from x = 0; its return and transitions (s, a, s', r)."""
    state, nominal, total, transitions = th.zeros(1, 1), planner.initial_nominal(1, "cpu"), 0.0, []
    for _ in range(EPISODE):
        result = planner.plan(model, state, nominal)
        nominal = result.nominal
        action = result.actions.clamp(-1.0, 1.0)
        next_state, reward = model(state, action)
        transitions.append((state, action, next_state, reward))
        total += float(reward)
        state = next_state
    return total, transitions


def corridor_planner(horizon: int, value_discount: float | None = None) -> MPPIPlanner:
    settings = PlannerSettings(
        horizon=horizon, n_samples=256, temperature=0.05, noise_std=1.0, control_cost=False, clip_samples=True,
        value_discount=value_discount,
    )  # fmt: skip
    return MPPIPlanner(1, settings)


def learn_value(transitions: list[tuple], gamma: float, steps: int = 1500) -> DynamicsRewardModel:
    """V by TD on the transitions, with the model's own loss and target network (Adam, batches of 64)."""
    model = DynamicsRewardModel(1, 1, [8], value_net_arch=[32, 32], value_discount=gamma, value_tau=0.05)
    obs, actions, next_obs, rewards = (th.cat([row[i] for row in transitions]) for i in range(4))
    rows = len(obs)
    data = [obs, actions, next_obs, actions, rewards[:, None], th.zeros(rows, 1), th.zeros(rows, 1)]
    optimizer = th.optim.Adam(model.parameters(), lr=3e-3)
    generator = th.Generator().manual_seed(0)
    for _ in range(steps // 10):
        draw = th.randint(rows, (640,), generator=generator)
        model_updates(model, optimizer, [tensor[draw] for tensor in data], 64, 10)
    return model


def test_value_finds_a_reward_beyond_the_horizon():
    th.manual_seed(0)
    short, _ = run_episode(corridor_planner(2), Corridor())
    long, data = run_episode(corridor_planner(12), Corridor())
    # looking 2 steps ahead the planner takes the lure; 12 steps ahead it walks to the goal, which its data reaches
    assert short < 2.0 and long > 20.0
    th.manual_seed(1)
    _, more = run_episode(corridor_planner(12), Corridor())
    gamma = 0.9
    value = learn_value(data + more, gamma)
    # the value of the long planner's behaviour, by TD: V(1.5) = sum_t 0.9^t over what is left, V(-1) is far less
    values = value.terminal_value(th.tensor([[-1.0], [0.0], [1.5]])).detach()
    assert values[2] > 5.0 and values[2] > values[1] > values[0]
    th.manual_seed(2)
    with_value, _ = run_episode(corridor_planner(2, value_discount=gamma), Corridor(value))
    assert with_value > 20.0


# ----- the algorithms ----------------------------------------------------------------------------
SMALL = dict(horizon=4, n_samples=16, learning_starts=20, batch_size=16, gradient_steps=2)


@pytest.mark.parametrize("algo", [NNMPPI, MaxDiffMPPI])
@pytest.mark.parametrize("independent_agents", [False, True])
def test_run_save_load(algo, independent_agents, tmp_path):
    from stable_baselines3.common.env_util import make_vec_env

    env = make_vec_env(POINT_MASS, n_envs=2 if independent_agents else 1, seed=0)
    policy_kwargs = dict(net_arch=[16, 16], value_net_arch=[8])
    model = algo(
        "MlpPolicy", env, terminal_value=True, gamma=0.95, tau=0.1, independent_agents=independent_agents,
        policy_kwargs=policy_kwargs, seed=0, **SMALL,
    )  # fmt: skip
    target_before = {name: tensor.clone() for name, tensor in model.policy.model.state_dict().items()}
    model.learn(60)
    assert model.policy.planner.settings.value_discount == 0.95
    assert np.isfinite(model.logger.name_to_value["train/value_loss"])
    # the target network moved with the updates, and the file keeps it
    state = model.policy.model.state_dict()
    moved = [name for name in state if "value_target" in name or name == "flat_buffers"]
    assert moved and any(not th.equal(target_before[name], model.policy.model.state_dict()[name]) for name in moved)
    model.save(tmp_path / "model.zip")
    loaded = algo.load(tmp_path / "model.zip", env=env)
    assert loaded.terminal_value and loaded.gamma == 0.95 and loaded.tau == 0.1
    for name, tensor in model.policy.state_dict().items():
        assert th.equal(tensor, loaded.policy.state_dict()[name]), name
    obs = env.reset()
    th.manual_seed(0)
    actions, _ = model.predict(obs, deterministic=True)
    th.manual_seed(0)
    np.testing.assert_array_equal(actions, loaded.predict(obs, deterministic=True)[0])
    if independent_agents:  # an agent taken out keeps its value net and target
        agent = model.agent(1)
        for name, tensor in agent.policy.model.agent_state_dict(0).items():
            th.testing.assert_close(tensor, model.policy.model.agent_state_dict(1)[name])


def test_off_by_default_leaves_the_model_as_published():
    th.manual_seed(0)
    plain = NNMPPI(POINT_MASS, policy_kwargs={"net_arch": [16]}, seed=0)
    assert not plain.terminal_value and plain.policy.planner.settings.value_discount is None
    assert not plain.policy.model.has_value
    assert not any("value" in name for name in plain.policy.state_dict())
