"""
The path entropy that looks back at visited states (``history``): the record of visited states, and MaxDiffMPPI
planning with it in training and in ``predict``.
"""

import gymnasium as gym
import numpy as np
import pytest
import torch as th
from helpers import TINY
from stable_baselines3.common.evaluation import evaluate_policy

from sb3_maxdiff import NNMPPI, MaxDiffMPPI
from sb3_maxdiff.common.plan_memory import VisitedStates

POINT_MASS = "sb3_maxdiff/PointMass-beta1-v0"
SMALL = {**TINY, "learning_starts": 10}


def rows(*values: float) -> th.Tensor:
    """Two environments' states of one coordinate: (v, -v) from one value, else one row per value."""
    return th.tensor([[values[0]], [-values[0]]]) if len(values) == 1 else th.tensor([[value] for value in values])


def test_visited_states_keep_the_last_states_oldest_first():
    visited = VisitedStates(3)
    seen = [visited.update(rows(float(step))).squeeze(-1).tolist() for step in range(5)]
    assert seen[0] == [[0.0], [-0.0]]  # one state so far: the current one
    assert seen[1] == [[0.0, 1.0], [0.0, -1.0]]
    assert seen[4] == [[2.0, 3.0, 4.0], [-2.0, -3.0, -4.0]]  # at most `size`, the newest last


def test_a_new_episode_starts_its_row_afresh_and_the_younger_row_repeats_its_first_state():
    visited = VisitedStates(4)
    for step in range(4):
        visited.update(rows(float(step)))
    history = visited.update(rows(10.0, 20.0), episode_start=np.array([False, True]))
    # row 0 keeps its last 4 states; row 1's episode has one state, repeated to the length of row 0's
    assert history.squeeze(-1).tolist() == [[1.0, 2.0, 3.0, 10.0], [20.0, 20.0, 20.0, 20.0]]
    history = visited.update(rows(11.0, 21.0), episode_start=np.array([False, False]))
    assert history.squeeze(-1).tolist() == [[2.0, 3.0, 10.0, 11.0], [20.0, 20.0, 20.0, 21.0]]
    # both rows start together: no state of the old episodes is left and none is repeated
    history = visited.update(rows(5.0, 6.0), episode_start=np.array([True, True]))
    assert history.squeeze(-1).tolist() == [[5.0], [6.0]]
    assert visited.ages.tolist() == [1, 1]


def test_visited_states_round_trip_through_arrays_and_reject_bad_sizes():
    visited = VisitedStates(2)
    visited.update(rows(1.0))
    visited.update(rows(2.0))
    again = VisitedStates.from_arrays(*visited.as_arrays(), th.device("cpu"))
    th.testing.assert_close(again.update(rows(3.0)), visited.update(rows(3.0)))
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="history must be an integer >= 1"):
            VisitedStates(bad)


@pytest.mark.parametrize("bad", [-1, 2.5, "3"])
def test_maxdiff_rejects_a_bad_history(bad):
    with pytest.raises(ValueError, match="history must be an integer >= 0"):
        MaxDiffMPPI(POINT_MASS, history=bad, **TINY)


def test_history_zero_plans_as_before():
    """history=0 is the published planner: the same actions, seed for seed, as a model built without it."""
    actions = []
    for kwargs in ({}, {"history": 0}):
        model = MaxDiffMPPI(POINT_MASS, seed=3, **TINY, **kwargs)
        model.learn(60)
        actions.append(model.replay_buffer.actions[:60].copy())
    np.testing.assert_array_equal(actions[0], actions[1])


