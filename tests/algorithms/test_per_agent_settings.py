"""
Independent agents with settings of their own in one batch: an alpha per agent (a sweep over alpha as one batch)
and a control-cost flag per agent (MaxDiff and NN-MPPI agents in one batch).
"""

from typing import Any

import numpy as np
import pytest
import torch as th
from helpers import TINY
from stable_baselines3.common.env_util import make_vec_env
from test_independent_agents import agent_params, independent

from sb3_maxdiff import NNMPPI, MaxDiffMPPI, StepSchedule
from sb3_maxdiff.common.entropy import EntropyBonus, make_path_entropy
from sb3_maxdiff.common.mppi import MPPIPlanner

PLANNER: dict[str, Any] = dict(action_dim=2, horizon=6, n_samples=32, temperature=0.5, noise_std=0.3)
ENTROPY = make_path_entropy(obs_dim=4, horizon=6, weights=[1.0, 1.0, 0.5, 0.5])
# agent 0 plans as NN-MPPI, agents 1 and 2 as MaxDiff with two alphas
ALPHAS, CONTROL = [0.0, 5.0, 50.0], (True, False, False)


class LinearModel(th.nn.Module):
    """Known dynamics on any rows: ``s' = A s + B a``, reward ``-|s'|^2`` (no parameters to learn)."""

    def __init__(self):
        super().__init__()
        generator = th.Generator().manual_seed(3)
        self.a = th.eye(4) + 0.1 * th.randn(4, 4, generator=generator)
        self.b = th.randn(2, 4, generator=generator)

    def forward(self, state, action):
        next_state = state @ self.a.T + action @ self.b
        return next_state, -(next_state**2).sum(dim=-1)


def mixed_planner() -> MPPIPlanner:
    bonus = EntropyBonus(ENTROPY, n_agents=3)
    bonus.alpha.copy_(th.tensor(ALPHAS))
    return MPPIPlanner(**PLANNER, control_cost=CONTROL, entropy_bonus=bonus)


def own_planner(index: int) -> MPPIPlanner:
    """The planner agent ``index`` would have alone: its own alpha and flag, one value each."""
    bonus = EntropyBonus(ENTROPY, ALPHAS[index]) if ALPHAS[index] > 0 else None
    return MPPIPlanner(**PLANNER, control_cost=CONTROL[index], entropy_bonus=bonus)


def sample_paths(n_agents: int = 3):
    generator = th.Generator().manual_seed(5)
    returns = th.randn(n_agents, 32, generator=generator)
    noise = 0.3 * th.randn(n_agents, 32, 6, 2, generator=generator)
    states = th.randn(n_agents, 32, 6, 4, generator=generator)
    return returns, noise, states


def test_each_agent_scores_its_samples_by_its_own_settings():
    returns, noise, states = sample_paths()
    scores, _ = mixed_planner().scores(returns, noise, states)
    # as each agent's own planner scores them, bit for bit
    for index in range(3):
        own, _ = own_planner(index).scores(returns[index : index + 1], noise[index : index + 1], states[index : index + 1])
        assert th.equal(scores[index], own[0]), index
    # and against the formulas: NN-MPPI's control term (lambda = 0.5, sigma = 0.3), MaxDiff's alpha * S
    control = 0.5 * 0.5 * (noise[0] ** 2).sum(dim=(-2, -1)) / 0.3**2
    th.testing.assert_close(scores[0], returns[0] - control)
    for index in (1, 2):
        th.testing.assert_close(scores[index], returns[index] + ALPHAS[index] * ENTROPY(states[index]))


def test_an_agent_with_alpha_zero_ignores_a_non_finite_entropy():
    returns, noise, states = sample_paths()
    states[0, :4] = float("nan")  # agent 0 (alpha 0) and agent 1 (alpha 5) get paths with no finite entropy
    states[1, :4] = float("nan")
    scores, _ = mixed_planner().scores(returns, noise, states)
    assert th.isfinite(scores[0]).all()  # NN-MPPI's scores never see the entropy
    assert not th.isfinite(scores[1, :4]).any() and th.isfinite(scores[1, 4:]).all()


