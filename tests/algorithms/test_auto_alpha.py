"""
``alpha="auto"``: the rule against hand computations, its invariance to the reward's scale, each agent's own alpha,
save/load, YAML, and its errors.
"""

import csv
import math

import gymnasium as gym
import numpy as np
import pytest
import torch as th
import yaml
from helpers import TINY, process_state_kept
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.logger import configure
from stable_baselines3.common.vec_env import DummyVecEnv
from test_per_agent_settings import ENTROPY, PLANNER, LinearModel

from sb3_maxdiff import MaxDiffMPPI
from sb3_maxdiff.common.auto_alpha import AutoAlpha, parse_auto_alpha, update_auto_alpha
from sb3_maxdiff.common.entropy import EntropyBonus
from sb3_maxdiff.common.mppi import STAT_NAMES, MPPIPlanner, sample_spread
from sb3_maxdiff.train import main as train_main
from sb3_maxdiff.zoo import HYPERPARAMS_DIR

ENV_ID = "sb3_maxdiff/PointMassUnbounded-beta0_01-v0"


def stats_with(return_spread, entropy_spread) -> th.Tensor:
    """Planner statistics of len(return_spread) environments with the given spreads (the rest zeros)."""
    stats = th.zeros(len(return_spread), len(STAT_NAMES))
    stats[:, STAT_NAMES.index("return_spread")] = th.tensor(return_spread)
    stats[:, STAT_NAMES.index("entropy_spread")] = th.tensor(entropy_spread)
    return stats


def test_sample_spread_is_the_standard_deviation_of_the_finite_values():
    values = th.tensor([[1.0, 3.0, float("nan"), float("-inf")], [2.0, 2.0, 2.0, 2.0], [5.0, float("nan"), math.inf, 1.0]])
    th.testing.assert_close(sample_spread(values), th.tensor([1.0, 0.0, 2.0]))


def test_the_rule_against_hand_computations():
    # "auto": the first target as it is, ratio * std(R) / std(S) = 0.5 * 4 / 0.5 = 4
    alpha = th.tensor(float("nan"))
    update_auto_alpha(alpha, stats_with([4.0], [0.5]), ratio=0.5, rate=0.25)
    assert alpha.item() == pytest.approx(4.0)
    # then a geometric step: exp(0.75 log 4 + 0.25 log 64) = 4 ** 0.75 * 64 ** 0.25 = 8
    update_auto_alpha(alpha, stats_with([64.0], [0.5]), ratio=0.5, rate=0.25)
    assert alpha.item() == pytest.approx(8.0)
    # one alpha on several environments: their spreads pooled (means 3 and 0.75 -> target 2), rate 1 takes it
    update_auto_alpha(alpha, stats_with([2.0, 4.0], [0.5, 1.0]), ratio=0.5, rate=1.0)
    assert alpha.item() == pytest.approx(2.0)
    # no finite target (no spread of S, or a non-finite one): alpha stays
    for entropy_spread in (0.0, float("nan")):
        update_auto_alpha(alpha, stats_with([2.0], [entropy_spread]), ratio=0.5, rate=1.0)
        assert alpha.item() == pytest.approx(2.0)


def test_per_agent_rule_moves_only_the_automatic_agents():
    alpha = th.tensor([float("nan"), 3.0, 7.0])
    update_auto_alpha(alpha, stats_with([1.0, 1.0, 1.0], [0.1, 0.1, 0.1]), 0.5, 0.5, auto=th.tensor([True, True, False]))
    th.testing.assert_close(alpha, th.tensor([5.0, math.sqrt(3.0 * 5.0), 7.0]))


class ScaledModel(th.nn.Module):
    """:class:`LinearModel` with its rewards multiplied by ``scale``."""

    def __init__(self, scale: float):
        super().__init__()
        self.model, self.scale = LinearModel(), scale

    def forward(self, state, action):
        next_state, reward = self.model(state, action)
        return next_state, self.scale * reward


