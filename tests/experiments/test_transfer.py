import pytest
from helpers import registered_episodes_of

import sb3_maxdiff  # noqa: F401
from sb3_maxdiff import MaxDiffMPPI
from sb3_maxdiff.envs import POINT_MASS_BETAS, SWIMMER_HEAVY, SWIMMER_LIGHT, point_mass_id
from sb3_maxdiff.experiments import evaluate_transfer
from sb3_maxdiff.experiments.__main__ import main as experiments_main


@pytest.fixture(scope="module", autouse=True)
def short_episodes():
    """Evaluations on 100-step episodes of both bodies (what these tests check does not depend on the length)."""
    with registered_episodes_of(100, SWIMMER_HEAVY, SWIMMER_LIGHT):
        yield


@pytest.fixture(scope="module")
def heavy_model(tmp_path_factory, short_episodes):
    path = tmp_path_factory.mktemp("models") / "heavy.zip"
    model = MaxDiffMPPI(SWIMMER_HEAVY, horizon=4, n_samples=8, learning_starts=30, policy_kwargs=dict(net_arch=[16]))
    model.learn(60)
    model.save(path)
    return str(path)


def test_transfer_heavy_to_light(heavy_model):
    result = evaluate_transfer(heavy_model, "maxdiff", SWIMMER_LIGHT, n_episodes=2)
    assert len(result.returns) == 2
    assert result.mean == pytest.approx(sum(result.returns) / 2)


def test_transfer_command(heavy_model, capsys):
    experiments_main(
        ["transfer", "--algo", "maxdiff", "--model", heavy_model, "--env", SWIMMER_LIGHT, "--episodes", "1", "--threads", "1"]
    )
    assert "episode return" in capsys.readouterr().out


def test_transfer_command_appends_each_episode_to_a_csv(heavy_model, tmp_path):
    import csv

    path = tmp_path / "transfer.csv"
    command = ["transfer", "--algo", "maxdiff", "--model", heavy_model, "--env", SWIMMER_LIGHT]
    for seed, episodes in ((0, 2), (1, 1)):
        assert experiments_main([*command, "--episodes", str(episodes), "--seed", str(seed), "--csv", str(path)]) == 0
    with path.open() as file:
        rows = list(csv.DictReader(file))
    assert [(row["seed"], row["episode"]) for row in rows] == [("0", "0"), ("0", "1"), ("1", "0")]
    assert {row["env"] for row in rows} == {SWIMMER_LIGHT} and {row["model"] for row in rows} == {heavy_model}
    seed_1 = evaluate_transfer(heavy_model, "maxdiff", SWIMMER_LIGHT, n_episodes=1, seed=1)
    assert [float(row["return"]) for row in rows[2:]] == seed_1.returns  # the returns of that seed, to the bit


def test_transfer_rejects_other_spaces(heavy_model):
    assert "1" in POINT_MASS_BETAS
    with pytest.raises(ValueError):
        evaluate_transfer(heavy_model, "maxdiff", point_mass_id("1"), n_episodes=1)


def test_transfer_evaluates_on_the_environment_it_is_given(heavy_model):
    """The returns are those of the model on ``env_id`` (the same as evaluated by hand there), not on its training body."""
    import gymnasium as gym
    from stable_baselines3.common.evaluation import evaluate_policy

    light = evaluate_transfer(heavy_model, "maxdiff", SWIMMER_LIGHT, n_episodes=1, seed=3, device="cpu")
    heavy = evaluate_transfer(heavy_model, "maxdiff", SWIMMER_HEAVY, n_episodes=1, seed=3, device="cpu")
    assert light.returns != heavy.returns
    env = gym.make(SWIMMER_LIGHT)
    model = MaxDiffMPPI.load(heavy_model, env=env, device="cpu")
    model.set_random_seed(3)
    env.reset(seed=3)
    by_hand, _ = evaluate_policy(model, model.get_env(), n_eval_episodes=1, deterministic=False, return_episode_rewards=True)
    assert light.returns == [float(value) for value in by_hand]
