import gymnasium as gym
import numpy as np
import pytest

from sb3_maxdiff import NNMPPI, MaxDiffMPPI
from sb3_maxdiff.common.mppi import PlannerSettings
from sb3_maxdiff.nnmppi.policies import MPPIPolicy

POINT_MASS = "sb3_maxdiff/PointMass-beta1-v0"


class DiscreteEnv(gym.Env):
    observation_space: gym.Space = gym.spaces.Box(-1, 1, (2,))
    action_space: gym.Space = gym.spaces.Discrete(3)

    def reset(self, *, seed=None, options=None):
        return np.zeros(2, dtype=np.float32), {}

    def step(self, action):
        return np.zeros(2, dtype=np.float32), 0.0, False, False, {}


class UnboundedEnv(DiscreteEnv):
    action_space = gym.spaces.Box(-np.inf, np.inf, (2,))


class DictObsEnv(DiscreteEnv):
    observation_space = gym.spaces.Dict({"a": gym.spaces.Box(-1, 1, (2,))})
    action_space = gym.spaces.Box(-1, 1, (2,))


@pytest.mark.parametrize(
    "env, match",
    [
        (DiscreteEnv(), "action_space must be a gymnasium.spaces.Box"),
        (UnboundedEnv(), "bounded"),
        (DictObsEnv(), "observation_space"),
    ],
)
@pytest.mark.parametrize("algo", [NNMPPI, MaxDiffMPPI])
def test_bad_spaces(algo, env, match):
    with pytest.raises(ValueError, match=match):
        algo(env)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(horizon=0), "horizon"),
        (dict(horizon=2.5), "horizon"),
        (dict(n_samples=0), "n_samples"),
        (dict(temperature=0.0), "temperature"),
        (dict(temperature=-1.0), "temperature"),
        (dict(noise_std=0.0), "noise_std"),
        (dict(batch_size=0), "batch_size"),
        (dict(planner_dtype="float16"), "planner_dtype.*float32.*bfloat16.*auto"),
    ],
)
@pytest.mark.parametrize("algo", [NNMPPI, MaxDiffMPPI])
def test_bad_planner_parameters(algo, kwargs, match):
    with pytest.raises(ValueError, match=match):
        algo(POINT_MASS, **kwargs)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(alpha=-1.0), "alpha"),
        (dict(alpha=lambda progress: -progress), "alpha"),
        (dict(explr_dims=[0, 4]), "explr_dims"),
        (dict(explr_dims=[-1]), "explr_dims"),
        (dict(explr_dims=[0, 1], explr_weights=[1.0, 1.0, 1.0]), "explr_weights"),
        (dict(explr_weights=[1.0]), "explr_weights"),
        (dict(window=41), "window"),
        (dict(window=1), "window"),
        (dict(horizon=1), "horizon"),
        (dict(entropy_method="det"), "entropy_method"),
        (dict(entropy_method="top_eigs", entropy_top_m=9), "entropy_top_m"),
        (dict(entropy_jitter="entries"), r"entropy_jitter must be one of \('diagonal', 'random'\), got 'entries'"),
        (dict(entropy_jitter="random", entropy_method="log_trace"), "entropy_jitter='random' needs entropy_method='logdet'"),
    ],
)
def test_bad_maxdiff_parameters(kwargs, match):
    with pytest.raises(ValueError, match=match):
        MaxDiffMPPI(POINT_MASS, **kwargs)


@pytest.mark.parametrize("planner_kwargs, match", [(dict(horizon=0), "horizon"), (dict(noise_std=-1.0), "noise_std")])
def test_policy_built_directly_checks_its_planner(planner_kwargs, match):
    env = gym.make(POINT_MASS)
    settings = {**dict(horizon=5, n_samples=8, temperature=0.5, noise_std=0.3), **planner_kwargs}
    with pytest.raises(ValueError, match=match):
        MPPIPolicy(env.observation_space, env.action_space, lambda _: 1e-3, planner_settings=PlannerSettings(**settings))


def test_bad_policy_name():
    with pytest.raises(ValueError, match="policy"):
        NNMPPI("CnnPolicy", POINT_MASS)


def test_bad_predict_state():
    model = NNMPPI(POINT_MASS, horizon=5, n_samples=8)
    with pytest.raises(ValueError, match="state"):
        model.predict(np.zeros(4, dtype=np.float32), state=np.zeros((1, 4, 2)))


class ImageObsEnv(DiscreteEnv):
    observation_space = gym.spaces.Box(0, 255, (8, 8, 3), dtype=np.uint8)
    action_space = gym.spaces.Box(-1, 1, (2,))


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(alpha="x"), r"alpha must be a float >= 0.*got 'x'"),
        (dict(policy_kwargs=dict(net_arch=[])), r"net_arch must be a non-empty list of positive ints .*, got \[\]"),
        (dict(policy_kwargs=dict(net_arch=[16, 0])), r"net_arch must be a non-empty list"),
        (dict(buffer_size=1), r"buffer_size must be an integer >= 2, got 1"),
        (dict(buffer_size=0), r"buffer_size must be an integer >= 2, got 0"),
    ],
)
def test_bad_inputs_name_the_parameter(kwargs, match):
    with pytest.raises(ValueError, match=match):
        MaxDiffMPPI(POINT_MASS, **kwargs)


def test_non_flat_observations_are_refused_up_front():
    with pytest.raises(ValueError, match=r"flat Box of shape \(n,\).*\(8, 8, 3\).*FlattenObservation"):
        NNMPPI(ImageObsEnv())


def test_skipped_updates_are_not_counted(monkeypatch):
    import torch as th

    from sb3_maxdiff.common.models import BatchedDynamicsRewardModel, ModelLosses

    model = NNMPPI(POINT_MASS, learning_starts=20, batch_size=8, horizon=3, n_samples=8, policy_kwargs=dict(net_arch=[8]))
    model.learn(30)
    counted = model._n_updates
    assert counted == 5 * 10  # 5 updates after each of the 10 steps past learning_starts

    def nan_loss(self, *args):
        nan = th.tensor(float("nan"), requires_grad=True)
        return ModelLosses(nan, nan, nan)

    monkeypatch.setattr(BatchedDynamicsRewardModel, "loss", nan_loss)
    with pytest.warns(UserWarning, match="Non-finite model loss"):
        model.learn(5, reset_num_timesteps=False)
    assert model._n_updates == counted


def test_zoo_commands_without_the_zoo_extra_say_what_to_install(monkeypatch):
    import importlib
    import sys

    monkeypatch.setitem(sys.modules, "optuna", None)  # as if optuna were not installed
    monkeypatch.delitem(sys.modules, "sb3_maxdiff.zoo", raising=False)
    with pytest.raises(ImportError, match=r"pip install 'sb3-maxdiff\[zoo\]'"):
        importlib.import_module("sb3_maxdiff.zoo")