def test_training_plans_with_the_visited_observations():
    """The planner's history in training holds the environment's last observations, reset with its episode."""
    model = MaxDiffMPPI(gym.make(POINT_MASS, max_episode_steps=15), seed=0, history=4, **SMALL)
    seen: list[th.Tensor] = []
    plan = model.policy.plan

    def recording_plan(obs, nominal=None, episode_start=None, deterministic=False, history=None):
        seen.append((obs.clone(), None if history is None else history.clone(), episode_start.clone()))
        return plan(obs, nominal, episode_start, deterministic, history)

    model.policy.plan = recording_plan
    model.learn(30)
    assert len(seen) == 20  # the first 10 steps act at random (warm-up): the record starts at the first plan
    episode: list[th.Tensor] = []
    for obs, history, episode_start in seen:
        episode = [obs[0]] if bool(episode_start[0]) else [*episode, obs[0]]
        th.testing.assert_close(history[0], th.stack(episode[-4:]))  # the last 4 of this episode, the current last
    assert any(bool(start[0]) for _, _, start in seen[1:])  # an episode ended and the record started afresh


def test_the_history_changes_the_plans_and_nnmppi_has_none():
    plans = []
    for history in (0, 8):
        model = MaxDiffMPPI(POINT_MASS, seed=0, alpha=50.0, history=history, **SMALL)
        model.learn(40)
        plans.append(model.replay_buffer.actions[10:40].copy())
    assert not np.array_equal(plans[0], plans[1])
    assert NNMPPI(POINT_MASS, **TINY).policy.history == 0


def test_predict_threads_the_visited_states_and_evaluates():
    model = MaxDiffMPPI(POINT_MASS, seed=0, history=3, **TINY)
    obs = np.arange(8, dtype=np.float32).reshape(2, 4)
    _, state = model.predict(obs)
    nominal, visited, ages = state
    assert nominal.shape == (2, 5, 2) and visited.shape == (2, 3, 4) and ages.tolist() == [1, 1]
    _, state = model.predict(obs + 1, state=state, episode_start=np.array([False, True]))
    np.testing.assert_array_equal(state[1][0, -2:], np.stack([obs[0], obs[0] + 1]))
    np.testing.assert_array_equal(state[1][1], np.stack([obs[1] + 1] * 3))  # its episode starts: afresh
    assert state[2].tolist() == [2, 1]
    with pytest.raises(ValueError, match=r"state must be \(warm start, visited states, ages\)"):
        model.predict(obs, state=nominal)
    returns, _ = evaluate_policy(model, gym.make(POINT_MASS, max_episode_steps=10), n_eval_episodes=2)
    assert np.isfinite(returns)


def test_predict_plans_with_the_visited_observations_followed_by_each_path():
    """predict's plan is the planner's own with the last observations as history, nothing else."""
    model = MaxDiffMPPI(POINT_MASS, seed=0, history=3, alpha=10.0, **TINY)
    observations = th.randn(4, 1, 4, generator=th.Generator().manual_seed(1))
    state = None
    for obs in observations[:-1]:
        _, state = model.predict(obs.numpy(), state=state)
    th.manual_seed(5)
    action, _ = model.predict(observations[-1].numpy(), state=state)
    th.manual_seed(5)
    history = observations[1:, 0][None]  # the last 3 observations, the current one last
    by_hand = model.policy.plan(observations[-1], th.as_tensor(state[0]), history=history)
    np.testing.assert_array_equal(action, model.policy.env_actions(by_hand.actions.numpy())[0])
    th.manual_seed(5)
    without = model.policy.plan(observations[-1], th.as_tensor(state[0]))
    assert not th.equal(without.actions, by_hand.actions)  # the history is what made the difference


def test_history_is_saved_loaded_and_kept_by_one_agent_taken_out(tmp_path):
    from stable_baselines3.common.env_util import make_vec_env

    model = MaxDiffMPPI(make_vec_env(POINT_MASS, n_envs=2, seed=0), independent_agents=True, history=5, **SMALL)
    model.learn(30)
    assert model._plans.visited is not None and model._plans.visited.states.shape == (2, 5, 4)
    model.save(tmp_path / "model.zip")
    loaded = MaxDiffMPPI.load(tmp_path / "model.zip", device="cpu")
    assert loaded.history == 5 and loaded.policy.history == 5 and loaded._plans.visited is None
    assert model.agent(1).policy.history == 5
