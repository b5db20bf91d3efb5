from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch as th
from helpers import TINY, on_recording_platform

from sb3_maxdiff import NNMPPI, MaxDiffMPPI, StepSchedule

POINT_MASS = "sb3_maxdiff/PointMass-beta1-v0"
DEVICES = ["cpu"] + (["cuda"] if th.cuda.is_available() else [])


def assert_same_optimizer_state(got: th.optim.Optimizer, expected: th.optim.Optimizer) -> None:
    """Every moment, step count and hyperparameter of ``expected``'s state, value for value, and at least one step."""
    got_state, expected_state = got.state_dict(), expected.state_dict()
    assert expected_state["state"], "the optimizer has not stepped: nothing to compare"
    assert got_state["state"].keys() == expected_state["state"].keys()
    for index, state in expected_state["state"].items():
        for name, value in state.items():
            th.testing.assert_close(got_state["state"][index][name].cpu(), th.as_tensor(value).cpu(), msg=name)
    assert [{k: v for k, v in group.items() if k != "params"} for group in got_state["param_groups"]] == [
        {k: v for k, v in group.items() if k != "params"} for group in expected_state["param_groups"]
    ]


def predict_with_seed(model, obs: np.ndarray, seed: int = 7) -> np.ndarray:
    th.manual_seed(seed)
    action, _ = model.predict(obs)
    return action


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("algo", [NNMPPI, MaxDiffMPPI])
def test_save_load(tmp_path, algo, device):
    kwargs = dict(alpha=StepSchedule([0.5, 5.0], [50]), window=True) if algo is MaxDiffMPPI else {}
    model = algo(POINT_MASS, seed=0, device=device, **TINY, **kwargs)
    model.learn(80)
    obs = model.env.observation_space.sample()
    before = predict_with_seed(model, obs)
    model.save(tmp_path / "model.zip")

    loaded = algo.load(tmp_path / "model.zip", device=device)  # no env
    np.testing.assert_allclose(predict_with_seed(loaded, obs), before, rtol=1e-5, atol=1e-6)
    assert loaded.horizon == 5 and loaded.n_samples == 16
    if algo is MaxDiffMPPI:
        assert loaded.policy.alpha.item() == 5.0  # the schedule's current value survives
        assert loaded.policy.path_entropy.window == model.policy.path_entropy.window
    for p1, p2 in zip(model.policy.parameters(), loaded.policy.parameters()):
        th.testing.assert_close(p1, p2)
    assert_same_optimizer_state(loaded.policy.optimizer, model.policy.optimizer)


@pytest.mark.parametrize("algo", [NNMPPI, MaxDiffMPPI])
def test_replay_buffer_and_continued_training(tmp_path, algo):
    model = algo(POINT_MASS, seed=0, **TINY)
    model.learn(60)
    model.save(tmp_path / "model.zip")
    model.save_replay_buffer(tmp_path / "buffer.pkl")
    size = model.replay_buffer.size()

    loaded = algo.load(tmp_path / "model.zip", env=gym.make(POINT_MASS))
    loaded.load_replay_buffer(tmp_path / "buffer.pkl")
    assert loaded.replay_buffer.size() == size
    np.testing.assert_array_equal(loaded.replay_buffer.next_actions, model.replay_buffer.next_actions)
    loaded.learn(40, reset_num_timesteps=False)
    assert loaded.num_timesteps == 100
    assert loaded.replay_buffer.size() == size + 40
    # the episode was cut when learning resumed on a new env: no bootstrap across the cut
    assert loaded.replay_buffer.bootstrap_masks[size, 0] == 0.0


@pytest.mark.parametrize("algo", [NNMPPI, MaxDiffMPPI])
def test_get_and_set_parameters_carry_the_learned_model_between_agents(algo):
    """SB3's ``get_parameters`` / ``set_parameters``: the model, its normalisation statistics and the optimizer state."""
    model = algo(POINT_MASS, seed=0, **TINY)
    model.learn(60)
    other = algo(POINT_MASS, seed=1, **TINY)
    obs = model.env.observation_space.sample()
    assert not np.allclose(predict_with_seed(other, obs), predict_with_seed(model, obs))
    other.set_parameters(model.get_parameters())
    np.testing.assert_array_equal(predict_with_seed(other, obs), predict_with_seed(model, obs))
    for key, value in model.policy.state_dict().items():
        th.testing.assert_close(other.policy.state_dict()[key], value, msg=key)
    assert_same_optimizer_state(other.policy.optimizer, model.policy.optimizer)


def test_policy_save_load(tmp_path):
    model = MaxDiffMPPI(POINT_MASS, seed=0, **TINY)
    model.learn(40)
    model.policy.save(tmp_path / "policy.pth")
    policy = type(model.policy).load(tmp_path / "policy.pth")
    obs = np.zeros(4, dtype=np.float32)
    np.testing.assert_allclose(predict_with_seed(policy, obs), predict_with_seed(model.policy, obs), rtol=1e-5)


def test_planner_settings_reach_policy_through_sb3_setup(tmp_path):
    """The planner is built by the policy from the algorithm's settings; the saved policy_kwargs stay the user's."""
    model = MaxDiffMPPI(POINT_MASS, seed=0, **TINY)
    assert model.policy_kwargs == TINY["policy_kwargs"]
    assert model.policy.planner.settings == model.policy.planner_settings == model.planner_settings
    assert model.policy.planner.horizon == model.horizon == 5 and model.policy.planner.settings.n_samples == 16
    model.save(tmp_path / "model.zip")
    loaded = MaxDiffMPPI.load(tmp_path / "model.zip", custom_objects={"horizon": 7})
    assert loaded.policy_kwargs == TINY["policy_kwargs"]
    assert loaded.policy.planner.horizon == 7  # rebuilt from the algorithm's (overridden) setting


