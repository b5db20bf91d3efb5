import importlib
import subprocess
import sys

import numpy as np
import optuna
import pytest
import yaml
from helpers import SUBPROCESS_TIMEOUT, process_state_kept
from rl_zoo3.utils import get_wrapper_class
from stable_baselines3.common.env_util import make_vec_env

import sb3_maxdiff
from sb3_maxdiff.wrappers import PathEntropyReward
from sb3_maxdiff.zoo import HYPERPARAMS_DIR, ZOO_ALGOS, register_with_zoo, with_defaults

ENTRIES = [
    (algo, env_id)
    for algo, (_, file) in ZOO_ALGOS.items()
    for env_id in yaml.safe_load((HYPERPARAMS_DIR / file).read_text())
    if not env_id.endswith("-defaults")  # skip the anchor blocks
]
ENV_IDS = {env_id for _, env_id in ENTRIES}


def test_every_file_covers_every_paper_env():
    expected = {
        *(
            sb3_maxdiff.envs.point_mass_id(beta, bounded)
            for beta in sb3_maxdiff.envs.POINT_MASS_BETAS
            for bounded in (True, False)
        ),
        *sb3_maxdiff.envs.MUJOCO_ENVS,
    }
    assert ENV_IDS == expected | {"Swimmer-v4", "Swimmer-v5"}  # the stock ids of MaxDiffMPPI("Swimmer-v4")
    covered = {(algo, env_id) for algo, env_id in ENTRIES}
    assert all((algo, env_id) in covered for algo in ZOO_ALGOS for env_id in expected)
    # SAC's Swimmer-v4 stays RL Zoo's own: our sac.yml adds ids, it never hides RL Zoo's
    assert ("sac", "Swimmer-v4") not in covered and ("maxdiff", "Swimmer-v4") in covered


def test_rl_zoo_settings_stay_in_use_for_envs_our_sac_file_lacks():
    assert not any("--conf-file" in arg for arg in with_defaults(["--algo", "sac", "--env", "Pendulum-v1"]))
    assert "--conf-file" in with_defaults(["--algo", "sac", "--env", "sb3_maxdiff/PointMass-beta1-v0"])
    assert "--conf-file" in with_defaults(["--algo", "maxdiff", "--env", "Swimmer-v5"])


@pytest.mark.parametrize("algo, env_id", ENTRIES)
def test_yaml_entry_builds(algo, env_id):
    """Build the model as RL Zoo does: policy_kwargs evaluated, env_wrapper applied, n_timesteps dropped."""
    _, file = ZOO_ALGOS[algo]
    hyperparams = dict(yaml.safe_load((HYPERPARAMS_DIR / file).read_text())[env_id])
    assert hyperparams.pop("n_timesteps") > 0
    wrapper = get_wrapper_class(hyperparams)
    hyperparams.pop("env_wrapper", None)
    hyperparams["policy_kwargs"] = eval(hyperparams["policy_kwargs"])
    env = make_vec_env(env_id, n_envs=1, wrapper_class=wrapper)
    model = ZOO_ALGOS[algo][0](env=env, buffer_size=1000, **hyperparams)
    if algo == "sac_maxdiff":
        assert isinstance(env.envs[0], PathEntropyReward)
    if algo in ("sac", "sac_maxdiff"):
        reward_scale = 0.25 if "PointMass" in env_id else 100 if "Swimmer" in env_id else 5
        assert model.gamma == 0.99 and model.ent_coef_tensor.item() == pytest.approx(1 / reward_scale)
        assert model.tau == (0.01 if "PointMass" in env_id else 0.005)
    if algo == "maxdiff":
        assert model.policy.planner.entropy_bonus is not None and model.control_cost is False


def test_point_mass_alpha_schedule_from_yaml():
    hyperparams = yaml.safe_load((HYPERPARAMS_DIR / "maxdiff.yml").read_text())
    pm = hyperparams["sb3_maxdiff/PointMass-beta0_01-v0"]["alpha"]
    assert pm == {"values": [0.5, 5.0], "boundaries": [1000]}
    assert hyperparams["sb3_maxdiff/PointMass-beta0_001-v0"]["alpha"] == {"values": [0.2, 25.0], "boundaries": [500]}


def test_with_defaults():
    argv = with_defaults(["--algo", "maxdiff", "--env", "sb3_maxdiff/Ant-v0"])
    assert argv[-2:] == ["--conf-file", str(HYPERPARAMS_DIR / "maxdiff.yml")]
    assert with_defaults(["--algo", "nnmppi", "-conf", "mine.yml"]) == ["--algo", "nnmppi", "-conf", "mine.yml"]
    assert "--conf-file" not in with_defaults(["--algo", "ppo"])
    optimize = with_defaults(["--algo", "nnmppi", "--env", "sb3_maxdiff/Ant-v0", "-optimize", "-f", "/tmp/x"])
    assert "sqlite:////tmp/x/optuna.db" in optimize and "nnmppi-sb3_maxdiff_Ant-v0" in optimize
    given = with_defaults(["--algo", "nnmppi", "-optimize", "--storage", "postgresql://h/db", "--study-name", "s"])
    assert given.count("--storage") == 1 and given.count("--study-name") == 1


