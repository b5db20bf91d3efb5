"""
What ``push`` and ``package`` change in rl_zoo3 and the Hugging Face libraries while rl_zoo3's own packaging code
runs, all entered and undone by one context manager (:func:`rl_zoo3_patched`): our model card, an evaluation with a
progress bar, a replay video streamed to ffmpeg one frame at a time, a temporary working folder, and for ``package`` a
Hub that writes to a local folder and no messages about pushing.
"""

import contextlib
import datetime
import importlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from sb3_maxdiff.hub.card import CardSaver


class LocalOnlyApi:
    """
    Stands in for ``huggingface_hub.HfApi`` during ``package``: the repository starts empty, and the
    upload copies the packaged folder to ``output``; nothing goes over the network.
    """

    def __init__(self, output: Path):
        self.output = Path(output)

    def __call__(self, *args: Any, **kwargs: Any) -> "LocalOnlyApi":  # rl_zoo3 calls HfApi()
        return self

    def create_repo(self, repo_id: str, **kwargs: Any) -> str:
        return str(self.output.resolve())

    def snapshot_download(self, repo_id: str, local_dir: Any, **kwargs: Any) -> str:
        Path(local_dir).mkdir(parents=True, exist_ok=True)
        return str(local_dir)

    def upload_folder(self, repo_id: str, folder_path: Any, **kwargs: Any) -> str:
        shutil.copytree(folder_path, self.output, dirs_exist_ok=True)
        print(f"Packaged {repo_id} into {self.output} (nothing uploaded)")
        return str(self.output.resolve())


class PackageOnlyMessages:
    """
    Takes the place of ``wasabi.Printer.info`` during ``package``: rl_zoo3 announces that it pushes the repository
    and that the model "is pushed to the hub", which is not what ``package`` does; those lines are left out
    (``LocalOnlyApi`` says where the package went instead), every other message is printed as usual. :meth:`print`
    does the same for the plain ``print`` of rl_zoo3's script ("Uploading to <repo>, make sure to have the rights").
    """

    PUSH_MESSAGES = ("Pushing repo ", "Your model is pushed to the hub", "Uploading to ")

    def __init__(self, info: Any):
        self.info = info

    def __get__(self, printer: Any, owner: type) -> Any:
        def info(text: Any = "", *args: Any, **kwargs: Any) -> Any:
            if isinstance(text, str) and text.startswith(self.PUSH_MESSAGES):
                return None
            return self.info(printer, text, *args, **kwargs)

        return info

    @classmethod
    def print(cls, *values: Any, **kwargs: Any) -> None:
        """``print``, except for a line that announces an upload."""
        if values and isinstance(values[0], str) and values[0].startswith(cls.PUSH_MESSAGES):
            return
        print(*values, **kwargs)


class ProgressEvaluation:
    """
    Takes the place of huggingface_sb3's ``_evaluate_agent`` while rl_zoo3 packages a model: evaluates on
    ``n_eval_episodes`` episodes (instead of rl_zoo3's fixed 10) with a progress bar of episodes done, rate and
    ETA, and writes the same ``results.json``.
    """

    def __init__(self, n_eval_episodes: int):
        self.n_eval_episodes = n_eval_episodes

    def __call__(self, model: Any, eval_env: Any, n_eval_episodes: int, is_deterministic: bool, local_path: Path) -> Any:
        from stable_baselines3.common.evaluation import evaluate_policy
        from tqdm import tqdm

        with tqdm(total=self.n_eval_episodes, unit="episode", desc="evaluating", file=sys.stderr) as bar:
            steps = [0]

            def count_episodes(locals_: dict[str, Any], globals_: dict[str, Any]) -> None:
                steps[0] += 1
                if locals_["done"]:
                    bar.update(1)
                    steps[0] = 0
                elif steps[0] % 100 == 0:  # a planner step is slow: show that the episode moves
                    bar.set_postfix_str(f"{steps[0]} steps into the episode")

            returns, _ = evaluate_policy(
                model,
                eval_env,
                self.n_eval_episodes,
                is_deterministic,
                callback=count_episodes,
                return_episode_rewards=True,
            )
        mean_reward, std_reward = float(np.mean(returns)), float(np.std(returns))
        results = {
            "mean_reward": mean_reward,
            "std_reward": std_reward,
            "is_deterministic": is_deterministic,
            "n_eval_episodes": self.n_eval_episodes,
            "eval_datetime": datetime.datetime.now().isoformat(),
        }
        (Path(local_path) / "results.json").write_text(json.dumps(results))
        return mean_reward, std_reward


