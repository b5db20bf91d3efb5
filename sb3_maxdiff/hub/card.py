"""
The model card of a shared model, with this package's commands (rl_zoo3's own card names only rl_zoo3's), and
:class:`CardSaver`, which puts it in at the moment rl_zoo3 saves the card's metadata.
"""

import importlib
import json
import pprint
from pathlib import Path
from typing import Any

import yaml


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


class CardSaver:
    """
    Takes the place of ``huggingface_hub.repocard.metadata_save`` while rl_zoo3 packages a model: writes
    :func:`model_card` (from the evaluation results and configs already in the folder) over rl_zoo3's own
    card, then saves the metadata into it as rl_zoo3 would.
    """

    def __init__(self, save_metadata: Any, algo_name: str, organization: str):
        self.save_metadata, self.algo_name, self.organization = save_metadata, algo_name, organization

    def __call__(self, readme_path: Any, metadata: dict[str, Any], **kwargs: Any) -> Any:
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