def test_a_mixed_batch_plans_each_agent_as_its_own_planner_on_the_same_noise(monkeypatch):
    model, obs = LinearModel(), th.tensor([[1.0, -1.0, 0.0, 0.5], [0.5, 0.0, -1.0, 0.0], [-1.0, 1.0, 0.3, 0.0]])
    noise = th.randn(3, 32, 6, 2, generator=th.Generator().manual_seed(9))
    nominal = 0.1 * th.randn(3, 6, 2, generator=th.Generator().manual_seed(8))
    real_randn = th.randn

    def fixed_noise(agents):
        return lambda shape, **kwargs: (
            noise[agents].clone() if tuple(shape) == (len(agents), 32, 6, 2) else real_randn(shape, **kwargs)
        )

    monkeypatch.setattr(th, "randn", fixed_noise([0, 1, 2]))
    batch = mixed_planner().plan(model, obs, nominal)
    for index in range(3):
        monkeypatch.setattr(th, "randn", fixed_noise([index]))
        own = own_planner(index).plan(model, obs[index : index + 1], nominal[index : index + 1])
        th.testing.assert_close(batch.actions[index], own.actions[0], rtol=0, atol=1e-6)
        th.testing.assert_close(batch.nominal[index], own.nominal[0], rtol=0, atol=1e-6)


def test_one_alpha_per_agent_when_all_equal_is_the_shared_alpha_bit_for_bit():
    runs = []
    for alpha in (5.0, [5.0, 5.0, 5.0]):
        model = independent(alpha=alpha, warmup_actions="planner", learning_starts=16)
        model.learn(3 * 60)
        runs.append(model)
    shared, per_agent = runs
    np.testing.assert_array_equal(shared.replay_buffer.actions, per_agent.replay_buffer.actions)
    for index in range(3):
        assert th.equal(agent_params(shared, index), agent_params(per_agent, index))


def test_changing_one_agents_rewards_leaves_the_other_agents_alphas_weights_and_actions_unchanged():
    runs = []
    for scale in (1.0, -3.0):
        model = independent(
            first_reward_scale=scale,
            alpha=[StepSchedule([1.0, 10.0], [30]), 100.0, 0.0],
            control_cost=[False, False, True],
            warmup_actions="planner",
            learning_starts=16,
        )
        model.learn(3 * 80)
        runs.append(model)
    plain, changed = runs
    assert not np.array_equal(plain.replay_buffer.actions[:80, 0], changed.replay_buffer.actions[:80, 0])
    assert th.equal(plain.policy.alpha, changed.policy.alpha) and plain.policy.alpha.tolist() == [10.0, 100.0, 0.0]
    for index in (1, 2):
        assert th.equal(agent_params(plain, index), agent_params(changed, index))
        np.testing.assert_array_equal(plain.replay_buffer.actions[:80, index], changed.replay_buffer.actions[:80, index])


def test_alphas_follow_each_agents_schedule_and_are_logged_per_agent(tmp_path):
    import csv

    import gymnasium as gym
    from stable_baselines3.common.logger import configure
    from stable_baselines3.common.monitor import Monitor
    from stable_baselines3.common.vec_env import DummyVecEnv

    env = DummyVecEnv([lambda: Monitor(gym.make("sb3_maxdiff/PointMass-beta1-v0", max_episode_steps=10)) for _ in range(3)])
    alpha = [StepSchedule([1.0, 2.0], [25]), 3.0, 0.0]
    model = MaxDiffMPPI(env, independent_agents=True, alpha=alpha, seed=0, **{**TINY, "learning_starts": 10})
    model.set_logger(configure(str(tmp_path), ["csv"]))
    model.learn(3 * 20, log_interval=1)
    assert model.policy.alpha.tolist() == [1.0, 3.0, 0.0]
    model.learn(3 * 10, reset_num_timesteps=False, log_interval=1)
    assert model.policy.alpha.tolist() == [2.0, 3.0, 0.0]
    with open(tmp_path / "progress.csv") as file:
        last = [row for row in csv.DictReader(file) if row["train/alpha"]][-1]
    assert [float(last[f"train/alpha_agent_{index}"]) for index in range(3)] == [2.0, 3.0, 0.0]
    assert float(last["train/alpha"]) == pytest.approx(5.0 / 3)