class StreamingReplay:
    """
    Takes the place of huggingface_sb3's ``_generate_replay`` while rl_zoo3 packages a model: plays ``video_length``
    steps of the agent and writes each rendered frame straight into ffmpeg's input (H.264, ``replay.mp4``), so memory
    holds one frame however long the video (huggingface_sb3 keeps every frame until the end, then encodes twice). A
    progress bar counts the steps: each one is a planning call. As there, a failure leaves the package without a
    video and says why; the rest is packaged as usual.
    """

    def __init__(self, ffmpeg: str):
        self.ffmpeg = ffmpeg

    def encoder(self, width: int, height: int, fps: float, path: Path) -> subprocess.Popen:
        """An ffmpeg process that reads raw RGB frames of ``width`` x ``height`` on its input and writes ``path``."""
        command = [
            self.ffmpeg, "-hide_banner", "-loglevel", "error", "-y",
            "-f", "rawvideo", "-pix_fmt", "rgb24", "-s", f"{width}x{height}", "-r", f"{fps:g}", "-i", "-",
            "-vf", "pad=ceil(iw/2)*2:ceil(ih/2)*2", "-vcodec", "h264", "-pix_fmt", "yuv420p", str(path),
        ]  # fmt: skip
        return subprocess.Popen(command, stdin=subprocess.PIPE)

    def __call__(self, model: Any, eval_env: Any, video_length: int, is_deterministic: bool, local_path: Path) -> None:
        from tqdm import tqdm

        path = Path(local_path) / "replay.mp4"
        encoder = None
        try:
            obs = eval_env.reset()
            frame = np.asarray(eval_env.render())
            fps = eval_env.metadata.get("render_fps") or 30
            encoder = self.encoder(frame.shape[1], frame.shape[0], fps, path)
            frames = encoder.stdin
            if frames is None:  # Popen with stdin=PIPE always has one; for the type checker
                raise RuntimeError("ffmpeg's input is not a pipe")
            frames.write(np.asarray(frame, dtype=np.uint8).tobytes())
            with tqdm(total=video_length, unit="step", desc="replay video", file=sys.stderr) as bar:
                for _ in range(video_length):
                    action, _ = model.predict(obs, deterministic=is_deterministic)
                    obs, _, _, _ = eval_env.step(action)
                    frames.write(np.asarray(eval_env.render(), dtype=np.uint8).tobytes())
                    bar.update(1)
            frames.close()
            if encoder.wait() != 0:
                raise RuntimeError(f"ffmpeg exited with status {encoder.returncode}")
        except (Exception, KeyboardInterrupt) as error:
            if encoder is not None:
                encoder.kill()
                encoder.wait()
            path.unlink(missing_ok=True)
            if isinstance(error, KeyboardInterrupt):
                raise
            print(f"No replay video: {type(error).__name__}: {error}; the rest is packaged as usual.")


@contextlib.contextmanager
def patched(module: Any, name: str, value: Any) -> Iterator[None]:
    """Set ``module.name`` to ``value`` for the duration of the block."""
    saved = getattr(module, name)
    setattr(module, name, value)
    try:
        yield
    finally:
        setattr(module, name, saved)


def ensure_hf_integration_compat() -> None:
    """
    rl_zoo3 2.9 imports ``generate_metadata`` (returning a dict) from ``huggingface_sb3.push_to_hub``;
    sb3-team-hf-integration 3.2, the version rl_zoo3 installs, only has ``_generate_metadata`` (returning
    ``ModelCardData``), so rl_zoo3's push cannot even be imported. Add the missing name, if it is missing.
    """
    # the package re-exports a function named push_to_hub, which hides the module of that name
    hf_push = importlib.import_module("huggingface_sb3.push_to_hub")

    if not hasattr(hf_push, "generate_metadata"):

        def generate_metadata(model_name: str, env_id: str, mean_reward: float, std_reward: float) -> dict:
            return hf_push._generate_metadata(model_name, env_id, mean_reward, std_reward).to_dict()

        hf_push.generate_metadata = generate_metadata  # type: ignore[attr-defined]


@contextlib.contextmanager
def working_directory(path: str) -> Iterator[None]:
    """Run the block in ``path`` (rl_zoo3 writes its working copy to ``./hub/``), then return."""
    saved = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(saved)


@contextlib.contextmanager
def rl_zoo3_patched(
    command: str,
    algo: str,
    organization: str,
    n_eval_episodes: int,
    output: str | None = None,
    ffmpeg: str | None = None,
) -> Iterator[None]:
    """
    Run the block (rl_zoo3's ``push_to_hub`` for ``push`` and ``package``) with this package's changes, undone on
    leaving, also on an error or Ctrl-C: our card, the evaluation on ``n_eval_episodes`` episodes with a progress bar,
    a temporary working folder (rl_zoo3 builds the package in ``./hub/``), the replay video streamed to ``ffmpeg``
    where given; for ``package``, the upload copied to ``output`` instead. ``load`` needs none of it.
    """
    ensure_hf_integration_compat()
    import huggingface_hub
    import huggingface_hub.repocard

    with contextlib.ExitStack() as stack:
        if command == "package":
            stack.enter_context(patched(huggingface_hub, "HfApi", LocalOnlyApi(Path(output or ".").resolve())))
            import wasabi

            stack.enter_context(patched(wasabi.Printer, "info", PackageOnlyMessages(wasabi.Printer.info)))
        # rl_zoo3 writes its card, then saves the metadata into it: our card goes in at that moment
        card_saver = CardSaver(huggingface_hub.repocard.metadata_save, algo, organization)
        stack.enter_context(patched(huggingface_hub.repocard, "metadata_save", card_saver))
        hf_push = importlib.import_module("huggingface_sb3.push_to_hub")
        stack.enter_context(patched(hf_push, "_evaluate_agent", ProgressEvaluation(n_eval_episodes)))
        stack.enter_context(working_directory(stack.enter_context(tempfile.TemporaryDirectory(prefix="sb3_maxdiff_hub_"))))
        if ffmpeg is not None:
            stack.enter_context(patched(hf_push, "_generate_replay", StreamingReplay(ffmpeg)))
        yield
