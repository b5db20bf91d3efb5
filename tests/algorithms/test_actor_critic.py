"""The actor-critic terminal value ("q"): its TD target, the planner's score and prior with it, the algorithms."""

import json
import math
import zipfile

import numpy as np
import pytest
import torch as th
from gymnasium import spaces
from stable_baselines3.common.utils import ConstantSchedule

from sb3_maxdiff import NNMPPI, MaxDiffMPPI
from sb3_maxdiff.common.actor_critic import ActorCritic, AgentActorCritics
from sb3_maxdiff.common.models import DynamicsRewardModel
from sb3_maxdiff.common.mppi import MPPIPlanner, PlannerSettings, prior_paths, rollout

POINT_MASS = "sb3_maxdiff/PointMass-beta1-v0"
BOX1 = spaces.Box(-np.inf, np.inf, (1,), np.float32)
ACTION1 = spaces.Box(-1.0, 1.0, (1,), np.float32)


def linear_layers(module: th.nn.Module) -> list[th.nn.Linear]:
    return [layer for layer in module.modules() if isinstance(layer, th.nn.Linear)]


def constant_output(module: th.nn.Module, bias: list[float]) -> None:
    """The last linear layer of ``module`` outputs ``bias`` whatever its input."""
    last = linear_layers(module)[-1]
    with th.no_grad():
        last.weight.zero_()
        last.bias.copy_(th.tensor(bias))


def hand_actor_critic(gamma: float = 0.9) -> ActorCritic:
    """Target critics Q'_1(s, a) = s + a and Q'_2(s, a) = 2 s (linear, no hidden layer)."""
    actor_critic = ActorCritic(BOX1, ACTION1, ConstantSchedule(1e-3), net_arch=[4], gamma=gamma)
    actor_critic.critic_target = type(actor_critic.critic_target)(
        BOX1, ACTION1, [], actor_critic.critic_target.features_extractor, 1, n_critics=2, share_features_extractor=False
    )
    with th.no_grad():
        q1, q2 = linear_layers(actor_critic.critic_target)
        q1.weight.copy_(th.tensor([[1.0, 1.0]]))
        q1.bias.zero_()
        q2.weight.copy_(th.tensor([[2.0, 0.0]]))
        q2.bias.zero_()
    return actor_critic


def test_td_target_on_a_hand_computed_batch_is_taken_at_the_actors_next_action(monkeypatch):
    actor_critic = hand_actor_critic(gamma=0.9)
    next_obs = th.tensor([[1.0], [2.0], [3.0]])
    seen = []

    def next_action(obs):  # pi(s') = 0.5, -1 and 0.5, with log-probabilities -1, 0.5 and 2
        seen.append(obs)
        return th.tensor([[0.5], [-1.0], [0.5]]), th.tensor([-1.0, 0.5, 2.0])

    monkeypatch.setattr(actor_critic.actor, "action_log_prob", next_action)
    rewards, dones = th.tensor([[1.0], [0.0], [2.0]]), th.tensor([[0.0], [0.0], [1.0]])
    target = actor_critic.td_target(next_obs, rewards, dones, th.tensor(0.2))
    # row 1: min(1 + 0.5, 2) = 1.5, minus 0.2 * -1: 1.7; 1 + 0.9 * 1.7 = 2.53
    # row 2: min(2 - 1, 4) = 1, minus 0.2 * 0.5: 0.9; 0 + 0.9 * 0.9 = 0.81
    # row 3: terminated, no bootstrap: 2
    th.testing.assert_close(target, th.tensor([[2.53], [0.81], [2.0]]))
    assert th.equal(seen[0], next_obs)  # a' is drawn from pi at s', not taken from the buffer


