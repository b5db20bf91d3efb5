"""N independent agents in one algorithm object (``independent_agents=True``)."""

import csv
from typing import SupportsFloat

import gymnasium as gym
import numpy as np
import pytest
import torch as th
from helpers import TINY
from stable_baselines3.common.callbacks import EvalCallback
from stable_baselines3.common.evaluation import evaluate_policy
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env import DummyVecEnv

from sb3_maxdiff import NNMPPI, MaxDiffMPPI, StepSchedule
from sb3_maxdiff.common.models import BatchedDynamicsRewardModel, DynamicsRewardModel
from sb3_maxdiff.common.optimizers import AgentAdam

POINT_MASS = "sb3_maxdiff/PointMass-beta1-v0"


class ScaledReward(gym.RewardWrapper):
    def __init__(self, env: gym.Env, scale: float):
        super().__init__(env)
        self.scale = scale

    def reward(self, reward: SupportsFloat) -> float:
        return self.scale * float(reward)


def vec_env(n_envs: int, first_reward_scale: float = 1.0, seed: int = 0) -> DummyVecEnv:
    def make(index: int):
        def thunk() -> gym.Env:
            env = Monitor(gym.make(POINT_MASS))
            return ScaledReward(env, first_reward_scale) if index == 0 else env

        return thunk

    env = DummyVecEnv([make(index) for index in range(n_envs)])
    env.seed(seed)
    return env


def independent(algo=MaxDiffMPPI, n_envs: int = 3, first_reward_scale: float = 1.0, **kwargs):
    """Agents on the CPU unless ``device`` says otherwise (some tests replay the CPU generator's draws)."""
    return algo(vec_env(n_envs, first_reward_scale), independent_agents=True, seed=0, **{**TINY, "device": "cpu", **kwargs})


def agent_params(model, index: int) -> th.Tensor:
    return model.policy.model.flat[index].detach().clone()


@pytest.mark.parametrize("algo", [NNMPPI, MaxDiffMPPI])
def test_run(algo):
    model = independent(algo)
    model.learn(3 * 60)
    assert model.agent_timesteps == 60 and model.num_timesteps == 180
    assert isinstance(model.policy.model, BatchedDynamicsRewardModel) and model.policy.model.flat.shape[0] == 3
    assert isinstance(model.policy.optimizer, AgentAdam)
    assert model._n_updates == 5 * (60 - 20)  # per agent: 5 updates per step after learning_starts (per agent)
    # each agent a model of its own: different initial weights, trained on its own data
    assert not th.equal(agent_params(model, 0), agent_params(model, 1))


def test_changing_one_agents_rewards_leaves_the_others_bit_for_bit_unchanged():
    runs = []
    for scale in (1.0, -3.0):
        model = independent(first_reward_scale=scale, warmup_actions="planner", learning_starts=16)
        model.learn(3 * 80)
        runs.append(model)
    plain, changed = runs
    assert not th.equal(agent_params(plain, 0), agent_params(changed, 0))
    assert not np.array_equal(plain.replay_buffer.actions[:80, 0], changed.replay_buffer.actions[:80, 0])
    for index in (1, 2):
        assert th.equal(agent_params(plain, index), agent_params(changed, index))
        np.testing.assert_array_equal(plain.replay_buffer.actions[:80, index], changed.replay_buffer.actions[:80, index])
        state_plain, state_changed = (run.policy.optimizer.state[run.policy.model.flat] for run in runs)
        assert th.equal(state_plain["exp_avg_sq"][index], state_changed["exp_avg_sq"][index])


def single_models(n_agents: int) -> list[DynamicsRewardModel]:
    return [DynamicsRewardModel(4, 2, [16, 16]).double() for _ in range(n_agents)]


def stacked(singles: list[DynamicsRewardModel]) -> BatchedDynamicsRewardModel:
    batched = BatchedDynamicsRewardModel(len(singles), 4, 2, [16, 16]).double()
    for index, single in enumerate(singles):
        batched.load_agent_state_dict(index, single.state_dict())
    return batched


