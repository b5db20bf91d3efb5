"""
Hugging Face Hub sharing with the ecosystem's own packaging code (rl_zoo3 ``push_to_hub`` /
``load_from_hub``, which build on ``huggingface_sb3``): the model zip, its hyperparameters
(``config.yml``, ``args.yml``, ``env_kwargs.yml``), training and evaluation metrics, the evaluation
results and a model card with metadata::

    python -m sb3_maxdiff.hub push --algo maxdiff --env sb3_maxdiff/Swimmer-heavy-v0 -f logs/ -orga <user> --no-render
    TRUST_REMOTE_CODE=True python -m sb3_maxdiff.hub load --algo maxdiff --env sb3_maxdiff/Swimmer-heavy-v0 \\
        -orga <user> -f downloaded/

The repository is ``<organization>/<algo>-<env id with '/' as '-'>`` unless ``-name`` says otherwise.
Loading unpickles the downloaded files, hence rl_zoo3's ``TRUST_REMOTE_CODE=True`` opt-in. ``package``
builds the same folder as ``push`` (model, configs, metrics, evaluation, model card) under ``--output``
without any network access and uploads nothing::

    python -m sb3_maxdiff.hub package --algo maxdiff --env sb3_maxdiff/Swimmer-heavy-v0 -f logs/ -orga <user> \
        --no-render --output hub_package/

``push`` and ``package`` evaluate the agent first (``--n-eval-episodes``, 10 by default as in rl_zoo3), with a
progress bar: the planner is the policy, so each evaluation step costs a planning call. Their working files go to
a temporary folder that is removed afterwards, also when the command is interrupted; ``package`` writes only
``--output``.
"""

import argparse
import contextlib
import datetime
import importlib
import json
import os
import pprint
import runpy
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from sb3_maxdiff.cli import (
    check_log_folder,
    fail,
    load_zoo,
    option_value,
    positive_int,
    unreachable,
    with_option_value,
)
from sb3_maxdiff.envs.rendering import choose_offscreen_backend, ffmpeg_executable, ffmpeg_on_path

COMMANDS = {"push": "rl_zoo3.push_to_hub", "load": "rl_zoo3.load_from_hub", "package": "rl_zoo3.push_to_hub"}
# the organization a package names in its model card when -orga is not given (package uploads nothing)
PACKAGE_ORGANIZATION = "your-hf-user"


