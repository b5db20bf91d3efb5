import gymnasium as gym
import numpy as np
import pytest
import torch as th

import sb3_maxdiff  # noqa: F401  (registers the environments)
from sb3_maxdiff.common.models import DynamicsRewardModel


def test_output_layers_start_small():
    model = DynamicsRewardModel(4, 2, [32, 32])
    for net in (model.dynamics, model.reward):
        assert net[-1].weight.abs().max() <= 3e-3 and net[-1].bias.abs().max() <= 3e-3
    obs = th.randn(5, 4)
    next_obs, _ = model(obs, th.zeros(5, 2))
    assert (next_obs - obs).abs().max() < 0.1  # s + f(s, a) starts close to s


def test_loss_matches_formula():
    th.manual_seed(0)
    model = DynamicsRewardModel(3, 1, [8])
    with th.no_grad():
        model.log_std.copy_(th.tensor([0.0, -1.0, 3.0]))  # 3.0 is clamped to 2.0
    obs, act, next_obs, next_act = th.randn(6, 3), th.randn(6, 1), th.randn(6, 3), th.randn(6, 1)
    rewards, masks = th.randn(6, 1), th.tensor([[1.0], [0.0], [1.0], [1.0], [0.0], [1.0]])
    losses = model.loss(obs, act, next_obs, next_act, rewards, masks)
    mean, r_hat = model(obs, act)
    std = th.tensor([0.0, -1.0, 2.0]).exp()
    nll = (0.5 * ((next_obs - mean) / std) ** 2 + std.log() + 0.5 * np.log(2 * np.pi)).mean()
    target = rewards.flatten() + 0.95 * masks.flatten() * model(next_obs, next_act)[1]
    reward_loss = ((target - r_hat) ** 2).mean()
    th.testing.assert_close(losses.dynamics, nll)
    th.testing.assert_close(losses.reward, reward_loss)
    th.testing.assert_close(losses.total, 0.5 * reward_loss + nll)


def test_reward_target_is_detached():
    model = DynamicsRewardModel(2, 1, [8])
    batch = [th.randn(4, 2), th.randn(4, 1), th.randn(4, 2), th.randn(4, 1), th.randn(4, 1), th.ones(4, 1)]
    model.loss(*batch).reward.backward()
    # gradient only through r_hat(s, a): zero the (s, a) inputs' effect check via a second model pass
    grads = [p.grad.clone() for p in model.reward.parameters()]
    model.zero_grad()
    mean_r = model(batch[0], batch[1])[1]
    with th.no_grad():
        target = batch[4].flatten() + 0.95 * model(batch[2], batch[3])[1]
    ((target - mean_r) ** 2).mean().backward()
    for grad, param in zip(grads, model.reward.parameters()):
        th.testing.assert_close(grad, param.grad)


def collect_transitions(n_steps: int, seed: int) -> tuple[np.ndarray, ...]:
    env = gym.make("sb3_maxdiff/PointMass-beta1-v0")
    env.action_space.seed(seed)
    obs, _ = env.reset(seed=seed)
    data = []
    for _ in range(n_steps):
        action = env.action_space.sample()
        next_obs, reward, terminated, truncated, _ = env.step(action)
        data.append((obs, action, next_obs, reward))
        obs = env.reset()[0] if terminated or truncated else next_obs
    return tuple(np.array(column, dtype=np.float32) for column in zip(*data))


@pytest.mark.slow
def test_model_fits_point_mass_transitions():
    th.manual_seed(0)
    obs, actions, next_obs, rewards = map(th.as_tensor, collect_transitions(3000, seed=0))
    test_obs, test_actions, test_next, _ = map(th.as_tensor, collect_transitions(500, seed=1))
    model = DynamicsRewardModel(4, 2, [128, 128])
    optimizer = th.optim.Adam(model.parameters(), lr=1e-3, weight_decay=1e-4)
    rng = np.random.default_rng(0)
    for _ in range(1000):  # one-step error 2.4e-6 after these (6e-7 after 3,000): far below both bounds
        idx = th.as_tensor(rng.integers(0, len(obs), 128))
        # next actions are irrelevant to the dynamics fit: bootstrap mask 0
        loss = model.loss(obs[idx], actions[idx], next_obs[idx], actions[idx], rewards[idx, None], th.zeros(128, 1))
        optimizer.zero_grad()
        loss.total.backward()
        optimizer.step()
    with th.no_grad():
        predicted, _ = model(test_obs, test_actions)
    one_step_error = ((predicted - test_next) ** 2).mean().item()
    change_variance = (test_next - test_obs).var(dim=0).mean().item()
    assert one_step_error < 0.02 * change_variance, (one_step_error, change_variance)
    assert one_step_error == pytest.approx(0.0, abs=1e-3)


def test_loss_leaves_out_rows_with_non_finite_entries():
    th.manual_seed(0)
    model = DynamicsRewardModel(3, 2, [16])
    batch = [th.randn(6, 3), th.randn(6, 2), th.randn(6, 3), th.randn(6, 2), th.randn(6, 1), th.ones(6, 1)]
    clean = model.loss(*(tensor[:4] for tensor in batch))
    dirty = [tensor.clone() for tensor in batch]
    dirty[0][4, 1] = float("nan")  # a NaN observation
    dirty[4][5, 0] = float("inf")  # an infinite reward
    mixed = model.loss(*dirty)
    assert clean.value is None and mixed.value is None  # no value net
    for a, b in zip(clean[:3], mixed[:3]):
        assert th.allclose(a, b, atol=1e-6)
    mixed.total.backward()
    assert all(th.isfinite(p.grad).all() for p in model.parameters())
    all_bad = [tensor.clone() for tensor in batch]
    all_bad[0][:] = float("nan")
    assert th.isnan(model.loss(*all_bad).total)


def test_each_update_of_a_train_call_takes_the_next_minibatch_of_the_draw():
    """``gradient_steps`` updates from one replay draw of ``gradient_steps * batch_size`` rows: update k on rows
    k * batch_size .. (k + 1) * batch_size, as consecutive draws of ``batch_size`` would be."""
    import copy

    from sb3_maxdiff.common.training import model_updates

    th.manual_seed(0)
    model = DynamicsRewardModel(3, 1, [8])
    optimizer = th.optim.Adam(model.parameters(), lr=1e-2)
    reference = copy.deepcopy(model)
    reference_optimizer = th.optim.Adam(reference.parameters(), lr=1e-2)
    rows = 3 * 4
    data = [th.randn(rows, 3), th.randn(rows, 1), th.randn(rows, 3), th.randn(rows, 1), th.randn(rows, 1), th.ones(rows, 1)]
    updates = model_updates(model, optimizer, data, batch_size=4, gradient_steps=3)
    for step, update in enumerate(updates):
        losses = reference.loss(*(tensor[step * 4 : (step + 1) * 4] for tensor in data))
        th.testing.assert_close(update.losses.total, losses.total)
        reference_optimizer.zero_grad()
        losses.total.backward()
        reference_optimizer.step()
    for own, expected in zip(model.parameters(), reference.parameters()):
        th.testing.assert_close(own, expected)
