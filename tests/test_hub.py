import numpy as np
import pytest
import yaml
from fake_hub import LocalHub

import sb3_maxdiff  # noqa: F401
from sb3_maxdiff import MaxDiffMPPI
from sb3_maxdiff.hub import main as hub_main
from sb3_maxdiff.train import main as train_main

ENV_ID = "sb3_maxdiff/PointMass-beta0_01-v0"
REPO = "tester/maxdiff-sb3_maxdiff-PointMass-beta0_01-v0"


@pytest.fixture
def hub(tmp_path, monkeypatch):
    fake = LocalHub(tmp_path / "hub_remote")
    import huggingface_hub

    # rl_zoo3's scripts import these from huggingface_hub when they run
    monkeypatch.setattr(huggingface_hub, "HfApi", fake)
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", fake.hf_hub_download)
    monkeypatch.setenv("TRUST_REMOTE_CODE", "True")
    monkeypatch.chdir(tmp_path)
    return fake


def predictions(model: MaxDiffMPPI) -> np.ndarray:
    obs = np.array([[-1.0, -1.0, 0.0, 0.0], [0.5, 0.2, 0.1, -0.1]], dtype=np.float32)
    model.set_random_seed(3)
    return model.predict(obs)[0]


def test_package_and_load_round_trip(hub, tmp_path):
    tiny = ["-params", "horizon:5", "n_samples:16", "learning_starts:50"]
    train_main(["--algo", "maxdiff", "--env", ENV_ID, "-n", "150", "--eval-freq", "-1", "-f", "logs", *tiny])
    hub_main(["push", "--algo", "maxdiff", "--env", ENV_ID, "-f", "logs", "-orga", "tester", "--no-render",
              "--env-kwargs", "max_episode_steps:20"])  # fmt: skip

    remote = hub.repo(REPO)
    for name in ["maxdiff-sb3_maxdiff-PointMass-beta0_01-v0.zip", "config.yml", "args.yml", "env_kwargs.yml",
                 "results.json", "README.md", "train_eval_metrics.zip"]:  # fmt: skip
        assert (remote / name).is_file(), name
    card = (remote / "README.md").read_text()
    metadata = yaml.safe_load(card.split("---")[1])
    assert ENV_ID in metadata["tags"] and metadata["library_name"] == "stable-baselines3"
    assert metadata["model-index"][0]["name"] == "MaxDiffMPPI" and "MaxDiffMPPI" in card
    # the card's commands are this package's, and they work (rl_zoo3's own do not know --algo maxdiff)
    assert "python -m sb3_maxdiff.hub load --algo maxdiff" in card and 'pip install "sb3-maxdiff[zoo]"' in card
    assert "rl_zoo3.load_from_hub" not in card and "'horizon': 5" in card
    result = metadata["model-index"][0]["results"][0]
    assert result["dataset"]["name"] == ENV_ID and result["metrics"][0]["type"] == "mean_reward"
    config = dict(yaml.load((remote / "config.yml").read_text(), Loader=yaml.UnsafeLoader))
    assert (
        config["horizon"] == 5
        and config["n_samples"] == 16
        and config["alpha"] == {"values": [0.5, 5.0], "boundaries": [1000]}
    )

    hub_main(["load", "--algo", "maxdiff", "--env", ENV_ID, "-orga", "tester", "-f", "downloaded"])
    run, zip_name = "sb3_maxdiff-PointMass-beta0_01-v0_1", "sb3_maxdiff-PointMass-beta0_01-v0.zip"
    original = MaxDiffMPPI.load(tmp_path / "logs" / "maxdiff" / run / zip_name)
    shared = MaxDiffMPPI.load(tmp_path / "downloaded" / "maxdiff" / run / zip_name)
    np.testing.assert_array_equal(predictions(shared), predictions(original))


def test_package_builds_the_folder_without_network(tmp_path, monkeypatch, capsys):
    import huggingface_hub

    def no_network(*args, **kwargs):
        raise AssertionError("package must not reach the Hub")

    monkeypatch.setattr(huggingface_hub, "HfApi", no_network)
    monkeypatch.chdir(tmp_path)
    tiny = ["-params", "horizon:5", "n_samples:16", "learning_starts:50"]
    train_main(["--algo", "nnmppi", "--env", ENV_ID, "-n", "120", "--eval-freq", "-1", "-f", "logs", *tiny])
    hub_main(["package", "--algo", "nnmppi", "--env", ENV_ID, "-f", "logs", "-orga", "tester", "--no-render",
              "--env-kwargs", "max_episode_steps:20", "--output", "packaged"])  # fmt: skip
    for name in ["nnmppi-sb3_maxdiff-PointMass-beta0_01-v0.zip", "config.yml", "results.json", "README.md"]:
        assert (tmp_path / "packaged" / name).is_file(), name
    assert "python -m sb3_maxdiff.enjoy --algo nnmppi" in (tmp_path / "packaged" / "README.md").read_text()
    assert "nothing uploaded" in capsys.readouterr().out
    assert huggingface_hub.HfApi is no_network  # restored after the command


def test_hub_help_lists_the_commands(capsys):
    with pytest.raises(SystemExit) as exit_info:
        hub_main(["--help"])
    assert exit_info.value.code == 0
    help_text = capsys.readouterr().out
    assert all(command in help_text for command in ("push", "load", "package"))