def test_alpha_lives_only_beside_the_path_entropy():
    nnmppi = NNMPPI(POINT_MASS, seed=0, **TINY)
    assert nnmppi.policy.alpha is None and "alpha" not in nnmppi.policy.state_dict()
    maxdiff = MaxDiffMPPI(POINT_MASS, seed=0, alpha=2.0, **TINY)
    assert maxdiff.policy.state_dict()["entropy_bonus.alpha"].item() == 2.0 == maxdiff.policy.alpha.item()
    assert maxdiff.policy.planner.entropy_bonus is maxdiff.policy.entropy_bonus
    # policies saved by earlier versions kept alpha as a buffer of their own (NN-MPPI's unused): they still load
    old_state = {**nnmppi.policy.state_dict(), "alpha": th.tensor(0.0)}
    nnmppi.policy.load_state_dict(old_state)
    with pytest.raises(RuntimeError, match="Unexpected key"):
        nnmppi.policy.load_state_dict({**old_state, "beta": th.tensor(0.0)})
    old_state = {key: value for key, value in maxdiff.policy.state_dict().items() if key != "entropy_bonus.alpha"}
    maxdiff.policy.load_state_dict({**old_state, "alpha": th.tensor(7.0)})
    assert maxdiff.policy.alpha.item() == 7.0


@pytest.mark.parametrize("name", ["maxdiff_6946528", "nnmppi_6946528", "maxdiff_3agents_6946528"])
def test_models_saved_by_an_earlier_version_load_and_predict_the_same(name):
    """Files of commit 6946528 (tests/data/make_saved_models.py), whose planner settings and alpha were kept apart."""
    data = Path(__file__).parent.parent / "data"
    expected = np.load(data / "predictions_6946528.npz")
    algo = NNMPPI if name.startswith("nnmppi") else MaxDiffMPPI
    model = algo.load(data / f"{name}.zip", device="cpu")
    assert model.horizon == 5 and model.n_samples == 16 and model.policy.planner.settings == model.planner_settings
    assert model.policy.planner.settings.clip_samples == (name != "maxdiff_6946528")  # "bounded" but there
    if algo is MaxDiffMPPI:
        assert model.policy.alpha.tolist() == (5.0 if name == "maxdiff_6946528" else [2.0] * 3)  # one per batched agent
    n_agents = 3 if "3agents" in name else 1
    th.manual_seed(11)
    actions, state = model.predict(expected["obs"][:n_agents])
    # bit for bit where the predictions were recorded; elsewhere torch's CPU kernels may round differently, and a
    # single model, now a batch of one, sums in the batched kernels' order
    exact = on_recording_platform() and n_agents > 1
    tolerance = dict(rtol=0.0, atol=0.0) if exact else dict(rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(actions, expected[f"{name}_actions"], **tolerance)
    np.testing.assert_allclose(state, expected[f"{name}_state"], **tolerance)


def test_random_entropy_jitter_survives_save_and_load(tmp_path):
    model = MaxDiffMPPI(POINT_MASS, seed=0, entropy_jitter="random", device="cpu", **TINY)
    model.learn(60)
    assert model.policy.path_entropy.jitter == "random"
    obs = model.env.observation_space.sample()
    before, _ = model.predict(obs, deterministic=True)
    model.save(tmp_path / "model.zip")
    loaded = MaxDiffMPPI.load(tmp_path / "model.zip", device="cpu")
    assert loaded.entropy_jitter == "random" and loaded.policy.path_entropy.jitter == "random"
    np.testing.assert_array_equal(loaded.predict(obs, deterministic=True)[0], before)


def test_a_model_saved_before_the_entropy_jitter_option_loads_with_the_diagonal_jitter():
    """The kept single-shot models were saved by a version without ``entropy_jitter``."""
    path = Path(__file__).parents[2] / "docs" / "reproduction" / "models" / "single_shot_light_30k_maxdiff_seed6.zip"
    loaded = MaxDiffMPPI.load(path, device="cpu")
    assert loaded.entropy_jitter == "diagonal" and loaded.policy.path_entropy.jitter == "diagonal"


@pytest.mark.parametrize(("method", "expected"), [("logdet", "random"), ("top_eigs", "diagonal"), ("log_trace", "diagonal")])
def test_the_default_jitter_is_the_authors_draw_where_the_entropy_is_a_log_determinant(method, expected, tmp_path):
    model = MaxDiffMPPI(POINT_MASS, seed=0, entropy_method=method, device="cpu", **TINY)
    assert model.entropy_jitter is None and model.policy.path_entropy.jitter == expected
    model.save(tmp_path / "model.zip")
    # saved after the option existed: the default again, from a path or from an open file
    assert MaxDiffMPPI.load(tmp_path / "model.zip", device="cpu").policy.path_entropy.jitter == expected
    with open(tmp_path / "model.zip", "rb") as file:
        assert MaxDiffMPPI.load(file, device="cpu").policy.path_entropy.jitter == expected
    # a choice made at load wins, as for any attribute SB3's load is given
    assert MaxDiffMPPI.load(tmp_path / "model", entropy_jitter="diagonal").policy.path_entropy.jitter == "diagonal"
