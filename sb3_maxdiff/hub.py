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
"""

import argparse
import contextlib
import importlib
import pprint
import runpy
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from sb3_maxdiff.zoo import command_line, register_with_zoo

COMMANDS = {"push": "rl_zoo3.push_to_hub", "load": "rl_zoo3.load_from_hub", "package": "rl_zoo3.push_to_hub"}


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

MaxDiff and NN-MPPI plan with sampled action sequences: their actions are stochastic whatever
`deterministic` says, so seed torch for reproducible actions.

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


def _option(options: list[str], name: str) -> str:
    """The value of ``name`` in rl_zoo3's options (argparse has already checked that it is there)."""
    for index, option in enumerate(options[:-1]):
        if option == name:
            return options[index + 1]
    return ""


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


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m sb3_maxdiff.hub",
        description="Share trained models on the Hugging Face Hub: push (package and upload a run of the log "
        "folder), load (download one into a log folder), or package (build the same folder locally, no upload), "
        "with rl_zoo3's push_to_hub / load_from_hub.",
        epilog="Each command takes rl_zoo3's options (package also --output DIR): python -m sb3_maxdiff.hub <command> -h",
    )
    parser.add_argument("command", choices=list(COMMANDS), help="what to do")
    parser.add_argument("options", nargs=argparse.REMAINDER, help="rl_zoo3's options of that command")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    options = list(args.options)
    register_with_zoo()
    ensure_hf_integration_compat()
    import huggingface_hub
    import huggingface_hub.repocard

    with contextlib.ExitStack() as stack:
        if args.command == "package":
            output_parser = argparse.ArgumentParser(prog="python -m sb3_maxdiff.hub package", add_help=False)
            output_parser.add_argument("--output", required=True, help="folder to write the package to")
            known, options = output_parser.parse_known_args(options)
            stack.enter_context(patched(huggingface_hub, "HfApi", LocalOnlyApi(Path(known.output))))
        if args.command in ("push", "package"):
            # rl_zoo3 writes its card, then saves the metadata into it: our card goes in at that moment
            card_saver = CardSaver(
                huggingface_hub.repocard.metadata_save, _option(options, "--algo"), _option(options, "-orga")
            )
            stack.enter_context(patched(huggingface_hub.repocard, "metadata_save", card_saver))
        stack.enter_context(command_line(options))
        sys.argv[0] = f"sb3_maxdiff.hub {args.command}"
        runpy.run_module(COMMANDS[args.command], run_name="__main__")  # scripts in rl_zoo3


if __name__ == "__main__":
    main()