def closed_loop(scale: float, alpha: float | None, steps: int = 12) -> tuple[list[th.Tensor], th.Tensor]:
    """
    MaxDiff's training loop over a known model: plan, update an automatic alpha (``alpha`` None) from the plan, step
    the true dynamics. The rewards and the temperature are both multiplied by ``scale``.
    """
    bonus = EntropyBonus(ENTROPY, float("nan") if alpha is None else alpha)
    planner = MPPIPlanner(**{**PLANNER, "temperature": scale * PLANNER["temperature"]}, entropy_bonus=bonus)
    model, state = ScaledModel(scale), th.tensor([[1.0, -0.5, 0.2, 0.1]])
    nominal, actions = planner.initial_nominal(1, "cpu"), []
    generator = th.Generator().manual_seed(11)
    for _ in range(steps):
        result = planner.plan(model, state, nominal, generator=generator)
        if alpha is None:
            update_auto_alpha(bonus.alpha, result.stats, ratio=0.5, rate=0.1)
        nominal = result.nominal
        actions.append(result.actions)
        state, _ = model(state, result.actions)
    return actions, bonus.alpha.clone()


def test_automatic_alpha_makes_the_planner_indifferent_to_the_reward_scale():
    """
    Rewards and temperature x4: NN-MPPI's weights do not change, but a fixed alpha weighs the entropy 4 times less
    against the returns. The automatic alpha scales with the rewards, so the planner acts as before.
    """
    actions, alpha = closed_loop(1.0, None)
    scaled_actions, scaled_alpha = closed_loop(4.0, None)
    # equal up to float32 rounding (the log-space steps are not exact under scaling), which 12 steps amplify to ~3e-4
    assert scaled_alpha.item() == pytest.approx(4.0 * alpha.item(), rel=1e-3)
    for action, scaled in zip(actions, scaled_actions):
        th.testing.assert_close(scaled, action, rtol=0.0, atol=2e-3)
    # the same loops with a fixed alpha do not agree: the test sees the difference the rule removes
    fixed, _ = closed_loop(1.0, alpha.item())
    fixed_scaled, _ = closed_loop(4.0, alpha.item())
    assert max((a - b).abs().max().item() for a, b in zip(fixed, fixed_scaled)) > 0.1


def small_model(env, alpha, **kwargs) -> MaxDiffMPPI:
    return MaxDiffMPPI(env=env, alpha=alpha, **{**TINY, "learning_starts": 30}, seed=0, **kwargs)


class ScaleReward(gym.Wrapper):
    def __init__(self, env, scale: float):
        super().__init__(env)
        self.scale = scale

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        return obs, self.scale * reward, terminated, truncated, info


def three_agents(scale_first: float) -> DummyVecEnv:
    def make(index):
        def build():
            env = gym.make(ENV_ID)
            return ScaleReward(env, scale_first) if index == 0 else env

        return build

    env = DummyVecEnv([make(index) for index in range(3)])
    env.seed(0)
    return env


def test_each_agent_has_its_own_automatic_alpha():
    """Agent 0's rewards x10 move its alpha; agents 1 (auto) and 2 (fixed) keep their alphas and actions exactly."""
    runs = {}
    for scale in (1.0, 10.0):
        model = small_model(three_agents(scale), ["auto", "auto_2", 3.0], independent_agents=True)
        model.learn(3 * 120)
        runs[scale] = (model.policy.entropy_bonus.alpha.clone(), model.replay_buffer.actions[:120].copy())
    (alpha, actions), (alpha_10, actions_10) = runs[1.0], runs[10.0]
    assert alpha[2].item() == alpha_10[2].item() == 3.0
    assert th.isfinite(alpha).all() and alpha[0].item() != alpha_10[0].item()
    assert alpha[1].item() == alpha_10[1].item() and alpha[1].item() != 2.0
    np.testing.assert_array_equal(actions[:, 1:], actions_10[:, 1:])
    assert not np.array_equal(actions[:, 0], actions_10[:, 0])


def test_save_load_restores_the_automatic_alpha_bit_for_bit(tmp_path):
    model = small_model(make_vec_env(ENV_ID, n_envs=2, seed=0), ["auto", 1.5], independent_agents=True)
    model.learn(2 * 100)
    learned = model.policy.entropy_bonus.alpha.clone()
    assert th.isfinite(learned).all() and learned[1].item() == 1.5
    model.save(tmp_path / "model.zip")
    loaded = MaxDiffMPPI.load(tmp_path / "model.zip", env=make_vec_env(ENV_ID, n_envs=2, seed=0))
    assert th.equal(loaded.policy.entropy_bonus.alpha, learned)
    assert loaded.alpha == [AutoAlpha(), 1.5]
    loaded._update_planner_parameters()  # what runs before each plan when training resumes: it keeps the learned alpha
    assert th.equal(loaded.policy.entropy_bonus.alpha, learned)
    loaded.learn(2 * 20, reset_num_timesteps=False)
    assert th.isfinite(loaded.policy.entropy_bonus.alpha).all()
    # agent 0 on its own keeps its learned alpha and its rule
    single = loaded.agent(0)
    assert single.alpha == AutoAlpha()
    assert single.policy.entropy_bonus.alpha.item() == loaded.policy.entropy_bonus.alpha[0].item()


