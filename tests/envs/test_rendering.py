"""Choosing MuJoCo's offscreen backend and an ffmpeg (sb3_maxdiff.envs.rendering)."""

import os

from sb3_maxdiff.envs import rendering


def test_mujoco_gl_and_a_display_are_taken_as_they_are(monkeypatch):
    monkeypatch.setattr(rendering, "backend_renders", lambda backend: pytest_fail())
    monkeypatch.setattr(os, "environ", dict(os.environ))
    monkeypatch.setenv("MUJOCO_GL", "osmesa")
    assert rendering.choose_offscreen_backend() == "osmesa"
    monkeypatch.delenv("MUJOCO_GL")
    monkeypatch.setenv("DISPLAY", ":0")
    assert rendering.choose_offscreen_backend() == "glfw"


def pytest_fail():
    raise AssertionError("no backend should be tried")


def test_headless_tries_egl_then_osmesa_and_sets_the_one_that_renders(monkeypatch):
    import sys

    # a copy of the environment, put back afterwards (what the function sets must not reach later tests)
    environment = {key: value for key, value in os.environ.items() if key not in rendering.BACKEND_VARIABLES}
    monkeypatch.setattr(os, "environ", environment)
    monkeypatch.delitem(sys.modules, "OpenGL", raising=False)
    tried = []
    monkeypatch.setattr(rendering, "backend_renders", lambda backend: tried.append(backend) or backend == "osmesa")
    assert rendering.choose_offscreen_backend() == "osmesa"
    assert tried == ["egl", "osmesa"] and os.environ["MUJOCO_GL"] == os.environ["PYOPENGL_PLATFORM"] == "osmesa"
    del os.environ["MUJOCO_GL"], os.environ["PYOPENGL_PLATFORM"]
    monkeypatch.setattr(rendering, "backend_renders", lambda backend: False)
    assert rendering.choose_offscreen_backend() is None and "MUJOCO_GL" not in os.environ


def test_an_unknown_backend_does_not_render():
    assert not rendering.backend_renders("no-such-backend")


def test_ffmpeg_is_found_on_the_path_first(tmp_path, monkeypatch):
    fake = tmp_path / "ffmpeg"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    assert rendering.ffmpeg_executable() == str(fake)
    monkeypatch.setenv("PATH", "")
    found = rendering.ffmpeg_executable()  # imageio-ffmpeg's binary (installed with the tests), or None without it
    assert found is None or os.path.basename(found).startswith("ffmpeg")