def test_one_update_moves_every_part_and_leaves_the_target_by_polyak():
    th.manual_seed(0)
    actor_critic = ActorCritic(BOX1, ACTION1, ConstantSchedule(1e-2), net_arch=[8], tau=0.1)
    before = {name: tensor.clone() for name, tensor in actor_critic.state_dict().items()}
    obs, actions = th.randn(16, 1), th.rand(16, 1) * 2 - 1
    losses = actor_critic.loss_step(obs, actions, obs + actions, -(obs**2), th.zeros(16, 1))
    assert all(math.isfinite(float(value)) for value in losses)
    assert float(losses.ent_coef) == pytest.approx(1.0)  # SAC's automatic coefficient starts at 1 and is used before its step
    after = actor_critic.state_dict()
    for part in ("actor.", "critic.qf", "log_ent_coef"):
        assert any(not th.equal(before[name], after[name]) for name in after if name.startswith(part)), part
    # each target tensor moved a tenth of the way to the critic's new one
    for name, tensor in after.items():
        if name.startswith("critic_target."):
            online = after[name.replace("critic_target.", "critic.", 1)]
            th.testing.assert_close(tensor, 0.9 * before[name] + 0.1 * online)


def test_non_finite_rows_are_left_out_of_the_losses(monkeypatch):
    th.manual_seed(0)
    obs, actions = th.randn(8, 1), th.rand(8, 1)
    data = [obs, actions, obs + actions, -(obs**2), th.zeros(8, 1)]
    clean, poisoned = (ActorCritic(BOX1, ACTION1, ConstantSchedule(1e-3), net_arch=[8]) for _ in range(2))
    poisoned.load_state_dict(clean.state_dict())
    for actor_critic in (clean, poisoned):  # the actor's mean action and a log-probability of it, without draws
        actor = actor_critic.actor
        monkeypatch.setattr(
            actor, "action_log_prob", lambda o, a=actor: (th.tanh(a.mu(a.latent_pi(o))), -a.mu(a.latent_pi(o)).sum(-1))
        )
    bad = [th.cat([tensor, th.full_like(tensor[:1], math.nan)]) for tensor in data]
    expected, got = clean.loss_step(*data), poisoned.loss_step(*bad)
    for name in expected._fields:
        th.testing.assert_close(getattr(got, name), getattr(expected, name))
    for name, tensor in clean.state_dict().items():
        th.testing.assert_close(poisoned.state_dict()[name], tensor)


def test_the_critics_learn_at_the_executed_action_the_stored_one_clamped_to_the_bounds():
    # "authors" stores the raw planner action; an env that clips executes it clamped to [-1, 1], as the actor's are
    obs = th.randn(8, 1, generator=th.Generator().manual_seed(0))
    stored = th.tensor([[3.0], [-2.5], [0.3], [1.0], [-1.0], [1.7], [-0.2], [0.9]])
    states, losses = [], []
    for actions in (stored, stored.clamp(-1.0, 1.0)):
        th.manual_seed(0)
        actor_critic = ActorCritic(BOX1, ACTION1, ConstantSchedule(1e-2), net_arch=[8], bc_coef=1.0)
        th.manual_seed(1)
        losses.append(actor_critic.loss_step(obs, actions, obs + actions.clamp(-1.0, 1.0), -(obs**2), th.zeros(8, 1)))
        states.append(actor_critic.state_dict())
    assert losses[0] == losses[1]  # Q at 3.0 is not Q at 1.0: the critic's loss tells them apart
    for name, tensor in states[1].items():
        assert th.equal(states[0][name], tensor), name


def test_a_minibatch_without_a_finite_row_leaves_every_parameter_finite():
    th.manual_seed(0)
    actor_critic = ActorCritic(BOX1, ACTION1, ConstantSchedule(1e-3), net_arch=[8])
    obs = th.full((4, 1), math.nan)
    for _ in range(2):  # a second step, where Adam's state holds the first one's
        losses = actor_critic.loss_step(obs, obs, obs, obs, th.zeros(4, 1))
    assert all(bool(th.isfinite(value).all()) for value in losses)
    assert all(bool(th.isfinite(tensor).all()) for tensor in actor_critic.state_dict().values())
    assert all(bool(th.isfinite(v).all()) for o in actor_critic.optimizers for s in o.state.values() for v in s.values())