def replay_batch(n_agents: int, batch_size: int) -> list[th.Tensor]:
    generator = th.Generator().manual_seed(1)
    sizes = (4, 2, 4, 2, 1, 1)
    batch = [th.randn(n_agents, batch_size, size, generator=generator, dtype=th.float64) for size in sizes]
    batch[-1] = (batch[-1] > 0).double()  # bootstrap masks
    return batch


def test_batched_rollout_takes_one_row_per_agent_on_the_first_axis():
    batched = stacked(single_models(3))
    with pytest.raises(ValueError, match=r"one row per agent \(3\) on their first axis, got shapes \(21, 4\)"):
        batched.rollout(th.zeros(21, 4, dtype=th.float64), th.zeros(21, 5, 2, dtype=th.float64), 1e6, th.float64)


def test_batched_model_equals_separate_models():
    """Rollout, loss, gradients and an Adam step of N batched agents against the same N models one by one."""
    th.manual_seed(0)
    singles = single_models(3)
    batched = stacked(singles)
    obs, actions = th.randn(3, 7, 4, dtype=th.float64), th.randn(3, 7, 5, 2, dtype=th.float64)
    returns, visited = batched.rollout(obs, actions, 1e6, th.float64)  # (3, 7) and (3, 7, 5, 4)
    data = replay_batch(3, 32)
    loss = batched.loss(*data)
    loss.total.sum().backward()
    reference_optimizers = [th.optim.Adam(single.parameters(), lr=1e-2, weight_decay=1e-4) for single in singles]
    AgentAdam(batched.parameters(), lr=1e-2, weight_decay=1e-4).step()
    for index, single in enumerate(singles):
        single_returns, single_visited = single.rollout(obs[index], actions[index], 1e6, th.float64)
        th.testing.assert_close(returns[index], single_returns, rtol=1e-12, atol=1e-12)
        th.testing.assert_close(visited[index], single_visited, rtol=1e-12, atol=1e-12)
        single_loss = single.loss(*(tensor[index] for tensor in data))
        th.testing.assert_close(loss.total[index], single_loss.total, rtol=1e-12, atol=1e-12)
        th.testing.assert_close(loss.reward[index], single_loss.reward, rtol=1e-12, atol=1e-12)
        single_loss.total.backward()
        for name, param in single.named_parameters():
            th.testing.assert_close(batched.view(name, batched.flat.grad)[index], param.grad, rtol=1e-12, atol=1e-12)
        reference_optimizers[index].step()
        for name, param in single.named_parameters():
            th.testing.assert_close(batched.view(name)[index], param, rtol=1e-12, atol=1e-12)


def test_agent_adam_skips_only_the_inactive_agents():
    th.manual_seed(0)
    param = th.nn.Parameter(th.randn(3, 4, dtype=th.float64))
    optimizer = AgentAdam([param], lr=0.1)
    before = param.detach().clone()
    param.grad = th.ones_like(param)
    param.grad[1] = float("nan")
    optimizer.step(active=th.isfinite(param.grad).all(dim=1))
    assert th.equal(param[1], before[1]) and th.isfinite(param).all()
    assert th.equal(optimizer.state[param]["step"], th.tensor([1.0, 0.0, 1.0], dtype=th.float64))
    # the active agents moved by lr (Adam's first step is lr * sign(grad))
    th.testing.assert_close(param[[0, 2]], before[[0, 2]] - 0.1)


