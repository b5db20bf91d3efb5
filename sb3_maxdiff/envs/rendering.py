"""
Offscreen rendering and video on a machine with or without a display: which OpenGL backend MuJoCo renders
through, and an ffmpeg to encode videos with.

MuJoCo (through PyOpenGL) binds its OpenGL platform once per process, when OpenGL is first imported, which is the
first time an environment renders (``import sb3_maxdiff`` does not render). So the backend is chosen before that:
:func:`choose_offscreen_backend` tries each headless backend in a child process and sets ``MUJOCO_GL`` and
``PYOPENGL_PLATFORM`` for this one.
"""

import os
import shutil
import subprocess
import sys

# tried in this order where there is no display: EGL (GPU drivers or Mesa), then OSMesa (software)
HEADLESS_BACKENDS = ("egl", "osmesa")
# the environment variables that say where and how MuJoCo renders
BACKEND_VARIABLES = ("MUJOCO_GL", "PYOPENGL_PLATFORM", "DISPLAY", "WAYLAND_DISPLAY")

_PROBE = (
    "import mujoco\n"
    "model = mujoco.MjModel.from_xml_string('<mujoco><worldbody><geom size=\"1\"/></worldbody></mujoco>')\n"
    "renderer = mujoco.Renderer(model, 8, 8)\n"
    "renderer.update_scene(mujoco.MjData(model))\n"
    "renderer.render()\n"
)


def has_display() -> bool:
    """Whether an X or Wayland display is there for MuJoCo's default (GLFW) rendering."""
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def backend_renders(backend: str, timeout: float = 120.0) -> bool:
    """Whether MuJoCo renders a frame through ``backend`` ("egl", "osmesa", "glfw"), tried in a child process."""
    env = {**os.environ, "MUJOCO_GL": backend, "PYOPENGL_PLATFORM": backend if backend != "glfw" else ""}
    if backend == "glfw":
        env.pop("PYOPENGL_PLATFORM")
    try:
        done = subprocess.run([sys.executable, "-c", _PROBE], env=env, capture_output=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def choose_offscreen_backend() -> str | None:
    """
    The OpenGL backend MuJoCo renders through in this process: ``MUJOCO_GL`` where it is set; MuJoCo's default with a
    display; else the first of :data:`HEADLESS_BACKENDS` that renders a frame, which is then set in ``MUJOCO_GL`` and
    ``PYOPENGL_PLATFORM``. None where none renders (or OpenGL was already loaded without a backend that works).
    """
    if os.environ.get("MUJOCO_GL"):
        return os.environ["MUJOCO_GL"]
    if has_display():
        return "glfw"
    if "OpenGL" in sys.modules:  # too late to choose: PyOpenGL has bound its platform
        return None
    for backend in HEADLESS_BACKENDS:
        if backend_renders(backend):
            os.environ["MUJOCO_GL"] = backend
            os.environ["PYOPENGL_PLATFORM"] = backend
            return backend
    return None


def ffmpeg_executable() -> str | None:
    """An ffmpeg: the one on the PATH, else the binary that the ``imageio-ffmpeg`` package ships; None if neither."""
    found = shutil.which("ffmpeg")
    if found:
        return found
    try:
        import imageio_ffmpeg
    except ImportError:
        return None
    try:
        return imageio_ffmpeg.get_ffmpeg_exe()
    except RuntimeError:  # the package without its binary (a platform it has none for)
        return None
