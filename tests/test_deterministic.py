import numpy as np
import pytest
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