def test_non_finite_loss_skips_that_agent_only(monkeypatch):
    model = independent(NNMPPI)
    model.learn(3 * 25)
    before = [agent_params(model, index) for index in range(3)]
    loss = BatchedDynamicsRewardModel.loss

    def agent_one_diverges(self, *args):
        losses = loss(self, *args)
        nan_for_agent_one = th.tensor([0.0, float("nan"), 0.0])
        return type(losses)(*(None if value is None else value + nan_for_agent_one for value in losses))

    monkeypatch.setattr(BatchedDynamicsRewardModel, "loss", agent_one_diverges)
    with pytest.warns(UserWarning, match=r"Non-finite model loss: 25 of 25 gradient steps were skipped \(agents \[1\]\)"):
        model.learn(3 * 5, reset_num_timesteps=False)
    assert th.equal(agent_params(model, 1), before[1])
    assert not th.equal(agent_params(model, 0), before[0]) and not th.equal(agent_params(model, 2), before[2])


def test_schedules_and_learning_starts_count_each_agents_steps():
    model = independent(alpha=StepSchedule([0.5, 5.0], [30]), learning_starts=20)
    model.learn(3 * 25)
    assert model._n_updates == 5 * 5 and model.policy.alpha.tolist() == [0.5] * 3  # 25 steps per agent
    model.learn(3 * 10, reset_num_timesteps=False)
    assert model.policy.alpha.tolist() == [5.0] * 3


def test_buffer_size_is_per_agent():
    model = independent(buffer_size=100)
    assert model.replay_buffer.buffer_size == 100  # SB3 divides by the number of envs; each agent keeps 100


def test_sample_per_env_reads_each_agents_own_column():
    model = independent(NNMPPI)
    model.learn(3 * 10)
    buffer = model.replay_buffer
    for index in range(3):
        buffer.rewards[:, index] = index
    rewards = buffer.sample_per_env(50).rewards
    assert rewards.shape == (3, 50, 1)
    for index in range(3):
        assert th.all(rewards[index] == index)


def test_save_load_predict_and_continued_training(tmp_path):
    model = independent()
    model.learn(3 * 40)
    obs = model.env.reset()
    th.manual_seed(3)
    actions, state = model.predict(obs)
    model.save(tmp_path / "agents.zip")
    model.save_replay_buffer(tmp_path / "buffer.pkl")
    loaded = MaxDiffMPPI.load(tmp_path / "agents.zip", env=vec_env(3), device="cpu")
    loaded.load_replay_buffer(tmp_path / "buffer.pkl")
    assert loaded.independent_agents and loaded.n_agents == 3
    assert th.equal(loaded.policy.model.flat, model.policy.model.flat)
    th.manual_seed(3)
    np.testing.assert_allclose(loaded.predict(obs)[0], actions, rtol=1e-5, atol=1e-6)
    assert actions.shape == (3, 2) and state.shape == (3, 5, 2)
    loaded.learn(3 * 10, reset_num_timesteps=False)
    assert loaded.agent_timesteps == 50 and loaded.replay_buffer.size() == 49
    with pytest.raises(ValueError, match=r"env must have 3 environments, one per independent agent"):
        MaxDiffMPPI.load(tmp_path / "agents.zip", env=vec_env(2))


def test_predict_uses_agent_i_for_env_i():
    # the replayed draws are the sampling noise's alone: the authors' jitter would draw after each agent's noise
    model = independent(entropy_jitter="diagonal")
    model.learn(3 * 30)
    obs = np.zeros((3, 4), dtype=np.float32)
    th.manual_seed(5)
    together, _ = model.predict(obs)
    alone, agents = [], [model.agent(index) for index in range(3)]
    for index in range(3):
        th.manual_seed(5)
        # the CPU generator gives one draw of (3, K, H, m) the same numbers as three draws of (1, K, H, m)
        th.randn(index, 16, 5, 2)  # the noise of the agents before this one
        alone.append(agents[index].predict(obs[index])[0])
    # same noise and weights; the batched first layer sums in another order (float rounding only)
    np.testing.assert_allclose(np.array(alone), together, atol=2e-3)
    assert np.abs(together[0] - together[1]).max() > 1e-2  # the agents differ by much more than that
    with pytest.raises(ValueError, match=r"one row per independent agent \(3\), got 1 rows"):
        model.predict(obs[0])