def test_automatic_alpha_is_logged_per_agent(tmp_path):
    env = make_vec_env(ENV_ID, n_envs=2, seed=0, env_kwargs=dict(max_episode_steps=25))
    model = small_model(env, ["auto", 1.5], independent_agents=True)
    model.set_logger(configure(str(tmp_path), ["csv"]))
    model.learn(2 * 100, log_interval=1)
    with open(tmp_path / "progress.csv") as file:
        last = [row for row in csv.DictReader(file) if row.get("train/alpha")][-1]
    alpha = model.policy.entropy_bonus.alpha
    assert float(last["train/alpha_agent_0"]) == pytest.approx(alpha[0].item(), rel=1e-6)
    assert float(last["train/alpha_agent_1"]) == 1.5
    assert "planner/return_spread" in last and "planner/entropy_spread" in last


def test_auto_start_value_and_strings():
    assert parse_auto_alpha("auto") == AutoAlpha() and str(AutoAlpha()) == "auto"
    assert parse_auto_alpha("auto_0.1") == AutoAlpha(0.1) and str(AutoAlpha(0.1)) == "auto_0.1"
    model = small_model(ENV_ID, "auto_0.25")
    assert model.policy.entropy_bonus.alpha.item() == 0.25  # starts there
    assert math.isnan(small_model(ENV_ID, "auto").policy.entropy_bonus.alpha.item())  # starts at the first plan


@pytest.mark.parametrize("alpha", ["auto_x", "auto_-1", "auto_0", "auto_nan", "auto_inf", "automatic", "Auto", float("nan")])
def test_bad_alpha_values(alpha):
    with pytest.raises(ValueError, match="alpha"):
        small_model(ENV_ID, alpha)


@pytest.mark.parametrize(
    "kwargs, name",
    [
        (dict(alpha_target_ratio=0.0), "alpha_target_ratio"),
        (dict(alpha_target_ratio=float("nan")), "alpha_target_ratio"),
        (dict(alpha_rate=0.0), "alpha_rate"),
        (dict(alpha_rate=1.5), "alpha_rate"),
        (dict(alpha_rate="fast"), "alpha_rate"),
    ],
)
def test_bad_rule_options(kwargs, name):
    with pytest.raises(ValueError, match=name):
        small_model(ENV_ID, "auto", **kwargs)


def test_yaml_alpha_auto(tmp_path):
    """``alpha: auto`` in an RL Zoo hyperparameter file trains and saves a model whose alpha is automatic."""
    entry = dict(yaml.safe_load((HYPERPARAMS_DIR / "maxdiff.yml").read_text())["point-mass-defaults"])
    entry.update(alpha="auto", horizon=5, n_samples=16, learning_starts=20, batch_size=16, n_timesteps=60)
    entry.update(policy_kwargs="dict(net_arch=[16, 16])")
    (tmp_path / "auto.yml").write_text(yaml.safe_dump({ENV_ID: entry}))
    command = ["--algo", "maxdiff", "--env", ENV_ID, "--conf-file", str(tmp_path / "auto.yml"), "--eval-freq", "-1"]
    with process_state_kept():  # the entry point in this process, as the console script calls it
        train_main([*command, "--seed", "0", "-f", str(tmp_path / "logs")])
    saved = next((tmp_path / "logs" / "maxdiff").glob("*/*.zip"))
    model = MaxDiffMPPI.load(saved)
    assert model.alpha == AutoAlpha() and th.isfinite(model.policy.entropy_bonus.alpha).all()


def test_one_automatic_alpha_for_independent_agents_adapts_per_agent():
    """``alpha="auto"`` (not a list) with independent agents: each agent's alpha follows its own plans."""
    model = small_model(three_agents(10.0), "auto", independent_agents=True)
    model.learn(3 * 80)
    alpha = model.policy.entropy_bonus.alpha
    assert alpha.shape == (3,) and th.isfinite(alpha).all()
    assert len(set(alpha.tolist())) == 3