class ConstantModel(th.nn.Module):
    """s' = s + a, reward 0.5 everywhere."""

    def forward(self, state: th.Tensor, action: th.Tensor) -> tuple[th.Tensor, th.Tensor]:
        return state + action, th.full(state.shape[:-1], 0.5)


def constant_critic(value: float, mean_action: float = 0.0) -> ActorCritic:
    """Both critics output ``value`` everywhere; the actor's mean is ``tanh^-1(mean_action)`` with std e^-20."""
    actor_critic = ActorCritic(BOX1, ACTION1, ConstantSchedule(1e-3), net_arch=[4])
    for q_net in actor_critic.critic.q_networks:
        constant_output(q_net, [value])
    constant_output(actor_critic.actor.mu, [math.atanh(mean_action)])
    constant_output(actor_critic.actor.log_std, [-20.0])  # type: ignore[arg-type]  # a Linear without SDE
    return actor_critic


@pytest.mark.parametrize("fused", [False, True])
def test_a_path_scores_its_discounted_rewards_plus_the_discounted_critic(fused):
    gamma, horizon = 0.9, 3
    critic = constant_critic(4.0)
    if fused:  # the learned model's own rollout: reward 0.5 from its output bias
        model = DynamicsRewardModel(1, 1, [4])
        constant_output(model.reward, [0.5])
    else:
        model = ConstantModel()
    returns, _ = rollout(model, th.zeros(2, 5, 1), th.rand(2, 5, horizon, 1), 1e6, value_discount=gamma, terminal=critic.value)
    expected = 0.5 * (1 + gamma + gamma**2) + gamma**3 * 4.0
    th.testing.assert_close(returns, th.full((2, 5), expected))
    settings = PlannerSettings(horizon=horizon, n_samples=8, control_cost=False, value_discount=gamma, prior_samples=2)
    result = MPPIPlanner(1, settings, prior=critic).plan(model, th.zeros(2, 1), th.zeros(2, horizon, 1))
    th.testing.assert_close(result.stat("predicted_return"), th.full((2,), expected))


def fitted_reward_head(reward_discount: float, steps: int = 600) -> DynamicsRewardModel:
    """A model whose reward head learned, by its TD-like target, a world that pays 1 at every step of an endless
    episode (every row bootstraps)."""
    th.manual_seed(0)
    model = DynamicsRewardModel(1, 1, [16], reward_discount=reward_discount)
    optimizer = th.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(steps):
        obs, actions, next_actions = th.rand(64, 1) * 4 - 2, th.rand(64, 1) * 2 - 1, th.rand(64, 1) * 2 - 1
        losses = model.loss(obs, actions, obs, next_actions, th.ones(64, 1), th.ones(64, 1))
        optimizer.zero_grad()
        losses.reward.backward()
        optimizer.step()
    return model


def test_with_a_terminal_value_a_path_scores_the_discounted_return_at_every_horizon():
    """
    A world that pays 1 per step has the discounted return 1 / (1 - gamma) from every state. With a terminal value
    the reward head learns the one-step reward (its default discount 0), so with the critic at that return a path
    scores it whatever the horizon; with the paper's 0.95 the head learns 1 / (1 - 0.95) = 20 per step and the score
    grows with the horizon (from 28 at H = 1 to 192 at H = 20 here).
    """
    gamma = 0.9
    value = 1.0 / (1.0 - gamma)
    critic = constant_critic(value)
    plain = NNMPPI(POINT_MASS, policy_kwargs={"net_arch": [16]}, **SMALL)
    with_critic = NNMPPI(POINT_MASS, terminal_value="q", policy_kwargs={"net_arch": [16]}, **SMALL)
    assert plain.policy.reward_discount == 0.95 and with_critic.policy.reward_discount == 0.0
    for reward_discount, per_step in ((0.0, 1.0), (0.95, 20.0)):
        model = fitted_reward_head(reward_discount)
        states = th.rand(8, 1) * 4 - 2
        th.testing.assert_close(model.predict_reward(states, th.rand(8, 1)), th.full((8,), per_step), rtol=0.02, atol=0)
        scores = {
            horizon: rollout(
                model, th.zeros(1, 4, 1), th.zeros(1, 4, horizon, 1), 2.0, value_discount=gamma, terminal=critic.value
            )[0]
            for horizon in (1, 5, 20)
        }
        for horizon, score in scores.items():
            expected = per_step * (1 - gamma**horizon) / (1 - gamma) + gamma**horizon * value
            th.testing.assert_close(score, th.full((1, 4), expected), rtol=0.02, atol=0)


