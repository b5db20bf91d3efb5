"""2D point mass (double integrator) with the controllability parameter beta."""

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces


class PointMassEnv(gym.Env[np.ndarray, np.ndarray]):
    """
    State ``[x, y, vx, vy]`` with ``dx/dt = beta * vx``, ``dy/dt = vy``, ``dv/dt = u``,
    integrated with RK4 at ``dt = 0.1``. Reward ``-(x^2 + y^2)`` of the next
    state. Starts at ``(-1, -1, 0, 0) + N(0, 0.01^2)``; terminates when ``|x|`` or ``|y|`` exceeds 5.
    Small beta makes x hard to control, which is what the MaxDiff point-mass experiment varies.

    The action space is ``[-1, 1]^2`` either way. With ``bounded_actions=True`` the env clips the
    action to it; with ``bounded_actions=False`` it applies the action as given, as the authors'
    point mass did (their planner's actions reach about +/-3), so the action space only sets the scale.

    :param beta: controllability of the x direction (1, 0.1, 0.01 and 0.001 in the paper)
    :param dt: integration step
    :param bound: termination boundary on ``|x|`` and ``|y|``
    :param bounded_actions: clip actions to ``[-1, 1]^2`` (True) or apply them unclipped (False)
    :param render_mode: None or "rgb_array" (a 128 x 128 top view: the origin and the mass)
    """

    metadata: dict[str, Any] = {"render_modes": ["rgb_array"], "render_fps": 10}  # noqa: RUF012

    action_space: spaces.Box

    def __init__(
        self,
        beta: float = 1.0,
        dt: float = 0.1,
        bound: float = 5.0,
        bounded_actions: bool = True,
        render_mode: str | None = None,
    ):
        if not beta > 0:
            raise ValueError(f"beta must be > 0, got {beta}")
        if render_mode not in (None, "rgb_array"):
            raise ValueError(f"render_mode must be None or 'rgb_array', got {render_mode!r}")
        if not isinstance(bounded_actions, (bool, np.bool_)):
            raise ValueError(f"bounded_actions must be True or False, got {bounded_actions!r}")
        self.render_mode = render_mode
        self.bounded_actions = bool(bounded_actions)
        self.beta, self.dt, self.bound = float(beta), float(dt), float(bound)
        self.observation_space = spaces.Box(-np.inf, np.inf, shape=(4,), dtype=np.float32)
        self.action_space = spaces.Box(-1.0, 1.0, shape=(2,), dtype=np.float32)
        self._state = np.zeros(4)

    def _derivative(self, state: np.ndarray, action: np.ndarray) -> np.ndarray:
        return np.array([self.beta * state[2], state[3], action[0], action[1]])

    def _rk4(self, state: np.ndarray, action: np.ndarray) -> np.ndarray:
        k1 = self._derivative(state, action)
        k2 = self._derivative(state + 0.5 * self.dt * k1, action)
        k3 = self._derivative(state + 0.5 * self.dt * k2, action)
        k4 = self._derivative(state + self.dt * k3, action)
        return state + self.dt / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        self._state = np.array([-1.0, -1.0, 0.0, 0.0]) + self.np_random.normal(0.0, 0.01, size=4)
        return self._state.astype(np.float32), {}

    def step(self, action: np.ndarray) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        action = np.asarray(action, dtype=np.float64)
        if self.bounded_actions:
            action = np.clip(action, self.action_space.low, self.action_space.high)
        self._state = self._rk4(self._state, action)
        x, y = self._state[0], self._state[1]
        reward = -float(x**2 + y**2)
        terminated = bool(abs(x) > self.bound or abs(y) > self.bound)
        return self._state.astype(np.float32), reward, terminated, False, {}

    def render(self) -> np.ndarray | None:
        if self.render_mode != "rgb_array":
            return None
        size = 128
        frame = np.full((size, size, 3), 255, dtype=np.uint8)
        frame[size // 2, :] = frame[:, size // 2] = 200  # axes through the origin (the goal)

        def to_pixel(value: float) -> int:
            return int(np.clip((value / self.bound + 1.0) / 2.0 * (size - 1), 0, size - 1))

        col, row = to_pixel(self._state[0]), size - 1 - to_pixel(self._state[1])
        frame[max(row - 2, 0) : row + 3, max(col - 2, 0) : col + 3] = (90, 40, 160)
        return frame
