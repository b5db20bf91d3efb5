import warnings

import gymnasium as gym
import numpy as np
import pytest
import torch as th
from helpers import TINY
from stable_baselines3.common.callbacks import CheckpointCallback, EvalCallback
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.evaluation import evaluate_policy
from stable_baselines3.common.logger import configure

from sb3_maxdiff import NNMPPI, MaxDiffMPPI, StepSchedule

POINT_MASS = "sb3_maxdiff/PointMass-beta1-v0"
TINY_UPDATES = 5  # gradient_steps, the default


@pytest.mark.parametrize("algo", [NNMPPI, MaxDiffMPPI])
@pytest.mark.parametrize("n_envs", [1, 2])
def test_run(algo, n_envs):
    env = make_vec_env(POINT_MASS, n_envs=n_envs, seed=0)
    model = algo("MlpPolicy", env, seed=0, **TINY)
    before = [param.detach().clone() for param in model.policy.model.parameters()]
    model.learn(100)
    assert model.num_timesteps == 100
    # every step stored (the newest row per env waits for its next action), one update per step after the warm-up
    assert model.replay_buffer.size() == 100 // n_envs - 1
    assert model._n_updates == TINY_UPDATES * (100 - TINY["learning_starts"]) // n_envs
    assert all(not th.equal(old, new) for old, new in zip(before, model.policy.model.parameters()))
    assert model._plans.nominal is not None and model._plans.nominal.shape == (n_envs, 5, 2)
    assert th.isfinite(model._plans.nominal).all() and model._plans.nominal.abs().max() <= 1.0


@pytest.mark.parametrize("algo", [NNMPPI, MaxDiffMPPI])
def test_constructor_forms(algo):
    assert isinstance(algo(POINT_MASS, **TINY).env.action_space, gym.spaces.Box)  # env id first
    assert algo(gym.make(POINT_MASS), **TINY).n_envs == 1  # env instance first
    assert algo("MlpPolicy", POINT_MASS, **TINY).n_envs == 1  # SB3 form
    assert algo(policy="MlpPolicy", env=POINT_MASS, **TINY).n_envs == 1  # RL Zoo form


def test_the_control_term_is_on_for_nnmppi_and_off_for_maxdiff_by_default():
    """As in the paper's runs: NN-MPPI scores its samples with the control term, MaxDiff without it."""
    for algo, control_cost in ((NNMPPI, True), (MaxDiffMPPI, False)):
        model = algo(POINT_MASS, **TINY)
        assert model.control_cost is control_cost and model.policy.planner.settings.control_cost is control_cost


@pytest.mark.expensive
def test_swimmer_v4_defaults():
    """The headline call, with every default (about 1-2 minutes on 2 cores)."""
    MaxDiffMPPI("Swimmer-v4").learn(2_000)


def test_swimmer_v4_quick():
    model = MaxDiffMPPI("Swimmer-v4", horizon=5, n_samples=16, learning_starts=50)
    model.learn(150)
    assert model.observation_space.shape == (8,)


def test_alpha_step_schedule_is_followed():
    model = MaxDiffMPPI(POINT_MASS, alpha=StepSchedule([0.5, 5.0], [60]), **TINY)
    model.learn(50)
    assert model.policy.alpha.item() == 0.5
    model.learn(30, reset_num_timesteps=False)
    assert model.policy.alpha.item() == 5.0


def test_callbacks_progress_bar_and_logger(tmp_path):
    eval_env = gym.make(POINT_MASS, max_episode_steps=30)
    callbacks = [
        CheckpointCallback(50, str(tmp_path / "checkpoints"), save_replay_buffer=True),
        EvalCallback(eval_env, n_eval_episodes=1, eval_freq=60, log_path=str(tmp_path / "eval")),
    ]
    model = MaxDiffMPPI(gym.make(POINT_MASS, max_episode_steps=40), tensorboard_log=str(tmp_path / "tb"), **TINY)
    model.set_logger(configure(str(tmp_path / "log"), ["csv"]))
    model.learn(130, callback=callbacks, progress_bar=True, log_interval=1)
    assert (tmp_path / "checkpoints" / "rl_model_100_steps.zip").exists()
    assert (tmp_path / "checkpoints" / "rl_model_replay_buffer_100_steps.pkl").exists()
    assert (tmp_path / "eval" / "evaluations.npz").exists()
    header = (tmp_path / "log" / "progress.csv").read_text().splitlines()[0].split(",")
    for key in [
        "train/model_loss",
        "train/dynamics_loss",
        "train/reward_loss",
        "planner/ess",
        "planner/path_entropy",
        "train/alpha",
    ]:
        assert key in header, key


