import importlib.metadata

from packaging.requirements import Requirement


def test_gymnasium_is_required_with_its_mujoco_extra():
    """gymnasium's MuJoCo envs import imageio, which only its ``mujoco`` extra installs (the demo needs it)."""
    requirements = [Requirement(line) for line in importlib.metadata.requires("sb3-maxdiff")]
    runtime = [req for req in requirements if req.marker is None]
    gymnasium = [req for req in runtime if req.name == "gymnasium"]
    assert gymnasium and "mujoco" in gymnasium[0].extras


def test_hyperparameter_files_ship_inside_the_package():
    """The RL Zoo files live in the package (top-level hyperparams/ links to them), so a wheel has them too."""
    import ast
    import fnmatch
    import pathlib
    import re

    import sb3_maxdiff
    from sb3_maxdiff.zoo import HYPERPARAMS_DIR, ZOO_ALGOS

    package_dir = pathlib.Path(sb3_maxdiff.__file__).parent
    assert HYPERPARAMS_DIR.parent == package_dir
    root = package_dir.parent
    pyproject = (root / "pyproject.toml").read_text()
    package_data = re.search(r"\[tool\.setuptools\.package-data\]\nsb3_maxdiff = (\[.*\])", pyproject)
    patterns = ast.literal_eval(package_data.group(1))
    for _, file_name in ZOO_ALGOS.values():
        assert (HYPERPARAMS_DIR / file_name).is_file()
        assert any(fnmatch.fnmatch(f"hyperparams/{file_name}", pattern) for pattern in patterns)
    assert (root / "hyperparams" / "maxdiff.yml").read_text() == (HYPERPARAMS_DIR / "maxdiff.yml").read_text()


def test_sb3_calls_the_log_hook_this_package_overrides():
    """
    The training statistics (model losses, planner ESS, path entropy, alpha) reach the logger through SB3's
    ``dump_logs``, which the algorithms extend; SB3 before 2.6 called ``_dump_logs`` instead and they were silently
    lost. Fails if SB3's loop stops calling the hook under this name.
    """
    import inspect

    from stable_baselines3.common.off_policy_algorithm import OffPolicyAlgorithm

    from sb3_maxdiff import NNMPPI

    assert "self.dump_logs()" in inspect.getsource(OffPolicyAlgorithm.collect_rollouts)
    assert NNMPPI.dump_logs is not OffPolicyAlgorithm.dump_logs


# the SB3 methods the algorithms and the policy extend; SB3 calls them by these names
SB3_HOOKS = {
    "NNMPPI": ["_get_torch_save_params", "_sample_action", "_setup_model", "learn", "train"],
    "PlanningAlgorithm": ["_excluded_save_params", "_setup_learn", "_store_transition", "_wrap_env", "dump_logs", "learn",
                          "load", "predict", "set_parameters"],
    "IndependentAgentsMixin": ["set_env"],
    "MaxDiffMPPI": ["_excluded_save_params", "_setup_model", "learn", "set_parameters"],
    "MPPIPolicy": ["_get_constructor_parameters", "_load_from_state_dict", "_predict", "forward", "predict"],
}  # fmt: skip


def test_the_methods_extended_are_still_sb3s():
    """An SB3 release that renames one of these would leave the extension uncalled, silently: fail here instead."""
    from stable_baselines3.common.off_policy_algorithm import OffPolicyAlgorithm
    from stable_baselines3.common.policies import BasePolicy

    from sb3_maxdiff import NNMPPI, MaxDiffMPPI
    from sb3_maxdiff.common.agents import IndependentAgentsMixin
    from sb3_maxdiff.common.planning_algorithm import PlanningAlgorithm
    from sb3_maxdiff.nnmppi.policies import MPPIPolicy

    algorithms = [(cls, OffPolicyAlgorithm) for cls in (NNMPPI, PlanningAlgorithm, MaxDiffMPPI, IndependentAgentsMixin)]
    for cls, base in (*algorithms, (MPPIPolicy, BasePolicy)):
        for name in SB3_HOOKS[cls.__name__]:
            assert name in vars(cls) and hasattr(base, name), f"{cls.__name__}.{name}"
