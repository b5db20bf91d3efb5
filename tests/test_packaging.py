import importlib.metadata

from packaging.requirements import Requirement


def test_gymnasium_is_required_with_its_mujoco_extra():
    """gymnasium's MuJoCo envs import imageio, which only its ``mujoco`` extra installs (the demo needs it)."""
    requirements = [Requirement(line) for line in importlib.metadata.requires("sb3-maxdiff")]
    runtime = [req for req in requirements if req.marker is None]
    gymnasium = [req for req in runtime if req.name == "gymnasium"]
    assert gymnasium and "mujoco" in gymnasium[0].extras
