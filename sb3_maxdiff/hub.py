"""
Hugging Face Hub sharing with the ecosystem's own packaging code (rl_zoo3 ``push_to_hub`` /
``load_from_hub``, which build on ``huggingface_sb3``): the model zip, its hyperparameters
(``config.yml``, ``args.yml``, ``env_kwargs.yml``), training and evaluation metrics, the evaluation
results and a model card with metadata::

    python -m sb3_maxdiff.hub push --algo maxdiff --env sb3_maxdiff/Swimmer-heavy-v0 -f logs/ -orga <user> --no-render
    TRUST_REMOTE_CODE=True python -m sb3_maxdiff.hub load --algo maxdiff --env sb3_maxdiff/Swimmer-heavy-v0 \\
        -orga <user> -f downloaded/

The repository is ``<organization>/<algo>-<env id with '/' as '-'>`` unless ``-name`` says otherwise.
Loading unpickles the downloaded files, hence rl_zoo3's ``TRUST_REMOTE_CODE=True`` opt-in.
"""

import importlib
import runpy
import sys

import sb3_maxdiff  # noqa: F401  (registers the environments)
from sb3_maxdiff.zoo import register_with_zoo

COMMANDS = {"push": "rl_zoo3.push_to_hub", "load": "rl_zoo3.load_from_hub"}


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
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] not in COMMANDS:
        print(f"usage: python -m sb3_maxdiff.hub {{{','.join(COMMANDS)}}} [rl_zoo3 options]; add -h for the options")
        raise SystemExit(2)
    register_with_zoo()
    ensure_hf_integration_compat()
    saved_argv = sys.argv
    sys.argv = [f"sb3_maxdiff.hub {argv[0]}", *argv[1:]]
    try:
        runpy.run_module(COMMANDS[argv[0]], run_name="__main__")  # scripts in rl_zoo3
    finally:
        sys.argv = saved_argv


if __name__ == "__main__":
    main()
