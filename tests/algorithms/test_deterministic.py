import numpy as np
import pytest
import torch as th
from helpers import TINY

from sb3_maxdiff import NNMPPI, MaxDiffMPPI

POINT_MASS = "sb3_maxdiff/PointMass-beta0_1-v0"


@pytest.mark.parametrize("algo", [NNMPPI, MaxDiffMPPI])
def test_deterministic_training(algo):
    results = []
    for _ in range(2):
        model = algo(POINT_MASS, seed=3, **TINY)
        model.learn(80)
        buffer = model.replay_buffer
        results.append((buffer.actions[: buffer.pos].copy(), buffer.rewards[: buffer.pos].copy()))
        obs = np.full((2, 4), 0.5, dtype=np.float32)
        model.set_random_seed(5)
        results[-1] += (model.predict(obs)[0],)
    for first, second in zip(*results):
        np.testing.assert_array_equal(first, second)


def test_different_seeds_differ():
    actions = []
    for seed in (1, 2):
        model = NNMPPI(POINT_MASS, seed=seed, **TINY)
        model.learn(40)
        actions.append(model.replay_buffer.actions[:40].copy())
    assert not np.array_equal(*actions)


def trained(algo, **kwargs):
    model = algo(POINT_MASS, seed=3, device="cpu", **{**TINY, **kwargs})
    model.learn(60)
    return model


OBS = np.array([[0.5, -0.5, 0.1, 0.0], [-1.0, 0.3, 0.0, 0.2]], dtype=np.float32)


@pytest.mark.parametrize("algo", [NNMPPI, MaxDiffMPPI])
def test_deterministic_predict_depends_on_its_inputs_alone(algo):
    model = trained(algo)
    first, state = model.predict(OBS, deterministic=True)
    model.predict(OBS)  # stochastic calls and another observation in between
    model.predict(OBS[::-1].copy(), deterministic=True)
    again, state_again = model.predict(OBS, deterministic=True)
    np.testing.assert_array_equal(first, again)
    np.testing.assert_array_equal(state, state_again)
    # with a warm start and episode starts too
    with_state = model.predict(OBS, state=state, episode_start=np.array([False, True]), deterministic=True)
    model.predict(OBS)
    np.testing.assert_array_equal(
        with_state[0], model.predict(OBS, state=state, episode_start=np.array([False, True]), deterministic=True)[0]
    )
    # the stochastic planner still samples: two calls differ
    assert not np.array_equal(model.predict(OBS)[0], model.predict(OBS)[0])


@pytest.mark.parametrize("algo", [NNMPPI, MaxDiffMPPI])
def test_deterministic_actions_survive_save_and_load(algo, tmp_path):
    """SB3's test_save_load contract: the same deterministic actions before the save and after the load."""
    model = trained(algo)
    before = model.predict(OBS, deterministic=True)[0]
    model.save(tmp_path / "model.zip")
    loaded = algo.load(tmp_path / "model.zip", device="cpu")
    np.testing.assert_array_equal(before, loaded.predict(OBS, deterministic=True)[0])
    # and the policy alone (SB3's test_save_load_policy)
    model.policy.save(tmp_path / "policy.pkl")
    policy = type(model.policy).load(tmp_path / "policy.pkl", device="cpu")
    np.testing.assert_array_equal(before, policy.predict(OBS, deterministic=True)[0])


def test_a_deterministic_call_leaves_the_global_stream_and_the_training_warm_start_alone():
    model = trained(MaxDiffMPPI)
    warm_start = model._plans.nominal.clone()
    th.manual_seed(8)
    model.predict(OBS, deterministic=True)
    drawn_after = th.rand(3)
    th.manual_seed(8)
    assert th.equal(drawn_after, th.rand(3))
    assert th.equal(model._plans.nominal, warm_start)


def test_the_deterministic_action_is_one_of_the_planners_stochastic_actions():
    """Its noise is one draw of the planner's noise: the same draw taken from the global stream gives the same action."""
    from sb3_maxdiff.nnmppi.policies import DETERMINISTIC_SEED

    model = trained(NNMPPI)
    deterministic = model.predict(OBS, deterministic=True)[0]
    th.manual_seed(DETERMINISTIC_SEED)  # the global CPU stream seeded as the generator is
    np.testing.assert_array_equal(deterministic, model.predict(OBS, deterministic=False)[0])


def test_optimize_memory_usage_is_refused_with_the_reason():
    with pytest.raises(ValueError, match="optimize_memory_usage=True is not supported: the replay buffer"):
        NNMPPI(POINT_MASS, optimize_memory_usage=True, **TINY)
    with pytest.raises(ValueError, match="optimize_memory_usage must be True or False, got 'no'"):
        MaxDiffMPPI(POINT_MASS, optimize_memory_usage="no", **TINY)
    assert NNMPPI(POINT_MASS, optimize_memory_usage=False, **TINY).optimize_memory_usage is False


def test_sb3_off_policy_keywords_action_noise_and_replay_buffer_class():
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.noise import NormalActionNoise

    from sb3_maxdiff.common.buffers import NextActionReplayBuffer

    class MyBuffer(NextActionReplayBuffer):
        pass

    env = make_vec_env(POINT_MASS, n_envs=2, seed=0)
    noise = NormalActionNoise(np.zeros(2), 0.5 * np.ones(2))
    for independent in (False, True):
        model = NNMPPI(env, action_noise=noise, replay_buffer_class=MyBuffer, independent_agents=independent, **TINY)
        model.learn(2 * 30)
        assert type(model.replay_buffer) is MyBuffer
    # the noise reaches the executed actions: the same seed without it stores other actions
    runs = []
    for action_noise in (None, noise):
        model = NNMPPI(POINT_MASS, seed=1, action_noise=action_noise, warmup_actions="planner", **TINY)
        model.learn(30)
        runs.append(model.replay_buffer.actions[:30].copy())
    assert not np.array_equal(*runs)
    from stable_baselines3.common.buffers import ReplayBuffer

    with pytest.raises(ValueError, match="replay_buffer_class must be NextActionReplayBuffer or a subclass"):
        NNMPPI(POINT_MASS, replay_buffer_class=ReplayBuffer, **TINY)