def model_card(
    algo_name: str,
    algo_class_name: str,
    organization: str,
    env_id: str,
    mean_reward: float,
    std_reward: float,
    hyperparams: dict[str, Any],
    env_kwargs: dict[str, Any],
) -> tuple[str, dict[str, Any]]:
    """The model card and its metadata, with this package's commands (rl_zoo3's own card names only rl_zoo3's)."""
    hf_push = importlib.import_module("huggingface_sb3.push_to_hub")
    metadata = hf_push.generate_metadata(algo_class_name, env_id, mean_reward, std_reward)
    repo = f"{organization}/{algo_name}-{env_id.replace('/', '-')}"
    library = "sb3_maxdiff" if algo_class_name in ("MaxDiffMPPI", "NNMPPI") else "stable_baselines3"
    card = f"""
# **{algo_class_name}** agent on **{env_id}**

A **{algo_class_name}** agent trained with [sb3-maxdiff](https://pypi.org/project/sb3-maxdiff/), Maximum
Diffusion RL and NN-MPPI for [Stable-Baselines3](https://github.com/DLR-RM/stable-baselines3), through its
[RL Zoo](https://github.com/DLR-RM/rl-baselines3-zoo) entry points. Mean evaluation return
{mean_reward:.2f} +/- {std_reward:.2f}.

## Usage

```bash
pip install "sb3-maxdiff[zoo]"
# download into logs/ (loading unpickles the files: opt in with TRUST_REMOTE_CODE=True)
TRUST_REMOTE_CODE=True python -m sb3_maxdiff.hub load --algo {algo_name} --env {env_id} -orga {organization} -f logs/
python -m sb3_maxdiff.enjoy --algo {algo_name} --env {env_id} -f logs/
```

or in Python, after the download:

```python
import sb3_maxdiff  # registers the paper's environments
from {library} import {algo_class_name}

model = {algo_class_name}.load("logs/{algo_name}/{env_id.replace("/", "-")}_1/{env_id.replace("/", "-")}.zip")
```

MaxDiff and NN-MPPI plan with sampled action sequences: with `deterministic=True` the planner draws the
same noise at every call, so an action depends on the observation and the model alone; with
`deterministic=False` it draws from torch's global stream (seed torch for reproducible actions).

## Training

```bash
python -m sb3_maxdiff.train --algo {algo_name} --env {env_id} -f logs/
python -m sb3_maxdiff.hub push --algo {algo_name} --env {env_id} -f logs/ -orga {organization}
```

Repository: `{repo}`.

## Hyperparameters

```python
{pprint.pformat(hyperparams)}
```
"""
    if env_kwargs:
        card += f"""
## Environment arguments

```python
{pprint.pformat(env_kwargs)}
```
"""
    return card, metadata


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
    and that the model "is pushed to the hub", which is not what ``package`` does; those two lines are left out
    (``LocalOnlyApi`` says where the package went instead), every other message is printed as usual.
    """

    PUSH_MESSAGES = ("Pushing repo ", "Your model is pushed to the hub")

    def __init__(self, info: Any):
        self.info = info

    def __get__(self, printer: Any, owner: type) -> Any:
        def info(text: Any = "", *args: Any, **kwargs: Any) -> Any:
            if isinstance(text, str) and text.startswith(self.PUSH_MESSAGES):
                return None
            return self.info(printer, text, *args, **kwargs)

        return info


def _video_options(options: list[str], no_video: bool) -> tuple[list[str], str | None]:
    """
    rl_zoo3's options for the replay video, and the ffmpeg to encode it with: the video is made where MuJoCo can
    render (a display, else EGL, else OSMesa; see :func:`choose_offscreen_backend`) and an ffmpeg is there (on the
    PATH or imageio-ffmpeg's); otherwise ``--no-render`` is added and one line says why and how to get the video.
    """
    if no_video or "--no-render" in options:
        return [*options, "--no-render"] if "--no-render" not in options else options, None
    why = None
    backend = choose_offscreen_backend()
    ffmpeg = ffmpeg_executable()
    if backend is None:
        why = (
            "there is no display and MuJoCo renders neither through EGL nor through OSMesa here (install Mesa's EGL or "
            "OSMesa library, or set MUJOCO_GL to a backend that works)"
        )
    elif ffmpeg is None:
        why = "no ffmpeg was found (put one on the PATH, or pip install imageio-ffmpeg)"
    if why is not None:
        print(f"No replay video: {why}; the rest is made as usual (--no-video skips this check).")
        return [*options, "--no-render"], None
    print(f"Replay video: MuJoCo renders through {backend}, ffmpeg is {ffmpeg}.")
    return options, ffmpeg


class CardSaver:
    """
    Takes the place of ``huggingface_hub.repocard.metadata_save`` while rl_zoo3 packages a model: writes
    :func:`model_card` (from the evaluation results and configs already in the folder) over rl_zoo3's own
    card, then saves the metadata into it as rl_zoo3 would.
    """

    def __init__(self, save_metadata: Any, algo_name: str, organization: str):
        self.save_metadata, self.algo_name, self.organization = save_metadata, algo_name, organization

    def __call__(self, readme_path: Any, metadata: dict[str, Any], **kwargs: Any) -> Any:
        import json

        import yaml

        folder = Path(readme_path).parent
        results = json.loads((folder / "results.json").read_text())
        config = yaml.load((folder / "config.yml").read_text(), Loader=yaml.UnsafeLoader)
        env_kwargs = yaml.safe_load((folder / "env_kwargs.yml").read_text()) or {}
        card, _ = model_card(
            self.algo_name,
            metadata["model-index"][0]["name"],
            self.organization,
            metadata["model-index"][0]["results"][0]["dataset"]["name"],
            float(results["mean_reward"]),
            float(results["std_reward"]),
            dict(config),
            env_kwargs,
        )
        Path(readme_path).write_text(card, encoding="utf-8")
        return self.save_metadata(readme_path, metadata, **kwargs)


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


@contextlib.contextmanager
def working_directory(path: str) -> Iterator[None]:
    """Run the block in ``path`` (rl_zoo3 writes its working copy to ``./hub/``), then return."""
    saved = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(saved)


def _our_options(command: str) -> argparse.ArgumentParser:
    """The options this package adds to rl_zoo3's for ``command``."""
    parser = argparse.ArgumentParser(prog=f"python -m sb3_maxdiff.hub {command}", add_help=False)
    if command in ("push", "package"):
        group = parser.add_argument_group("sb3_maxdiff options")
        group.add_argument(
            "--n-eval-episodes",
            type=positive_int,
            default=10,
            help="episodes of the evaluation that goes into the model card (default 10, as rl_zoo3)",
        )
        group.add_argument(
            "--no-video",
            action="store_true",
            help="make no replay video (as rl_zoo3's --no-render); by default one is made where MuJoCo can render "
            "(a display, else EGL, else OSMesa) and an ffmpeg is there (on the PATH, or imageio-ffmpeg's)",
        )
        if command == "package":
            group.add_argument("--output", help="folder to write the package to (required)")
            group.add_argument(
                "-orga",
                "--organization",
                default=PACKAGE_ORGANIZATION,
                help=f"the Hub user or organization the model card names (optional: nothing is uploaded; default "
                f"{PACKAGE_ORGANIZATION!r})",
            )
    return parser


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m sb3_maxdiff.hub",
        description="Share trained models on the Hugging Face Hub: push (package and upload a run of the log "
        "folder), load (download one into a log folder), or package (build the same folder locally, no upload), "
        "with rl_zoo3's push_to_hub / load_from_hub.",
        epilog="Each command takes rl_zoo3's options (push and package also --n-eval-episodes, package --output DIR): "
        "python -m sb3_maxdiff.hub <command> -h",
    )
    parser.add_argument("command", choices=list(COMMANDS), help="what to do")
    parser.add_argument("options", nargs=argparse.REMAINDER, help="rl_zoo3's options of that command")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    prog = f"python -m sb3_maxdiff.hub {args.command}"
    zoo = load_zoo(prog)
    wants_help = any(option in ("-h", "--help") for option in args.options)
    ours = _our_options(args.command)
    extra, options = ours.parse_known_args(args.options)
    if wants_help:
        print(ours.format_help())  # then rl_zoo3's parser prints its own options and exits
    elif args.command == "package" and extra.output is None:
        fail(prog, "--output DIR is required: the folder to write the package to")
    elif args.command in ("push", "package"):
        check_log_folder(prog, options)
    if args.command == "package":
        options = [*options, "-orga", extra.organization]  # rl_zoo3 requires it; package uploads nothing
    ffmpeg = None
    if args.command in ("push", "package") and not wants_help:
        options, ffmpeg = _video_options(options, extra.no_video)
    zoo.register_with_zoo()
    ensure_hf_integration_compat()
    import huggingface_hub
    import huggingface_hub.repocard

    with contextlib.ExitStack() as stack:
        if args.command == "package" and not wants_help:
            output = Path(extra.output).resolve()
            stack.enter_context(patched(huggingface_hub, "HfApi", LocalOnlyApi(output)))
            import wasabi

            stack.enter_context(patched(wasabi.Printer, "info", PackageOnlyMessages(wasabi.Printer.info)))
        if args.command in ("push", "package"):
            # rl_zoo3 writes its card, then saves the metadata into it: our card goes in at that moment
            card_saver = CardSaver(
                huggingface_hub.repocard.metadata_save,
                option_value(options, "--algo") or "",
                option_value(options, "-orga", "--organization") or "",
            )
            stack.enter_context(patched(huggingface_hub.repocard, "metadata_save", card_saver))
            hf_push = importlib.import_module("huggingface_sb3.push_to_hub")
            stack.enter_context(patched(hf_push, "_evaluate_agent", ProgressEvaluation(extra.n_eval_episodes)))
            # rl_zoo3 builds the package in ./hub/: a temporary folder, removed afterwards (also on Ctrl-C)
            options = with_option_value(options, ("-f", "--folder"), os.path.abspath)  # the command runs elsewhere
            where = f"copied to {extra.output} at the end" if args.command == "package" else "uploaded from there"
            if not wants_help:
                print(f"The package is built in a temporary folder (removed afterwards) and {where}.")
            stack.enter_context(working_directory(stack.enter_context(tempfile.TemporaryDirectory(prefix="sb3_maxdiff_hub_"))))
            if ffmpeg is not None:  # huggingface_sb3 calls ffmpeg by name
                stack.enter_context(ffmpeg_on_path(ffmpeg))
        stack.enter_context(zoo.command_line(options))
        sys.argv[0] = f"sb3_maxdiff.hub {args.command}"
        try:
            runpy.run_module(COMMANDS[args.command], run_name="__main__")  # scripts in rl_zoo3
        except Exception as error:
            network_error = unreachable(error)
            if network_error is None:
                raise
            offline = (
                " `python -m sb3_maxdiff.hub package ... --output DIR` builds the same folder offline."
                if args.command == "push"
                else ""
            )
            fail(prog, f"cannot reach the Hugging Face Hub ({type(network_error).__name__}: {network_error}).{offline}")


if __name__ == "__main__":
    main()