def test_tensorboard_log(tmp_path):
    pytest.importorskip("tensorboard")
    model = NNMPPI(gym.make(POINT_MASS, max_episode_steps=30), tensorboard_log=str(tmp_path), **TINY)
    model.learn(70, log_interval=1)
    assert any((tmp_path / "NNMPPI_1").iterdir())


def test_evaluation_does_not_disturb_training_warm_start():
    model = NNMPPI(POINT_MASS, seed=0, **TINY)
    model.learn(60)
    nominal = model._plans.nominal.clone()
    evaluate_policy(model, gym.make(POINT_MASS, max_episode_steps=20), n_eval_episodes=2)
    obs = model.env.reset()
    model.predict(obs, state=None, episode_start=np.ones(1, dtype=bool))
    th.testing.assert_close(model._plans.nominal, nominal)


def test_predict_threads_state():
    model = MaxDiffMPPI(POINT_MASS, seed=0, **TINY)
    obs = np.zeros(4, dtype=np.float32)
    action, state = model.predict(obs)
    assert action.shape == (2,) and state.shape == (1, 5, 2)
    assert np.all(np.abs(action) <= 1.0)
    actions, state = model.predict(np.zeros((3, 4), dtype=np.float32), episode_start=np.ones(3, dtype=bool))
    assert actions.shape == (3, 2) and state.shape == (3, 5, 2)
    _, state2 = model.predict(np.zeros((3, 4), dtype=np.float32), state=state, episode_start=np.zeros(3, dtype=bool))
    assert state2.shape == (3, 5, 2)


def test_episode_start_resets_warm_start():
    model = NNMPPI(POINT_MASS, seed=0, **TINY)
    obs = np.zeros((1, 4), dtype=np.float32)
    stale = np.full((1, 5, 2), 0.9, dtype=np.float32)
    th.manual_seed(0)
    fresh, _ = model.predict(obs, state=stale, episode_start=np.ones(1, dtype=bool))
    th.manual_seed(0)
    from_zero, _ = model.predict(obs)
    np.testing.assert_allclose(fresh, from_zero)


def fill_dynamics(model, value: float) -> None:
    """Every weight and bias of the model's dynamics network set to ``value`` (in its flat parameter)."""
    with th.no_grad():
        for name in model.policy.model.layout:
            if name.startswith("dynamics."):
                model.policy.model.view(name).fill_(value)


def test_diverging_model_keeps_training():
    model = NNMPPI(POINT_MASS, seed=0, **TINY)
    model.learn(40)
    fill_dynamics(model, float("nan"))
    with pytest.warns(UserWarning, match="non-finite"):
        model.learn(40, reset_num_timesteps=False)
    action, _ = model.predict(np.zeros(4, dtype=np.float32))
    assert np.all(np.isfinite(action))


def test_predict_warns_once_of_non_finite_predictions_and_returns_finite_actions():
    model = NNMPPI(POINT_MASS, seed=0, **TINY)
    fill_dynamics(model, float("nan"))
    obs = np.zeros((2, 4), dtype=np.float32)
    with pytest.warns(UserWarning, match="non-finite"):
        actions, state = model.predict(obs)
    assert np.all(np.isfinite(actions)) and state.shape == (2, 5, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model.predict(obs, state=state)  # shown once


@pytest.mark.skipif(not th.cuda.is_available(), reason="CUDA not available")
def test_cuda_run():
    model = MaxDiffMPPI(POINT_MASS, device="cuda", **TINY)
    model.learn(60)
    assert model.policy.alpha.device.type == "cuda"


def test_calling_the_policy_plans_actions():
    model = NNMPPI(POINT_MASS, seed=0, **TINY)
    actions = model.policy(th.zeros((3, 4), device=model.device))  # as with SB3's policies: inputs on its device
    assert actions.shape == (3, 2) and th.isfinite(actions).all()
