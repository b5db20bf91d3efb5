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

from sb3_maxdiff.hub.card import CardSaver, model_card
from sb3_maxdiff.hub.cli import COMMANDS, main
from sb3_maxdiff.hub.patches import LocalOnlyApi, PackageOnlyMessages, ProgressEvaluation, rl_zoo3_patched

__all__ = [
    "COMMANDS",
    "CardSaver",
    "LocalOnlyApi",
    "PackageOnlyMessages",
    "ProgressEvaluation",
    "main",
    "model_card",
    "rl_zoo3_patched",
]