def test_parameters_set_from_another_batch_plan_on_with_this_models_own_alphas():
    """``set_parameters`` loads the other batch's alphas into the planner; the next training step writes back the
    model's own, although they have not changed since they were last written."""
    model = independent(n_envs=2, alpha=[1.0, 2.0], learning_starts=5)
    model.learn(2 * 8)
    model.set_parameters(independent(n_envs=2, alpha=[5.0, 6.0]).get_parameters())
    assert model.policy.alpha.tolist() == [5.0, 6.0]
    model.learn(2 * 1, reset_num_timesteps=False)
    assert model.policy.alpha.tolist() == [1.0, 2.0]


def test_save_load_keeps_each_agents_settings_and_predictions(tmp_path):
    model = independent(alpha=[1.0, 10.0, 0.0], control_cost=[False, False, True])
    model.learn(3 * 30)
    model.save(tmp_path / "batch.zip")
    loaded = MaxDiffMPPI.load(tmp_path / "batch.zip", device="cpu")
    assert loaded.alpha == [1.0, 10.0, 0.0] and loaded.control_cost == [False, False, True]
    assert loaded.policy.alpha.tolist() == [1.0, 10.0, 0.0] and loaded.policy.planner.settings.control_cost == (
        False,
        False,
        True,
    )
    obs = np.zeros((3, 4), dtype=np.float32)
    actions = []
    for algorithm in (model, loaded):
        th.manual_seed(2)
        actions.append(algorithm.predict(obs)[0])
    np.testing.assert_array_equal(*actions)


def test_agents_of_a_mixed_batch_come_out_with_their_own_settings(tmp_path):
    model = independent(alpha=[7.0, 0.0], control_cost=[False, True], n_envs=2)
    model.learn(2 * 30)
    maxdiff, nnmppi = model.agent(0), model.agent(1, as_nnmppi=True)
    assert type(maxdiff) is MaxDiffMPPI and maxdiff.alpha == 7.0 and maxdiff.control_cost is False
    assert maxdiff.policy.alpha.item() == 7.0
    assert type(nnmppi) is NNMPPI and nnmppi.control_cost is True and nnmppi.policy.alpha is None
    assert not hasattr(nnmppi, "alpha") and not hasattr(nnmppi, "explr_dims")
    nnmppi.save(tmp_path / "nnmppi.zip")
    loaded = NNMPPI.load(tmp_path / "nnmppi.zip", device="cpu")
    assert loaded.control_cost is True and loaded.policy.planner.entropy_bonus is None
    for key, value in model.policy.model.agent_state_dict(1).items():
        assert th.equal(loaded.policy.model.agent_state_dict(0)[key], value), key


def test_every_agent_taken_out_of_a_batch_plans_with_its_own_alpha():
    """Agent i's planner weighs the path entropy by agent i's alpha (not agent 0's), whichever agent is taken out."""
    alphas = [7.0, 3.0, 0.5]
    model = independent(alpha=alphas)
    model.learn(3 * 20)
    for index, alpha in enumerate(alphas):
        agent = model.agent(index)
        assert agent.alpha == alpha and agent.policy.alpha.item() == alpha


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(alpha=[1.0, 2.0, 3.0], independent_agents=False), "needs independent_agents=True"),
        (dict(alpha=[1.0, 2.0]), "one value per independent agent \\(3"),
        (dict(alpha=[]), "one value per independent agent, got \\[\\]"),
        (dict(alpha=[1.0, -2.0, 3.0]), "alpha must be >= 0"),
        (dict(control_cost=[True, False]), "control_cost must hold one value per independent agent"),
        (dict(control_cost=[True, 1, False]), "control_cost must be True or False, got 1"),
    ],
)
def test_bad_per_agent_settings_name_the_parameter(kwargs, match):
    env = make_vec_env("sb3_maxdiff/PointMass-beta1-v0", n_envs=3)
    with pytest.raises(ValueError, match=match):
        MaxDiffMPPI(env, **{**TINY, "independent_agents": True, "device": "cpu", **kwargs})


def test_as_nnmppi_refuses_an_agent_that_does_not_plan_as_nnmppi():
    model = independent(alpha=[7.0, 0.0, 0.0], control_cost=[False, True, False])
    with pytest.raises(ValueError, match=r"agent 0 has alpha 7\.0 and control_cost False"):
        model.agent(0, as_nnmppi=True)
    with pytest.raises(ValueError, match=r"agent 2 has alpha 0\.0 and control_cost False"):
        model.agent(2, as_nnmppi=True)