def test_register_with_zoo():
    register_with_zoo()
    from rl_zoo3 import hyperparams_opt, utils

    for name in ZOO_ALGOS:
        assert name in utils.ALGOS and name in hyperparams_opt.HYPERPARAMS_SAMPLER
    trial = optuna.create_study().ask()
    params = hyperparams_opt.HYPERPARAMS_SAMPLER["maxdiff"](trial, 2, 1, {})
    assert set(params) == {"horizon", "n_samples", "temperature", "noise_std", "alpha"}


def run(module: str, *args: str) -> None:
    """``python -m sb3_maxdiff.<module> *args`` in this process (its entry point, as the console script calls it)."""
    main = importlib.import_module(f"sb3_maxdiff.{module}").main
    with process_state_kept():
        main(list(args))


TINY = ["-params", "horizon:5", "n_samples:16", "learning_starts:50", "gradient_steps:1"]


def test_train_enjoy_and_record_video(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    env = "sb3_maxdiff/PointMass-beta0_01-v0"
    run("train", "--algo", "maxdiff", "--env", env, "-n", "200", "--eval-freq", "-1", *TINY)
    assert (
        tmp_path / "logs" / "maxdiff" / "sb3_maxdiff-PointMass-beta0_01-v0_1" / "sb3_maxdiff-PointMass-beta0_01-v0.zip"
    ).exists()
    # enjoy: 100-step episodes, two of them or more (RL Zoo prints the mean reward of finished episodes only)
    short = ["--env-kwargs", "max_episode_steps:100"]
    capsys.readouterr()
    run("enjoy", "--algo", "maxdiff", "--env", env, "-f", "logs", "--no-render", "-n", "200", *short)
    assert "Mean reward" in capsys.readouterr().out
    # record_video: a 30-step video of the trained agent, 31 frames of the moving point (moviepy reads it back)
    from moviepy import VideoFileClip

    # in its own process: rendered in this one after other tests, the frames came out all alike
    record = [sys.executable, "-m", "sb3_maxdiff.record_video", "--algo", "maxdiff", "--env", env, "-f", "logs", "-n", "30"]
    subprocess.run(record, check=True, timeout=SUBPROCESS_TIMEOUT, capture_output=True)
    (video,) = (tmp_path / "logs").glob("**/videos/*.mp4")
    frames = list(VideoFileClip(str(video)).iter_frames())
    assert len(frames) == 31 and frames[0].shape == (128, 128, 3)
    assert max(np.abs(frame.astype(int) - frames[0]).max() for frame in frames) > 50  # the picture changes


@pytest.mark.slow
def test_optimize_shares_one_sqlite_study_between_two_processes(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    options = [
        "--algo", "nnmppi", "--env", "sb3_maxdiff/PointMass-beta1-v0",
        "-n", "30", "-optimize", "--n-trials", "1", "--n-evaluations", "1", "--eval-episodes", "1", "--sampler", "random",
        "--env-kwargs", "max_episode_steps:10", "--eval-env-kwargs", "max_episode_steps:10",
        "-params", "learning_starts:20", "gradient_steps:1", "policy_kwargs:dict(net_arch=[16])",
    ]  # fmt: skip
    # one study, two processes: a child process and this one, at the same time
    child = subprocess.Popen(
        [sys.executable, "-m", "sb3_maxdiff.train", *options], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    run("train", *options)
    assert child.wait(timeout=SUBPROCESS_TIMEOUT) == 0
    study = optuna.load_study(
        study_name="nnmppi-sb3_maxdiff_PointMass-beta1-v0", storage=f"sqlite:///{tmp_path / 'logs' / 'optuna.db'}"
    )
    assert [t.state for t in study.trials] == [optuna.trial.TrialState.COMPLETE] * 2


@pytest.mark.parametrize("module", ["train", "enjoy", "record_video"])
def test_entry_points_restore_sys_argv(module, capsys):
    import importlib

    main = importlib.import_module(f"sb3_maxdiff.{module}").main
    before = list(sys.argv)
    with pytest.raises(SystemExit) as exit_info:
        main(["--algo", "maxdiff", "--help"])
    assert exit_info.value.code == 0 and "--algo" in capsys.readouterr().out
    assert sys.argv == before
