"""
The Python of README.md and of the docs pages runs, so that it cannot rot: every ```python block is executed as it
is written, with training and episodes cut short (``learn`` takes at most 10 steps per environment, episodes end
after 20 steps), in a temporary folder. The README's quickstart is checked to be the paper's Swimmer settings.
"""

import pathlib
import re
from typing import Any

import gymnasium as gym
import pytest
from stable_baselines3.common.off_policy_algorithm import OffPolicyAlgorithm

from sb3_maxdiff import MaxDiffMPPI
from sb3_maxdiff.envs import SWIMMER_HEAVY
from sb3_maxdiff.experiments.define.presets import published_kwargs

ROOT = pathlib.Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
STEPS_PER_ENV, EPISODE_STEPS = 10, 20


def python_blocks(page: pathlib.Path) -> list[str]:
    return re.findall(r"```python\n(.+?)\n```", page.read_text(), flags=re.DOTALL)


# each block once: a page may repeat another's (the algorithm page shows the README's quickstart)
BLOCKS = [
    pytest.param(block, id=f"{page.relative_to(ROOT)}:{index}")
    for block, (page, index) in {
        block: (page, index) for page in reversed(PAGES) for index, block in enumerate(python_blocks(page))
    }.items()
]


@pytest.fixture
def cut_short(monkeypatch, tmp_path) -> list[Any]:
    """Cap every ``learn`` and every episode; the models trained, in order."""
    trained: list[Any] = []
    learn, make = OffPolicyAlgorithm.learn, gym.make

    def short_learn(self, total_timesteps, *args, **kwargs):
        trained.append(self)
        return learn(self, min(total_timesteps, STEPS_PER_ENV * self.n_envs), *args, **kwargs)

    def short_make(env_id, *args, **kwargs):
        if isinstance(env_id, str) and "max_episode_steps" not in kwargs:
            kwargs["max_episode_steps"] = EPISODE_STEPS
        return make(env_id, *args, **kwargs)

    monkeypatch.setattr(OffPolicyAlgorithm, "learn", short_learn)
    monkeypatch.setattr(gym, "make", short_make)
    monkeypatch.chdir(tmp_path)
    return trained


def test_the_pages_hold_python():
    assert len(BLOCKS) >= 8 and python_blocks(ROOT / "README.md")


@pytest.mark.parametrize("block", BLOCKS)
def test_python_block_runs(block, cut_short):
    exec(compile(block, "<docs>", "exec"), {"__name__": "__docs__"})


def test_readme_quickstart_is_the_papers_swimmer(monkeypatch, tmp_path):
    trained: list[Any] = []
    monkeypatch.setattr(OffPolicyAlgorithm, "learn", lambda self, *args, **kwargs: trained.append(self) or self)
    monkeypatch.chdir(tmp_path)
    quickstart = python_blocks(ROOT / "README.md")[0]
    exec(compile(quickstart, "<README quickstart>", "exec"), {"__name__": "__docs__"})
    (model,) = trained
    published = MaxDiffMPPI(SWIMMER_HEAVY, **published_kwargs("maxdiff", SWIMMER_HEAVY))
    assert isinstance(model, MaxDiffMPPI) and model.env.get_attr("spec")[0].id == SWIMMER_HEAVY
    names = ["alpha", "temperature", "horizon", "n_samples", "noise_std", "learning_rate", "batch_size", "gradient_steps"]
    names += ["learning_starts", "warmup_actions", "action_semantics", "explr_dims", "explr_weights", "entropy_jitter"]
    for name in names:
        assert getattr(model, name) == getattr(published, name), name
    assert model.policy.net_arch == published.policy.net_arch


def test_maxdiff_signature_lists_every_parameter_of_nnmppi():
    """help(MaxDiffMPPI), IDEs and the API docs show NN-MPPI's parameters too, not only ``**kwargs``."""
    import inspect

    from sb3_maxdiff import NNMPPI

    maxdiff, nnmppi = inspect.signature(MaxDiffMPPI).parameters, inspect.signature(NNMPPI).parameters
    assert set(nnmppi) <= set(maxdiff) and not any(param.kind is param.VAR_KEYWORD for param in maxdiff.values())
    assert "__signature__" not in vars(MaxDiffMPPI.__init__)  # written out, not patched in
    documented = set(re.findall(r":param (\w+):", MaxDiffMPPI.__doc__ or ""))
    assert set(maxdiff) - {"self"} <= documented, sorted(set(maxdiff) - documented)
    assert maxdiff["horizon"].default == 40 and maxdiff["terminal_value"].default is False
    assert maxdiff["control_cost"].default is False  # MaxDiff's own default, not NN-MPPI's
    MaxDiffMPPI(SWIMMER_HEAVY, horizon=5, n_samples=8)  # the listed keywords still reach NN-MPPI


PUBLIC_PACKAGES = ["sb3_maxdiff", "sb3_maxdiff.nnmppi", "sb3_maxdiff.maxdiff", "sb3_maxdiff.wrappers",
                   "sb3_maxdiff.synthesis", "sb3_maxdiff.envs"]  # fmt: skip


def documented_names() -> set[int]:
    """The objects the docs pages document by autodoc, by identity (a name re-exported elsewhere counts as the same)."""
    import importlib

    found = set()
    for page in (ROOT / "docs").rglob("*.md"):
        for target in re.findall(r"^\.\. auto(?:class|function):: (\S+)$", page.read_text(), flags=re.MULTILINE):
            module, _, name = target.rpartition(".")
            found.add(id(getattr(importlib.import_module(module), name)))
    return found


def test_every_public_class_and_function_has_an_api_page():
    import importlib
    import inspect

    documented = documented_names()
    missing = [
        f"{package}.{name}"
        for package in PUBLIC_PACKAGES
        for name in importlib.import_module(package).__all__
        if (inspect.isclass(obj := getattr(importlib.import_module(package), name)) or inspect.isfunction(obj))
        and id(obj) not in documented
    ]
    assert missing == []