def test_the_reward_discount_is_checked():
    with pytest.raises(ValueError, match=r"reward_discount must be a number in \[0, 1\), got 1.0"):
        NNMPPI(POINT_MASS, policy_kwargs={"reward_discount": 1.0}, **SMALL)
    kept = NNMPPI(POINT_MASS, terminal_value="q", policy_kwargs={"net_arch": [16], "reward_discount": 0.95}, **SMALL)
    assert kept.policy.reward_discount == 0.95 and kept.policy.model.reward_discount == 0.95


def without_saved_attribute(path, name: str) -> None:
    """Rewrite the SB3 file ``path`` as a version that did not save the attribute ``name`` would have."""
    with zipfile.ZipFile(path) as archive:
        entries = {entry: archive.read(entry) for entry in archive.namelist()}
    data = json.loads(entries["data"])
    del data[name]
    entries["data"] = json.dumps(data).encode()
    with zipfile.ZipFile(path, "w") as archive:
        for entry, content in entries.items():
            archive.writestr(entry, content)


@pytest.mark.parametrize("terminal_value", [True, "q"])
def test_the_reward_heads_discount_is_saved_and_an_older_file_keeps_the_papers(terminal_value, tmp_path):
    model = NNMPPI(POINT_MASS, terminal_value=terminal_value, policy_kwargs={"net_arch": [16]}, **SMALL)
    model.save(tmp_path / "model.zip")
    assert NNMPPI.load(tmp_path / "model.zip").policy.model.reward_discount == 0.0
    # a file saved before the discount was: its reward head learned with 0.95, and goes on doing so
    without_saved_attribute(tmp_path / "model.zip", "reward_discount")
    older = NNMPPI.load(tmp_path / "model.zip")
    assert older.reward_discount == 0.95 and older.policy.model.reward_discount == 0.95
    older.save(tmp_path / "again.zip")
    assert NNMPPI.load(tmp_path / "again.zip").policy.model.reward_discount == 0.95
    # independent agents: an agent taken out keeps it
    agents = NNMPPI(
        agent_env(2), independent_agents=True, terminal_value=terminal_value, policy_kwargs={"net_arch": [16]}, **SMALL
    )
    agents.save(tmp_path / "agents.zip")
    without_saved_attribute(tmp_path / "agents.zip", "reward_discount")
    assert NNMPPI.load(tmp_path / "agents.zip").agent(1).policy.model.reward_discount == 0.95


def test_the_prior_proposes_its_rollouts_and_seeds_the_nominal_at_an_episode_start():
    critic = constant_critic(0.0, mean_action=0.6)
    paths = prior_paths(critic, ConstantModel(), th.zeros(3, 1), 4, 5, 1e6)
    assert paths.shape == (3, 5, 5, 1)  # the mean path, then 4 drawn (std e^-20: the same)
    th.testing.assert_close(paths, th.full((3, 5, 5, 1), 0.6))
    # the reward prefers a = 0.6; a warm start of -1 everywhere except where an episode starts
    settings = PlannerSettings(horizon=5, n_samples=64, noise_std=1e-3, control_cost=False, value_discount=1.0)
    planner = MPPIPlanner(1, settings, prior=critic)
    nominal = th.full((2, 5, 1), -1.0)
    result = planner.plan(ConstantModel(), th.zeros(2, 1), nominal, reset=th.tensor([True, False]))
    assert abs(float(result.actions[0, 0]) - 0.6) < 0.01  # started from the prior's mean path
    assert abs(float(result.actions[1, 0]) + 1.0) < 0.01  # kept its warm start
    th.testing.assert_close(result.nominal[1, -1], th.tensor([0.6]), atol=0.01, rtol=0)  # the step shifted in
    # prior samples need a prior
    with pytest.raises(ValueError, match="prior_samples=2 needs a planner with a prior"):
        MPPIPlanner(1, PlannerSettings(n_samples=8, prior_samples=2))
    with pytest.raises(ValueError, match="prior_samples must be an int in"):
        PlannerSettings(n_samples=8, prior_samples=8)


