import json
import pathlib
import re
import subprocess
import sys
import tempfile

import numpy as np
import pytest
import yaml
from fake_hub import LocalHub
from helpers import SUBPROCESS_TIMEOUT

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


@pytest.fixture(scope="module")
def trained_logs(tmp_path_factory):
    """A log folder with one tiny NN-MPPI run, trained once for the tests below."""
    folder = tmp_path_factory.mktemp("trained")
    tiny = ["-params", "horizon:5", "n_samples:16", "learning_starts:50"]
    train_main(["--algo", "nnmppi", "--env", ENV_ID, "-n", "120", "--eval-freq", "-1", "-f", str(folder / "logs"), *tiny])
    return folder / "logs"


def _package(logs, *extra):
    return ["package", "--algo", "nnmppi", "--env", ENV_ID, "-f", str(logs), "-orga", "tester", "--no-render",
            "--env-kwargs", "max_episode_steps:20", *extra]  # fmt: skip


def test_package_evaluates_with_progress_and_writes_only_its_output(trained_logs, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "scratch"))
    (tmp_path / "scratch").mkdir()
    hub_main(_package(trained_logs, "--n-eval-episodes", "3", "--output", "packaged"))
    results = json.loads((tmp_path / "packaged" / "results.json").read_text())
    assert results["n_eval_episodes"] == 3 and "mean_reward" in results
    captured = capsys.readouterr()
    err = captured.err
    assert "evaluating" in err and "3/3" in err
    # package uploads nothing, and says where the package went instead of "pushed to the hub"
    assert "pushed to the hub" not in captured.out and "Pushing repo" not in captured.out
    assert "Uploading" not in captured.out
    assert f"into {tmp_path / 'packaged'} (nothing uploaded)" in captured.out
    # nothing but the output is left behind: no ./hub/ working copy, the temporary folder removed
    assert sorted(path.name for path in tmp_path.iterdir()) == ["packaged", "scratch"]
    assert list((tmp_path / "scratch").iterdir()) == []


def test_package_interrupted_leaves_nothing(trained_logs, tmp_path, monkeypatch):
    from sb3_maxdiff import hub

    def interrupted(self, *args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(hub.ProgressEvaluation, "__call__", interrupted)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "scratch"))
    (tmp_path / "scratch").mkdir()
    with pytest.raises(KeyboardInterrupt):
        hub_main(_package(trained_logs, "--output", "packaged"))
    assert sorted(path.name for path in tmp_path.iterdir()) == ["scratch"]
    assert list((tmp_path / "scratch").iterdir()) == []
    assert pathlib.Path.cwd() == tmp_path


@pytest.mark.parametrize("command", ["push", "package", "load"])
def test_every_hub_command_has_help(command, capsys):
    with pytest.raises(SystemExit) as exit_info:
        hub_main([command, "--help"])
    assert exit_info.value.code == 0
    text = capsys.readouterr().out
    assert "--algo" in text and "-orga" in text
    assert ("--output" in text) == (command == "package")
    assert ("--n-eval-episodes" in text) == (command != "load")


def _error_line(capsys) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if "error:" in line]
    assert len(lines) == 1, err
    return lines[0]


