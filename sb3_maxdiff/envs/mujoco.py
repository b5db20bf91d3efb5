"""The paper's MuJoCo environments on Gymnasium's v5 models."""

import hashlib
import os
import tempfile
import xml.etree.ElementTree as ET
from typing import Any

import gymnasium
import numpy as np
from gymnasium.envs.mujoco.ant_v5 import AntEnv
from gymnasium.envs.mujoco.half_cheetah_v5 import HalfCheetahEnv
from gymnasium.envs.mujoco.swimmer_v5 import SwimmerEnv

LIGHT_TAIL_DENSITY = 100.0  # the stock links have density 1000


def stock_asset_path(name: str) -> str:
    """Absolute path of one of Gymnasium's MuJoCo model files."""
    return os.path.join(os.path.dirname(gymnasium.__file__), "envs", "mujoco", "assets", name)


# the environment variable that moves the folder of derived model files
CACHE_DIR_VARIABLE = "SB3_MAXDIFF_CACHE"
# the cache folder's name: not a Python identifier, so that no import can take the folder for the package
CACHE_FOLDER = "sb3-maxdiff"


def default_cache_dir() -> str:
    """
    Folder of the files the package derives and keeps: ``$SB3_MAXDIFF_CACHE`` where set, else ``sb3-maxdiff`` in
    the user's cache directory (``$XDG_CACHE_HOME``, default ``~/.cache``), or in the temp directory where that
    cannot be made.
    """
    if os.environ.get(CACHE_DIR_VARIABLE):
        return os.environ[CACHE_DIR_VARIABLE]
    user_cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    folder = os.path.join(user_cache, CACHE_FOLDER)
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError:  # no writable home (some containers and CI jobs)
        folder = os.path.join(tempfile.gettempdir(), CACHE_FOLDER)
    return folder


def light_tail_swimmer_xml(cache_dir: str | None = None) -> str:
    """
    Absolute path of the light-tail swimmer model: Gymnasium's stock ``swimmer.xml`` with only
    the density of the tail link (body ``back``) changed from 1000 to 100. The file is derived
    from the installed stock model (nothing of it is copied into this repository) and cached under
    a name made from its content, so that a changed stock model or density never reads a stale file.

    :param cache_dir: folder of the cached file (default: :func:`default_cache_dir`)
    """
    tree = ET.parse(stock_asset_path("swimmer.xml"))
    tail = tree.getroot().find(".//body[@name='back']/geom")
    if tail is None:
        raise RuntimeError("The stock swimmer.xml has no geom in body 'back': Gymnasium's model changed")
    tail.set("density", f"{LIGHT_TAIL_DENSITY:g}")
    content = ET.tostring(tree.getroot())
    cache_dir = cache_dir or default_cache_dir()
    os.makedirs(cache_dir, exist_ok=True)
    path = os.path.join(cache_dir, f"swimmer_light_tail_{hashlib.sha256(content).hexdigest()[:16]}.xml")
    if not os.path.exists(path):
        # write then rename: parallel workers never read a half-written file
        partial = f"{path}.{os.getpid()}.tmp"
        with open(partial, "wb") as file:
            file.write(content)
        os.replace(partial, path)
    return path


class ClippedActions:
    """
    Mixin for a MuJoCo env: clips every action to the action space's bounds before the step (control
    cost included), as the authors' action wrapper did, so an agent may send raw planner actions.
    """

    action_space: gymnasium.spaces.Box

    def step(self, action: np.ndarray) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        clipped = np.clip(np.asarray(action, dtype=np.float64), self.action_space.low, self.action_space.high)
        return super().step(clipped)  # type: ignore[misc]


class PaperSwimmerEnv(ClippedActions, SwimmerEnv):  # type: ignore[misc]  # the mixin narrows the action space and step
    """
    Swimmer-v5 with x, y kept in the observation (obs 10: qpos then qvel), heavy (stock) or
    light tail. Actions are clipped to the bounds before the step (control cost included), so an
    agent may send unclipped planner actions, as in the authors' runs.

    :param light_tail: use the light-tail model (tail density 100 instead of 1000)
    :param kwargs: other keyword arguments of Gymnasium's ``SwimmerEnv``
    """

    def __init__(self, light_tail: bool = False, **kwargs: Any):
        if light_tail:
            kwargs.setdefault("xml_file", light_tail_swimmer_xml())
        kwargs.setdefault("exclude_current_positions_from_observation", False)
        self.light_tail = light_tail
        super().__init__(**kwargs)


class PaperHalfCheetahEnv(ClippedActions, HalfCheetahEnv):  # type: ignore[misc]  # the mixin narrows the action space and step
    """
    HalfCheetah-v5 with x kept in the observation (obs 18); actions are clipped to the bounds before
    the step (control cost included), as the authors' action wrapper did.

    :param kwargs: other keyword arguments of Gymnasium's ``HalfCheetahEnv``
    """

    def __init__(self, **kwargs: Any):
        kwargs.setdefault("exclude_current_positions_from_observation", False)
        super().__init__(**kwargs)


class PaperAntEnv(ClippedActions, AntEnv):  # type: ignore[misc]  # the mixin narrows the action space and step
    """
    Ant-v5 as in the paper: x, y kept, no contact forces in the observation (obs 29), reward =
    forward velocity (control, contact and healthy weights 0), no stock termination. Instead the
    episode terminates once the torso has been upside down (tilt of its z axis from the vertical
    above ``max_tilt`` radians) for more than ``upside_down_time`` seconds of simulated time; the
    clock restarts whenever the ant rights itself. Actions are clipped to the bounds before the step.

    :param max_tilt: tilt beyond which the torso counts as upside down (2.7 rad)
    :param upside_down_time: seconds upside down before termination (1 s)
    :param terminate_when_upside_down: False disables the termination (single-shot learning)
    :param kwargs: other keyword arguments of Gymnasium's ``AntEnv``
    """

    def __init__(
        self, max_tilt: float = 2.7, upside_down_time: float = 1.0, terminate_when_upside_down: bool = True, **kwargs: Any
    ):
        defaults = dict(
            exclude_current_positions_from_observation=False,
            include_cfrc_ext_in_observation=False,
            ctrl_cost_weight=0.0,
            contact_cost_weight=0.0,
            healthy_reward=0.0,
            terminate_when_unhealthy=False,
        )
        super().__init__(**{**defaults, **kwargs})
        self.max_tilt, self.upside_down_time = max_tilt, upside_down_time
        self.terminate_when_upside_down = terminate_when_upside_down
        self._upside_down_for = 0.0

    @property
    def torso_tilt(self) -> float:
        """Angle (rad) between the torso's z axis and the world's vertical."""
        w, x, y, z = self.data.qpos[3:7]
        cos_tilt = 1.0 - 2.0 * (x * x + y * y) / (w * w + x * x + y * y + z * z)
        return float(np.arccos(np.clip(cos_tilt, -1.0, 1.0)))

    def reset_model(self) -> np.ndarray:
        self._upside_down_for = 0.0
        return super().reset_model()

    def step(self, action: np.ndarray) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:  # type: ignore[override]
        observation, reward, terminated, truncated, info = super().step(action)
        self._upside_down_for = self._upside_down_for + self.dt if self.torso_tilt > self.max_tilt else 0.0
        info.update(torso_tilt=self.torso_tilt, upside_down_for=self._upside_down_for)
        upside_down = self._upside_down_for > self.upside_down_time + 1e-9
        return observation, reward, terminated or (self.terminate_when_upside_down and upside_down), truncated, info