# ----- the algorithms ----------------------------------------------------------------------------
SMALL = dict(horizon=3, n_samples=20, learning_starts=20, batch_size=16, gradient_steps=2, seed=0)
TINY = dict(net_arch=[16], critic_net_arch=[16])


@pytest.mark.parametrize("algo", [NNMPPI, MaxDiffMPPI])
def test_learn_log_save_load_and_act_with_the_actor_alone(algo, tmp_path):
    model = algo(POINT_MASS, terminal_value="q", gamma=0.95, actor_samples=0.1, policy_kwargs=TINY, **SMALL)
    assert model.policy.planner.settings.prior_samples == 2 and model.policy.planner.prior is model.policy.actor_critic
    assert not model.policy.model.has_value  # the critic replaces the model's value net
    model.learn(50)
    logged = model.logger.name_to_value
    for name in ("train/critic_loss", "train/actor_loss", "train/ent_coef", "train/ent_coef_loss"):
        assert np.isfinite(logged[name]), name
    assert logged["train/ent_coef"] < 1.0  # the coefficient took steps (30 steps after the warm-up, 2 updates each)
    model.save(tmp_path / "model.zip")
    loaded = algo.load(tmp_path / "model.zip")
    assert loaded.terminal_value == "q" and loaded.policy.actor_critic is not None
    for name, tensor in model.policy.state_dict().items():
        assert th.equal(tensor, loaded.policy.state_dict()[name]), name
    for name in ("actor_optimizer", "critic_optimizer", "ent_coef_optimizer"):
        saved = getattr(model.policy.actor_critic, name).state_dict()["state"]
        assert saved and str(saved) == str(getattr(loaded.policy.actor_critic, name).state_dict()["state"]), name
    obs = np.array([0.3, -0.2, 0.1, 0.0], dtype=np.float32)[: model.observation_space.shape[0]]
    action, state = loaded.predict(obs, deterministic=True, planner=False)
    with th.no_grad():
        mean = loaded.policy.actor_critic.actor(th.as_tensor(obs)[None], deterministic=True)[0].numpy()
    np.testing.assert_allclose(action, loaded.policy.unscale_action(mean), rtol=1e-6)
    assert state is None and action.shape == model.action_space.shape
    loaded.set_env(model.get_env())
    loaded.learn(10, reset_num_timesteps=False)  # training goes on from the file


def test_the_actor_needs_the_critic_and_bad_options_are_named():
    plain = NNMPPI(POINT_MASS, policy_kwargs={"net_arch": [16]}, **SMALL)
    with pytest.raises(ValueError, match="planner=False acts with the actor, which only terminal_value='q' has"):
        plain.predict(np.zeros(plain.observation_space.shape, dtype=np.float32), planner=False)
    for options, match in (
        (dict(terminal_value="Q"), r"terminal_value must be one of \[False, True, 'v', 'q'\], got 'Q'"),
        (dict(terminal_value="q", actor_samples=1.0), r"actor_samples must be a share in \[0, 1\), got 1.0"),
        (dict(terminal_value="q", actor_bc_coef=-1.0), "actor_bc_coef must be a number >= 0"),
    ):
        with pytest.raises(ValueError, match=match):
            NNMPPI(POINT_MASS, **options)


def test_behaviour_cloning_pulls_the_actor_to_the_executed_actions():
    th.manual_seed(0)
    obs = th.randn(64, 1)
    executed = th.full((64, 1), 0.7)
    data = [obs, executed, obs, th.zeros(64, 1), th.zeros(64, 1)]
    distances = {}
    for bc_coef in (0.0, 10.0):
        th.manual_seed(1)
        actor_critic = ActorCritic(BOX1, ACTION1, ConstantSchedule(3e-3), net_arch=[16], bc_coef=bc_coef)
        for _ in range(200):
            actor_critic.loss_step(*data)
        with th.no_grad():
            distances[bc_coef] = float((actor_critic.actor(obs, deterministic=True) - executed).abs().mean())
    assert distances[10.0] < 0.1 < distances[0.0]