def test_agent_is_extracted_on_the_device_of_its_model(monkeypatch):
    """On the model's device, not on the one "auto" would choose (a GPU, where one is present)."""
    import stable_baselines3.common.base_class as base_class

    model = independent()
    resolve = base_class.get_device

    def no_auto(device="auto"):
        assert device != "auto", "the agent's device was left to 'auto'"
        return resolve(device)

    monkeypatch.setattr(base_class, "get_device", no_auto)
    single = model.agent(1)
    assert single.device == model.device
    assert single.policy.model.flat.device == model.policy.model.flat.device


def test_agent_extraction_keeps_weights_and_optimizer_state(tmp_path):
    model = independent()
    model.learn(3 * 40)
    single = model.agent(2)
    assert not single.independent_agents and single.num_timesteps == 40
    batch_state, single_state = (run.policy.optimizer.state[run.policy.model.flat] for run in (model, single))
    for name in single.policy.model.layout:
        assert th.equal(single.policy.model.view(name)[0], model.policy.model.view(name)[2])
        for key in ("exp_avg", "exp_avg_sq"):
            single_moment = single.policy.model.view(name, single_state[key])[0]
            assert th.equal(single_moment, model.policy.model.view(name, batch_state[key])[2])
    assert th.equal(single_state["step"], batch_state["step"][2:3])
    single.save(tmp_path / "agent2.zip")
    reloaded = MaxDiffMPPI.load(tmp_path / "agent2.zip", env=gym.make(POINT_MASS))
    reloaded.learn(30, reset_num_timesteps=False)
    with pytest.raises(ValueError, match=r"index must be an integer in \[0, 2\], got 3"):
        model.agent(3)
    with pytest.raises(ValueError, match="independent_agents=True"):
        MaxDiffMPPI(POINT_MASS, **TINY).agent(0)


def test_callbacks_evaluation_and_logger(tmp_path):
    from stable_baselines3.common.logger import configure

    model = independent()
    model.set_logger(configure(str(tmp_path), ["csv"]))
    callback = EvalCallback(vec_env(3, seed=9), eval_freq=20, n_eval_episodes=3, log_path=str(tmp_path))
    model.learn(3 * 40, callback=callback, progress_bar=True, log_interval=1)
    returns, _ = evaluate_policy(model, vec_env(3, seed=7), n_eval_episodes=3, return_episode_rewards=True)
    assert len(returns) == 3
    assert (tmp_path / "evaluations.npz").exists()


def test_logger_gets_the_means_and_each_agents_values(tmp_path):
    from stable_baselines3.common.logger import configure

    env = DummyVecEnv([lambda: Monitor(gym.make(POINT_MASS, max_episode_steps=20)) for _ in range(3)])
    model = MaxDiffMPPI(env, independent_agents=True, seed=0, **TINY)
    model.set_logger(configure(str(tmp_path), ["csv"]))
    model.learn(3 * 60, log_interval=1)  # every agent ends an episode at least every 20 steps
    with open(tmp_path / "progress.csv") as file:  # SB3 dumps once per ended episode: the first dump of a step has them
        last = [row for row in csv.DictReader(file) if row["train/model_loss"]][-1]
    agent_losses = [float(last[f"train/model_loss_agent_{index}"]) for index in range(3)]
    assert float(last["train/model_loss"]) == pytest.approx(np.mean(agent_losses), rel=1e-5)
    assert len(set(agent_losses)) == 3  # three models, three losses
    agent_returns = [float(last[f"rollout/ep_rew_agent_{index}"]) for index in range(3)]
    assert np.isfinite(agent_returns).all() and len(set(agent_returns)) == 3


def test_bad_inputs():
    with pytest.raises(ValueError, match=r"independent_agents must be True or False, got 'yes'"):
        MaxDiffMPPI(POINT_MASS, independent_agents="yes")
    with pytest.raises(ValueError, match=r"optimizer_class must be torch.optim.Adam .* got SGD"):
        independent(policy_kwargs=dict(net_arch=[8], optimizer_class=th.optim.SGD))


