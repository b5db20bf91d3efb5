"""Action semantics (what the model is queried with, what the env executes, what the buffer stores) and warm-up."""

import gymnasium as gym
import numpy as np
import pytest
from helpers import TINY

from sb3_maxdiff import NNMPPI, MaxDiffMPPI
from sb3_maxdiff.envs import PaperSwimmerEnv, PointMassEnv, point_mass_id


class RecordActions(gym.Wrapper):
    """Keeps every action the agent sends to the env."""

    def __init__(self, env: gym.Env):
        super().__init__(env)
        self.sent: list[np.ndarray] = []

    def step(self, action):
        self.sent.append(np.array(action, dtype=np.float64))
        return self.env.step(action)


def train_recording(semantics: str, env_id: str, steps: int = 60, **kwargs) -> tuple[MaxDiffMPPI, RecordActions]:
    env = RecordActions(gym.make(env_id))
    # a wide sampling noise drives planned actions far outside [-1, 1]
    options = dict(TINY, noise_std=3.0, warmup_actions="planner")
    model = MaxDiffMPPI(env, action_semantics=semantics, seed=0, **{**options, **kwargs})
    model.learn(steps)
    return model, env


def test_unbounded_point_mass_applies_actions_as_given():
    start = np.array([0.0, 0.0, 0.0, 0.0])
    velocities = {}
    for bounded in (True, False):
        env = PointMassEnv(beta=1.0, bounded_actions=bounded)
        env.reset(seed=0)
        env._state = start.copy()
        obs, *_ = env.step(np.array([3.0, 0.0]))
        velocities[bounded] = obs[2]
    assert velocities[True] == pytest.approx(0.1, rel=1e-6)  # u clipped to 1, dv = u * dt
    assert velocities[False] == pytest.approx(0.3, rel=1e-6)


def test_unbounded_ids_are_registered():
    env = gym.make(point_mass_id("0.01", bounded_actions=False))
    assert env.unwrapped.bounded_actions is False and env.unwrapped.beta == 0.01
    assert point_mass_id("0.01", bounded_actions=False) == "sb3_maxdiff/PointMassUnbounded-beta0_01-v0"
    assert gym.make(point_mass_id("0.01")).unwrapped.bounded_actions is True


def test_authors_semantics_stores_and_executes_the_raw_planner_action():
    model, env = train_recording("authors", point_mass_id("1", bounded_actions=False))
    stored = model.replay_buffer.actions[: model.replay_buffer.pos, 0]
    sent = np.array(env.sent)
    np.testing.assert_allclose(stored, sent, rtol=1e-6, atol=1e-6)
    assert np.abs(sent).max() > 1.0  # nothing clipped them
    assert not model.policy.planner.settings.clip_samples


def test_bounded_semantics_keeps_model_env_and_buffer_in_bounds():
    model, env = train_recording("bounded", point_mass_id("1"))
    stored = model.replay_buffer.actions[: model.replay_buffer.pos, 0]
    sent = np.array(env.sent)
    np.testing.assert_allclose(stored, sent, rtol=1e-6, atol=1e-6)
    assert np.abs(sent).max() <= 1.0 + 1e-6
    assert model.policy.planner.settings.clip_samples


def test_predict_follows_the_semantics():
    obs = np.array([-1.0, -1.0, 0.0, 0.0], dtype=np.float32)
    for semantics, bound in (("authors", np.inf), ("bounded", 1.0)):
        model = NNMPPI(
            point_mass_id("1", bounded_actions=False),
            action_semantics=semantics,
            noise_std=3.0,
            temperature=1e-4,
            seed=0,
            **TINY,
        )
        actions = np.array([model.predict(obs)[0] for _ in range(20)])
        assert np.abs(actions).max() <= bound
        if semantics == "authors":
            assert np.abs(actions).max() > 1.0


def test_paper_mujoco_envs_clip_before_the_step():
    rewards = []
    for action in (np.full(2, 5.0), np.ones(2)):
        env = PaperSwimmerEnv()
        env.reset(seed=0)
        obs, reward, *_ = env.step(action)
        rewards.append((obs, reward))
    np.testing.assert_array_equal(rewards[0][0], rewards[1][0])
    assert rewards[0][1] == rewards[1][1]  # the control cost sees the clipped action too


@pytest.mark.parametrize("warmup", ["random", "planner"])
def test_warmup_actions(warmup):
    model = NNMPPI(point_mass_id("1"), **{**TINY, "learning_starts": 40}, warmup_actions=warmup, seed=0)
    calls = []
    plan = model.policy.plan

    def counting_plan(*args, **kwargs):
        calls.append(model.num_timesteps)
        return plan(*args, **kwargs)

    model.policy.plan = counting_plan  # type: ignore[method-assign]
    model.learn(40)
    assert model._n_updates == 0  # learning_starts delays the model updates either way
    assert (min(calls) == 0) if warmup == "planner" else (calls == [])
    model.learn(10, reset_num_timesteps=False)
    assert model._n_updates > 0


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(action_semantics="clipped"), r"action_semantics must be one of \['bounded', 'authors'\], got 'clipped'"),
        (dict(warmup_actions="none"), r"warmup_actions must be one of \['random', 'planner'\], got 'none'"),
    ],
)
def test_bad_choices_name_the_parameter(kwargs, message):
    with pytest.raises(ValueError, match=message):
        NNMPPI(point_mass_id("1"), **TINY, **kwargs)


def test_paper_yaml_uses_the_authors_semantics():
    from sb3_maxdiff.experiments.define.presets import PRESETS

    cells = PRESETS["point-mass-beta"].cells
    assert all("PointMassUnbounded" in cell.env_id for cell in cells)
    import yaml

    from sb3_maxdiff.zoo import HYPERPARAMS_DIR

    for algo in ("maxdiff", "nnmppi"):
        with open(f"{HYPERPARAMS_DIR}/{algo}.yml") as file:
            params = yaml.safe_load(file)
        for beta in ("1", "0.01"):
            unbounded = params[point_mass_id(beta, bounded_actions=False)]
            bounded = params[point_mass_id(beta)]
            assert unbounded["action_semantics"] == "authors" and bounded["action_semantics"] == "bounded"
            assert unbounded["warmup_actions"] == "planner" and unbounded["learning_starts"] == unbounded["batch_size"]
        assert params["sb3_maxdiff/Swimmer-heavy-v0"]["action_semantics"] == "authors"


@pytest.mark.parametrize("semantics, expected", [("bounded", [[-1.0, 1.0]]), ("authors", [[-2.5, 1.5]])])
def test_one_method_turns_planned_actions_into_env_and_stored_actions(semantics, expected):
    # the Swimmer's bounds are [-1, 1]: env units equal normalised ones, so clipping is all that differs
    model = NNMPPI(PaperSwimmerEnv(), action_semantics=semantics, **TINY)
    env_action, stored = model.policy.env_actions(np.array([[-2.5, 1.5]], dtype=np.float32))
    np.testing.assert_allclose(stored, expected)
    np.testing.assert_allclose(env_action, expected)