# ----- independent agents, each with its own actor and critics ----------------------------------------------------
def agent_env(n_envs: int, first_reward_scale: float = 1.0):
    from stable_baselines3.common.env_util import make_vec_env

    env = make_vec_env(POINT_MASS, n_envs=n_envs, seed=0)
    if first_reward_scale != 1.0:
        scale = np.ones(n_envs)
        scale[0] = first_reward_scale
        from stable_baselines3.common.vec_env import VecEnvWrapper

        class ScaleFirst(VecEnvWrapper):
            def reset(self):
                return self.venv.reset()

            def step_wait(self):
                obs, rewards, dones, infos = self.venv.step_wait()
                return obs, rewards * scale, dones, infos

        env = ScaleFirst(env)
    return env


def critic_agents(algo=MaxDiffMPPI, n_envs: int = 3, first_reward_scale: float = 1.0, **kwargs):
    options = dict(terminal_value="q", gamma=0.95, actor_samples=0.1, policy_kwargs=TINY, device="cpu", **SMALL)
    return algo(agent_env(n_envs, first_reward_scale), independent_agents=True, **{**options, **kwargs})


def test_each_agents_critic_values_and_acts_as_that_agent_alone():
    th.manual_seed(0)
    agents = AgentActorCritics(3, BOX1, ACTION1, ConstantSchedule(1e-3), [8], th.nn.ReLU, 0.9)
    obs = th.randn(3, 5, 1)
    values = agents.value(obs)
    assert values.shape == (3, 5)
    for index in range(3):
        th.testing.assert_close(values[index], agents.agent(index).value(obs[index]), rtol=0, atol=0)
    th.manual_seed(1)
    mean, drawn = agents.act(obs)
    th.manual_seed(1)
    eps = th.randn(3, 5, 1)  # one draw for every agent
    for index in range(3):
        agent_mean, log_std, _ = agents.agent(index).actor.get_action_dist_params(obs[index])
        th.testing.assert_close(mean[index], th.tanh(agent_mean), rtol=0, atol=0)
        th.testing.assert_close(drawn[index], th.tanh(agent_mean + log_std.exp() * eps[index]), rtol=0, atol=0)
    assert not th.equal(values[0], values[1])  # each agent's own initial weights
    assert agents.optimizer_names[:4] == [
        "agents.0.actor_optimizer",
        "agents.0.critic_optimizer",
        "agents.0.ent_coef_optimizer",
        "agents.1.actor_optimizer",
    ]


def test_each_agents_update_is_that_agent_alone_on_its_rows():
    import copy

    th.manual_seed(0)
    agents = AgentActorCritics(2, BOX1, ACTION1, ConstantSchedule(1e-3), [8], th.nn.ReLU, 0.9)
    alone = [copy.deepcopy(agents.agent(index)) for index in range(2)]
    generator = th.Generator().manual_seed(3)
    batch = [th.randn(2, 16, 1, generator=generator) for _ in range(7)]
    batch[-1] = th.zeros(2, 16, 1)  # no row terminated
    th.manual_seed(4)
    losses = agents.update(batch)
    th.manual_seed(4)  # the agents draw their actions one after the other, in agent order
    alone_losses = [agent.update([part[index] for part in batch]) for index, agent in enumerate(alone)]
    for index in range(2):
        for mine, theirs in zip(agents.agent(index).state_dict().values(), alone[index].state_dict().values()):
            th.testing.assert_close(mine, theirs, rtol=0, atol=0)
    expected = th.stack([alone_losses[0].critic, alone_losses[1].critic]).mean()
    th.testing.assert_close(losses.critic, expected, rtol=0, atol=0)