@pytest.mark.parametrize("independent_agents", [False, True])
def test_training_step_reads_nothing_back_but_the_actions(monkeypatch, independent_agents):
    """Planner statistics, losses and the non-finite guard stay on the device: one host copy per step, the actions."""
    env = vec_env(3) if independent_agents else gym.make(POINT_MASS)
    model = NNMPPI(env, independent_agents=independent_agents, seed=0, **TINY)
    model.learn(3 * 30 if independent_agents else 30)
    reads = {"cpu": 0, "item": 0, "tolist": 0, "__bool__": 0, "numpy": 0}
    for name in reads:
        original = getattr(th.Tensor, name)

        def counted(self, *args, _name=name, _original=original, **kwargs):
            reads[_name] += 1
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(th.Tensor, name, counted)
    model._sample_action(0, n_envs=model.n_envs)
    model.train(model.gradient_steps, model.batch_size)
    monkeypatch.undo()
    assert reads == {"cpu": 1, "item": 0, "tolist": 0, "__bool__": 0, "numpy": 1}
    assert model._stats.sums.sums["applied"].device == th.empty(0, device=model.device).device


def test_agent_extraction_leaves_the_random_streams_alone():
    model = independent()
    model.learn(3 * 25)
    th.manual_seed(11)
    np.random.seed(11)
    model.agent(1)
    after = th.rand(3), np.random.rand(3)
    th.manual_seed(11)
    np.random.seed(11)
    np.testing.assert_array_equal(after[0].numpy(), th.rand(3).numpy())
    np.testing.assert_array_equal(after[1], np.random.rand(3))


def test_gradient_steps_minus_one_counts_each_agents_steps():
    model = independent(NNMPPI, gradient_steps=-1, learning_starts=10)
    model.learn(3 * 20)
    assert model._n_updates == 20 - 10  # one update per agent step after learning_starts, not three


def test_vec_normalize_is_refused():
    from stable_baselines3.common.vec_env import VecNormalize

    with pytest.raises(ValueError, match="cannot train on a VecNormalize env"):
        MaxDiffMPPI(VecNormalize(vec_env(2)), independent_agents=True, **TINY)
    model = independent(n_envs=2)
    with pytest.raises(ValueError, match="cannot train on a VecNormalize env"):
        model.set_env(VecNormalize(vec_env(2)))


@pytest.mark.skipif(not th.cuda.is_available(), reason="CUDA not available")
def test_cuda_run():
    model = independent(device="cuda")
    model.learn(3 * 40)
    assert model.policy.model.flat.device.type == "cuda"
    actions, _ = model.predict(np.zeros((3, 4), dtype=np.float32))
    assert actions.shape == (3, 2) and np.all(np.isfinite(actions))
    single = model.agent(1)
    assert single.policy.model.flat.device.type == "cuda"


def test_one_independent_agent_is_the_single_agent_path():
    """With one environment, independent_agents=True trains exactly as independent_agents=False."""
    runs = []
    for independent_agents in (False, True):
        model = MaxDiffMPPI(vec_env(1), independent_agents=independent_agents, seed=0, **TINY)
        model.learn(60)
        runs.append(model)
    plain, one_agent = runs
    # a single agent is a batch of one, with no agent axis
    assert type(one_agent.policy.model) is BatchedDynamicsRewardModel and not one_agent.policy.model.agent_axis
    assert one_agent.agent_timesteps == 60 and isinstance(one_agent.policy.optimizer, AgentAdam)
    for p1, p2 in zip(plain.policy.parameters(), one_agent.policy.parameters()):
        assert th.equal(p1, p2)
    single = one_agent.agent(0)
    for p1, p2 in zip(single.policy.parameters(), one_agent.policy.parameters()):
        assert th.equal(p1, p2)
    assert single.policy.optimizer.state_dict()["state"].keys() == one_agent.policy.optimizer.state_dict()["state"].keys()