def test_push_without_network_says_so_in_one_line(trained_logs, tmp_path, monkeypatch, capsys):
    import httpx2
    import huggingface_hub

    class Offline(LocalHub):
        def create_repo(self, repo_id, **kwargs):
            raise httpx2.ConnectError("[Errno -2] Name or service not known")

    monkeypatch.setattr(huggingface_hub, "HfApi", Offline(tmp_path / "remote"))
    monkeypatch.chdir(tmp_path)
    args = _package(trained_logs)
    args[0] = "push"
    with pytest.raises(SystemExit) as exit_info:
        hub_main(args)
    assert exit_info.value.code == 1
    line = _error_line(capsys)
    assert "cannot reach the Hugging Face Hub" in line and "ConnectError" in line and "sb3_maxdiff.hub package" in line
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "args, message",
    [
        (["push", "--algo", "nnmppi", "--env", ENV_ID, "-f", "missing", "-orga", "t"], "no nnmppi runs in the log folder"),
        (["package", "--algo", "nnmppi", "--env", ENV_ID, "-f", "logs", "-orga", "t"], "--output DIR is required"),
    ],
)
def test_hub_refuses_bad_input_in_one_line(args, message, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exit_info:
        hub_main(args)
    assert exit_info.value.code == 1 and message in _error_line(capsys)


def test_n_eval_episodes_must_be_positive(capsys):
    with pytest.raises(SystemExit) as exit_info:
        hub_main(["package", "--n-eval-episodes", "0", "--output", "x"])
    assert exit_info.value.code == 2 and "--n-eval-episodes: must be a positive integer, got 0" in capsys.readouterr().err


def test_commands_without_the_zoo_extra_say_which_extra_in_one_line():
    # a base install: rl_zoo3 and Optuna missing; one interpreter runs each command as ``python -m`` would and
    # reports its exit code and what it wrote to stderr (an exception escaping the command is reported as a traceback)
    script = """
import contextlib, io, json, runpy, sys, traceback
sys.modules['rl_zoo3'] = None
sys.modules['optuna'] = None
outcomes = {}
for module in ('sb3_maxdiff.train', 'sb3_maxdiff.enjoy', 'sb3_maxdiff.record_video', 'sb3_maxdiff.hub'):
    sys.argv = [module, *(['push'] if module == 'sb3_maxdiff.hub' else []), '--help']
    err, code = io.StringIO(), 0
    with contextlib.redirect_stderr(err):
        try:
            runpy.run_module(module, run_name='__main__')
        except SystemExit as exit_info:
            code = exit_info.code
        except BaseException:
            traceback.print_exc()
            code = 'exception'
    outcomes[module] = [code, err.getvalue()]
print(json.dumps(outcomes))
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=SUBPROCESS_TIMEOUT)
    assert done.returncode == 0, done.stderr
    outcomes = json.loads(done.stdout.strip().splitlines()[-1])
    assert sorted(outcomes) == ["sb3_maxdiff.enjoy", "sb3_maxdiff.hub", "sb3_maxdiff.record_video", "sb3_maxdiff.train"]
    for module, (code, stderr) in outcomes.items():
        assert code == 1, (module, stderr)
        assert "Traceback" not in stderr and len(stderr.strip().splitlines()) == 1, (module, stderr)
        assert "pip install 'sb3-maxdiff[zoo]'" in stderr, (module, stderr)


@pytest.mark.parametrize("command", ["enjoy", "record_video"])
def test_enjoy_refuses_a_missing_log_folder_in_one_line(command, tmp_path, monkeypatch, capsys):
    import importlib

    command_main = importlib.import_module(f"sb3_maxdiff.{command}").main
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exit_info:
        command_main(["--algo", "maxdiff", "--env", ENV_ID, "-f", "logs", "--no-render"])
    assert exit_info.value.code == 1 and "python -m sb3_maxdiff.train --algo maxdiff" in _error_line(capsys)


def test_package_needs_no_organization(trained_logs, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    args = ["package", "--algo", "nnmppi", "--env", ENV_ID, "-f", str(trained_logs), "--no-video"]
    hub_main([*args, "--env-kwargs", "max_episode_steps:20", "--n-eval-episodes", "1", "--output", "packaged"])
    card = (tmp_path / "packaged" / "README.md").read_text()
    assert "-orga your-hf-user" in card and not (tmp_path / "packaged" / "replay.mp4").exists()
    assert "Packaged your-hf-user/nnmppi-" in capsys.readouterr().out


def test_package_where_nothing_renders_skips_the_video_in_one_line(trained_logs, tmp_path, monkeypatch, capsys):
    from sb3_maxdiff.hub import cli

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(cli, "choose_offscreen_backend", lambda: None)
    args = ["package", "--algo", "nnmppi", "--env", ENV_ID, "-f", str(trained_logs), "-orga", "tester"]
    hub_main([*args, "--env-kwargs", "max_episode_steps:20", "--n-eval-episodes", "1", "--output", "packaged"])
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith(("Replay video", "No replay video"))]
    assert len(lines) == 1 and lines[0].startswith("No replay video: there is no display and MuJoCo renders neither")
    assert (tmp_path / "packaged" / "results.json").exists() and not (tmp_path / "packaged" / "replay.mp4").exists()


@pytest.mark.slow
def test_package_on_a_machine_with_no_display_gives_a_package_and_says_whether_it_has_a_video(tmp_path):
    """The command as a user runs it on a server: no DISPLAY, no MUJOCO_GL, a MuJoCo body whose replay is rendered."""
    import os

    env_id, tiny = "sb3_maxdiff/Swimmer-heavy-v0", ["-params", "horizon:5", "n_samples:16", "learning_starts:30"]
    train_main(["--algo", "nnmppi", "--env", env_id, "-n", "60", "--eval-freq", "-1", "-f", str(tmp_path / "logs"), *tiny])
    from sb3_maxdiff.envs.rendering import BACKEND_VARIABLES

    environment = {key: value for key, value in os.environ.items() if key not in BACKEND_VARIABLES}
    options = ["--algo", "nnmppi", "--env", env_id, "-f", "logs", "-n", "10", "--env-kwargs", "max_episode_steps:10"]
    command = [sys.executable, "-m", "sb3_maxdiff.hub", "package", *options, "--n-eval-episodes", "1", "--output", "packaged"]
    done = subprocess.run(command, cwd=tmp_path, env=environment, capture_output=True, text=True, timeout=SUBPROCESS_TIMEOUT)
    assert done.returncode == 0, done.stderr[-2000:]
    package = tmp_path / "packaged"
    assert (package / "results.json").exists() and (package / "README.md").exists()
    said = [line for line in done.stdout.splitlines() if line.startswith(("Replay video:", "No replay video:"))]
    assert len(said) == 1
    assert said[0].startswith("Replay video:") == (package / "replay.mp4").exists()


class FramesEnv:
    """A one-environment VecEnv stand-in whose frames are large (480 x 480 RGB, as MuJoCo's) and all different."""

    metadata = {"render_fps": 25}  # noqa: RUF012

    def __init__(self):
        self.t = 0

    def reset(self):
        self.t = 0
        return np.zeros((1, 2), dtype=np.float32)

    def step(self, action):
        self.t += 1
        return np.full((1, 2), self.t, dtype=np.float32), np.zeros(1), np.zeros(1, dtype=bool), [{}]

    def render(self):
        return np.full((480, 480, 3), self.t % 256, dtype=np.uint8)


class ZeroModel:
    def predict(self, obs, deterministic=True):
        return np.zeros((1, 1), dtype=np.float32), None


def test_replay_video_holds_one_frame_whatever_its_length(tmp_path, capsys):
    """The replay streams its frames to ffmpeg: memory does not grow with the video (huggingface_sb3's held them all)."""
    import tracemalloc

    from sb3_maxdiff.envs.rendering import ffmpeg_executable
    from sb3_maxdiff.hub.patches import StreamingReplay

    ffmpeg = ffmpeg_executable()
    if ffmpeg is None:
        pytest.skip("no ffmpeg here")
    replay, frame_bytes = StreamingReplay(ffmpeg), 480 * 480 * 3
    peaks = {}
    for length in (10, 60):
        (tmp_path / str(length)).mkdir()
        tracemalloc.start()
        replay(ZeroModel(), FramesEnv(), length, True, tmp_path / str(length))
        peaks[length] = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        probe = subprocess.run([ffmpeg, "-i", str(tmp_path / str(length) / "replay.mp4"), "-map", "0:v", "-f", "null", "-"],
                               capture_output=True, text=True)  # fmt: skip
        frames = re.findall(r"frame=\s*(\d+)", probe.stderr)
        assert frames and int(frames[-1]) == length + 1  # the reset's frame and one a step
    assert peaks[60] < 4 * frame_bytes  # 61 frames held would be 42 MB
    assert peaks[60] - peaks[10] < frame_bytes
    assert "replay video" in capsys.readouterr().err


def test_replay_video_that_fails_leaves_no_file_and_says_why(tmp_path, capsys):
    from sb3_maxdiff.hub.patches import StreamingReplay

    StreamingReplay(str(tmp_path / "no-such-ffmpeg"))(ZeroModel(), FramesEnv(), 5, True, tmp_path)
    assert not (tmp_path / "replay.mp4").exists()
    assert capsys.readouterr().out.startswith("No replay video: FileNotFoundError")
