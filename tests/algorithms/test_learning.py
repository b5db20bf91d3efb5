"""
Learning works end to end, as SB3's ``tests/test_identity.py`` checks its algorithms: on SB3's ``IdentityEnvBox``
(reward 1 where the action is within 0.5 of the observation, a new uniform observation each step, 100-step
episodes) the trained planner scores well above what an untrained one does. Measured (seeds 0-2, deterministic
evaluation over 5 episodes, on a CPU with AMX): after 500 steps NN-MPPI 83-100, MaxDiff 65-81, NN-MPPI with a model
that was never trained 49-50; after 1,000 steps NN-MPPI 85-98, MaxDiff 65-80, so the test trains 500 (on another CPU,
1,000 steps gave NN-MPPI 80-99, MaxDiff 68-80, never trained 51-55). Uniformly random actions score 43.75 in expectation.
"""

from typing import Any

import pytest
from stable_baselines3.common.envs import IdentityEnvBox
from stable_baselines3.common.evaluation import evaluate_policy

from sb3_maxdiff import NNMPPI, MaxDiffMPPI

# a task with no temporal structure: plan one step ahead (MaxDiff two, for a covariance over time) with wide noise
SETTINGS: dict[str, Any] = dict(
    noise_std=1.0, n_samples=100, learning_starts=100, policy_kwargs=dict(net_arch=[32, 32]), device="cpu"
)
THRESHOLD = 65.0


def score(model) -> float:
    mean, _ = evaluate_policy(model, IdentityEnvBox(eps=0.5), n_eval_episodes=5, deterministic=True)
    assert isinstance(mean, float)
    return mean


@pytest.mark.parametrize("algo, horizon", [(NNMPPI, 1), (MaxDiffMPPI, 2)])
def test_the_trained_planner_finds_the_rewarded_action(algo, horizon):
    kwargs = dict(alpha=1.0) if algo is MaxDiffMPPI else {}
    model = algo(IdentityEnvBox(eps=0.5), horizon=horizon, seed=0, **SETTINGS, **kwargs)
    model.learn(500)
    assert score(model) > THRESHOLD


def test_a_model_that_is_never_trained_stays_below_the_threshold():
    """The threshold tells learning from its absence: with the updates off the same planner scores far less."""
    model = NNMPPI(IdentityEnvBox(eps=0.5), horizon=1, seed=0, **{**SETTINGS, "learning_starts": 10_000})
    model.learn(500)
    assert model._n_updates == 0 and score(model) < THRESHOLD - 5
