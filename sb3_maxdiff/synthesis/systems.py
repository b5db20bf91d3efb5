"""
Systems and potentials of the paper's trajectory-synthesis examples, batched in torch: each system is
``system(state (B, n), action (B, m)) -> next state`` with an explicit Euler step of ``dt``.
"""

from collections.abc import Callable, Sequence

import torch as th


class SingleIntegrator:
    """Planar velocity commands: state (x, y), action (vx, vy); ``x' = x + dt * v``."""

    state_dim, action_dim = 2, 2

    def __init__(self, dt: float = 0.1):
        self.dt = dt

    def __call__(self, state: th.Tensor, action: th.Tensor) -> th.Tensor:
        return state + self.dt * action


class DoubleIntegrator:
    """Planar acceleration commands: state (x, y, vx, vy), action (ax, ay)."""

    state_dim, action_dim = 4, 2

    def __init__(self, dt: float = 0.1):
        self.dt = dt

    def __call__(self, state: th.Tensor, action: th.Tensor) -> th.Tensor:
        position, velocity = state[..., :2], state[..., 2:]
        return th.cat([position + self.dt * velocity, velocity + self.dt * action], dim=-1)


class DifferentialDrive:
    """A differential-drive vehicle: state (x, y, heading), action (forward speed, turn rate)."""

    state_dim, action_dim = 3, 2

    def __init__(self, dt: float = 0.1):
        self.dt = dt

    def __call__(self, state: th.Tensor, action: th.Tensor) -> th.Tensor:
        x, y, heading = state.unbind(dim=-1)
        speed, turn = action.unbind(dim=-1)
        return th.stack(
            [x + self.dt * speed * th.cos(heading), y + self.dt * speed * th.sin(heading), heading + self.dt * turn], dim=-1
        )


# V(state) of a batch of states; it takes (and ignores) an action too, so that it serves as a running cost
Potential = Callable[..., th.Tensor]


def quadratic_potential(center: Sequence[float] = (0.0, 0.0), scale: float = 1.0) -> Potential:
    """``V(x, y) = scale * |(x, y) - center|^2``, of the first two state dims (a running cost as it is)."""
    center_tensor = th.tensor(center, dtype=th.float32)

    def potential(state: th.Tensor, action: th.Tensor | None = None) -> th.Tensor:
        return scale * ((state[..., :2] - center_tensor.to(state)) ** 2).sum(dim=-1)

    return potential


def bimodal_gaussian_potential(
    centers: Sequence[Sequence[float]] = ((-2.0, 0.0), (2.0, 0.0)), width: float = 1.0, depth: float = 1.0
) -> Potential:
    """
    ``V(x, y) = -depth * sum_i exp(-|(x, y) - c_i|^2 / (2 width^2))``: two wells, of the first two state dims (a
    running cost as it is).
    """
    centers_tensor = th.tensor(centers, dtype=th.float32)

    def potential(state: th.Tensor, action: th.Tensor | None = None) -> th.Tensor:
        offsets = state[..., None, :2] - centers_tensor.to(state)
        return -depth * th.exp(-(offsets**2).sum(dim=-1) / (2.0 * width**2)).sum(dim=-1)

    return potential


def reward_of(potential: Potential) -> Callable[[th.Tensor, th.Tensor], th.Tensor]:
    """The running reward ``-V(next state)`` of a potential, for :class:`MPPIController`."""
    return lambda state, action: -potential(state)