@pytest.mark.parametrize("algo", [NNMPPI, MaxDiffMPPI])
def test_independent_agents_learn_save_load_and_act_with_their_own_critics(algo, tmp_path):
    model = critic_agents(algo)
    assert isinstance(model.policy.actor_critic, AgentActorCritics)
    assert model.policy.planner.prior is model.policy.actor_critic
    model.learn(3 * 50)
    logged = model.logger.name_to_value
    for name in ("train/critic_loss", "train/actor_loss", "train/ent_coef", "train/ent_coef_loss"):
        assert np.isfinite(logged[name]), name
    first, second = (model.policy.actor_critic.agent(index) for index in (0, 1))
    assert not th.equal(first.actor.mu.weight, second.actor.mu.weight)
    model.save(tmp_path / "agents.zip")
    loaded = algo.load(tmp_path / "agents.zip", env=agent_env(3), device="cpu")
    for name, tensor in model.policy.state_dict().items():
        assert th.equal(tensor, loaded.policy.state_dict()[name]), name
    for mine, theirs in zip(model.policy.actor_critic.optimizers, loaded.policy.actor_critic.optimizers, strict=True):
        assert mine.state_dict()["state"] and str(mine.state_dict()["state"]) == str(theirs.state_dict()["state"])
    obs = np.array([[0.3, -0.2, 0.1, 0.0], [0.0, 0.1, 0.2, 0.3], [-0.4, 0.0, 0.0, 0.1]], dtype=np.float32)
    obs = obs[:, : model.observation_space.shape[0]]
    actions, _ = loaded.predict(obs, deterministic=True, planner=False)
    assert actions.shape == (3, *model.action_space.shape)
    with th.no_grad():
        for index in range(3):
            mean = loaded.policy.actor_critic.agent(index).actor(th.as_tensor(obs[index])[None], deterministic=True)
            np.testing.assert_allclose(actions[index], loaded.policy.unscale_action(mean.numpy())[0], rtol=1e-6)
    with pytest.raises(ValueError, match=r"one row per independent agent \(3\), got 1 rows"):
        loaded.predict(obs[0], planner=False)
    loaded.learn(3 * 10, reset_num_timesteps=False)  # training goes on from the file
    # one agent taken out: its own actor, critics and their optimizers' state, and it trains on alone
    single = model.agent(2)
    assert isinstance(single.policy.actor_critic, ActorCritic)
    for name, tensor in model.policy.actor_critic.agent(2).state_dict().items():
        assert th.equal(tensor, single.policy.actor_critic.state_dict()[name]), name
    for mine, theirs in zip(single.policy.actor_critic.optimizers, model.policy.actor_critic.agent(2).optimizers):
        assert str(mine.state_dict()["state"]) == str(theirs.state_dict()["state"])
    single.save(tmp_path / "agent2.zip")
    alone = algo.load(tmp_path / "agent2.zip", env=agent_env(1))
    alone.learn(20, reset_num_timesteps=False)


def test_changing_one_agents_rewards_leaves_the_others_critics_bit_for_bit_unchanged():
    runs = []
    for scale in (1.0, -3.0):
        model = critic_agents(first_reward_scale=scale, warmup_actions="planner")
        model.learn(3 * 60)
        runs.append(model)
    plain, changed = (run.policy.actor_critic for run in runs)
    assert not th.equal(plain.agent(0).critic.q_networks[0][0].weight, changed.agent(0).critic.q_networks[0][0].weight)
    for index in (1, 2):
        for name, tensor in plain.agent(index).state_dict().items():
            assert th.equal(tensor, changed.agent(index).state_dict()[name]), (index, name)
        np.testing.assert_array_equal(runs[0].replay_buffer.actions[:60, index], runs[1].replay_buffer.actions[:60, index])


def test_cuda_graph_with_the_critic_is_taken_and_has_no_effect_on_a_cpu():
    with pytest.warns(UserWarning, match="cuda_graph=True has no effect on device cpu"):
        model = critic_agents(n_envs=2, cuda_graph=True)
    model.learn(2 * 30)
    assert model.cuda_graph and model.policy.cuda_graph
