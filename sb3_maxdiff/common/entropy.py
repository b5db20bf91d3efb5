"""
The MaxDiff path-entropy term (Berrueta, Pinosky and Murphey, Supplementary Note
"Simplified synthesis via local entropy maximization").

MaxDiff RL maximises ``E[sum_t r(x_t, u_t) + alpha / 2 * log det C[x_t]]``. Given a path of
states ``X`` (T x d), ``C`` is estimated as the covariance of the (weighted) states over time,
and the entropy of the path is ``S = 1/2 log det C``. The same function serves the MPPI
planner (predicted paths, one per sample) and the model-free reward wrapper (the agent's own
trailing window of states).
"""

from collections.abc import Sequence
from dataclasses import dataclass

import torch as th
from torch import nn

from sb3_maxdiff.common.utils import device_constant, is_integer

ENTROPY_METHODS = ("logdet", "top_eigs", "log_trace")
# how a covariance is kept invertible before its log-determinant: "diagonal" adds 1e-8 * I; "random" adds a draw of
# N(0, (1e-8)^2) to every entry, new for every path and window, as the authors' implementation does (where the
# covariance has eigenvalues below 1e-8, the entropy then follows the draw rather than the path)
ENTROPY_JITTERS = ("diagonal", "random")
JITTER_SCALE = 1e-8


def time_covariance(paths: th.Tensor) -> th.Tensor:
    """
    Unbiased covariance of each path over its time axis.

    :param paths: states of shape (..., T, d) with T >= 2
    :return: covariances of shape (..., d, d), normalised by T - 1
    """
    if paths.dim() < 2 or paths.shape[-2] < 2:
        raise ValueError(f"paths must have shape (..., T, d) with T >= 2, got {tuple(paths.shape)}")
    centred = paths - paths.mean(dim=-2, keepdim=True)
    return centred.transpose(-1, -2) @ centred / (paths.shape[-2] - 1)


def entropy_from_covariance(
    covariance: th.Tensor, method: str = "logdet", top_m: int | None = None, jitter: float = 1e-8
) -> th.Tensor:
    """
    Path entropy of Gaussian statistics with covariance ``C`` (paper Eq. for S[x*]).

    - ``"logdet"``: ``0.5 * log|det C|`` (sign-safe log-determinant).
    - ``"top_eigs"``: ``0.5 * sum of log of the top_m largest eigenvalues of C`` (restricts
      exploration to an M-dimensional subspace; equals ``"logdet"`` when M = d).
    - ``"log_trace"``: ``0.5 * log tr C`` (cheap; exact only in spirit when C is diagonal).

    :param covariance: covariances of shape (..., d, d)
    :param method: one of ``ENTROPY_METHODS``
    :param top_m: number of leading eigenvalues for ``"top_eigs"``
    :param jitter: diagonal term added to ``C`` for numerical safety
    :return: entropies of shape (...)
    """
    dim = covariance.shape[-1]
    if covariance.dim() < 2 or covariance.shape[-2] != dim:
        raise ValueError(f"covariance must have shape (..., d, d), got {tuple(covariance.shape)}")
    covariance = covariance + jitter * th.eye(dim, dtype=covariance.dtype, device=covariance.device)
    if method == "logdet":
        return 0.5 * th.linalg.slogdet(covariance).logabsdet
    if method == "top_eigs":
        if top_m is None or not 1 <= top_m <= dim:
            raise ValueError(f"top_m must be an int in [1, {dim}] for method='top_eigs', got {top_m}")
        eigenvalues = th.linalg.eigvalsh(covariance)[..., dim - top_m :]  # ascending order
        return 0.5 * eigenvalues.clamp_min(jitter).log().sum(dim=-1)
    if method == "log_trace":
        return 0.5 * th.diagonal(covariance, dim1=-2, dim2=-1).sum(dim=-1).clamp_min(jitter).log()
    raise ValueError(f"method must be one of {ENTROPY_METHODS}, got {method!r}")


def default_window_size(horizon: int, n_dims: int) -> int:
    """Window size used by the authors: ``max(H // 4, 2 * d)``, at most the horizon."""
    return min(max(horizon // 4, 2 * n_dims), horizon)


def window_covariances(
    paths: th.Tensor, weights: th.Tensor | None = None, window: int | None = None, stride: int | None = None
) -> th.Tensor:
    """
    Covariances ``W cov(X) W`` of the windows of each path ``X``, the statistics the path entropy is taken of.

    :param paths: states of shape (..., T, d), already restricted to the exploration dims
    :param weights: per-dimension weights ``diag(W)`` of shape (d,); None means ones
    :param window: window length (2 <= window <= T); None: one window, the whole path
    :param stride: step between windows; None means ``max(window // 3, 1)``
    :return: covariances of shape (..., n_windows, d, d)
    """
    if weights is not None:
        if weights.shape != paths.shape[-1:]:
            raise ValueError(f"weights must have shape ({paths.shape[-1]},), got {tuple(weights.shape)}")
        # W cov(X) W == cov(X W) for diagonal W
        paths = paths * weights
    if window is None:
        return time_covariance(paths.unsqueeze(-3))
    if not 2 <= window <= paths.shape[-2]:
        raise ValueError(f"window must be in [2, {paths.shape[-2]}] (the path length), got {window}")
    stride = max(window // 3, 1) if stride is None else stride
    # (..., T, d) -> (..., n_windows, d, window) -> (..., n_windows, window, d)
    return time_covariance(paths.unfold(-2, window, stride).transpose(-1, -2))


def path_entropy(
    paths: th.Tensor,
    weights: th.Tensor | None = None,
    window: int | None = None,
    stride: int | None = None,
    method: str = "logdet",
    top_m: int | None = None,
    jitter: float = 1e-8,
) -> th.Tensor:
    """
    Entropy ``S = 0.5 * log det(W cov(X) W)`` of each path ``X``, optionally averaged over windows.

    :param paths: states of shape (..., T, d), already restricted to the exploration dims
    :param weights: per-dimension weights ``diag(W)`` of shape (d,); None means ones
    :param window: window length (2 <= window <= T); None uses the whole path
    :param stride: step between windows; None means ``max(window // 3, 1)``
    :param method: see :func:`entropy_from_covariance`
    :param top_m: see :func:`entropy_from_covariance`
    :param jitter: see :func:`entropy_from_covariance`
    :return: entropies of shape (...)
    """
    covariances = window_covariances(paths, weights, window, stride)
    return entropy_from_covariance(covariances, method, top_m, jitter).mean(dim=-1)


@dataclass(frozen=True)
class PathEntropySettings:
    """
    How the path entropy is measured for one environment: which state dims to explore, their
    weights and the windowing. Called on full-state paths of shape (..., T, n), it gives their
    entropies with these settings (:func:`path_entropy`); :meth:`covariances` gives the statistics they are taken of.

    :param dims: indices of the exploration dims in the observation (None: all)
    :param weights: weight per exploration dim (None: ones)
    :param window: window length, or None for one window over the whole path
    :param method: one of ``ENTROPY_METHODS``
    :param top_m: number of leading eigenvalues for ``method="top_eigs"``
    :param history: how many states the agent visited (the current one included) the planner puts ahead of each
        planned path before taking its entropy (:class:`VisitedStates`); 0: the planned path alone, as in the paper
    :param jitter: one of ``ENTROPY_JITTERS`` ("random" with ``method="logdet"`` only)
    """

    dims: tuple[int, ...] | None = None
    weights: tuple[float, ...] | None = None
    window: int | None = None
    method: str = "logdet"
    top_m: int | None = None
    history: int = 0
    jitter: str = "diagonal"

    def __call__(self, paths: th.Tensor, generator: th.Generator | None = None) -> th.Tensor:
        """
        The entropies of full-state paths, (..., T, n) -> (...).

        :param generator: where a random jitter is drawn from (None: torch's global stream); unused otherwise
        """
        covariances = self.covariances(paths)
        if self.jitter == "random":
            noise = th.randn(covariances.shape, dtype=covariances.dtype, device=covariances.device, generator=generator)
            return entropy_from_covariance(covariances + JITTER_SCALE * noise, "logdet", jitter=0.0).mean(dim=-1)
        return entropy_from_covariance(covariances, self.method, self.top_m, JITTER_SCALE).mean(dim=-1)

    def covariances(self, paths: th.Tensor) -> th.Tensor:
        """The weighted covariances of the windows of full-state paths, (..., T, n) -> (..., n_windows, d, d)."""
        if self.dims is not None:
            paths = paths[..., device_constant(self.dims, th.long, paths.device)]
        weights = None if self.weights is None else device_constant(self.weights, paths.dtype, paths.device)
        return window_covariances(paths, weights, self.window)


class EntropyBonus(nn.Module):
    """
    The MaxDiff term of the planner's sample scores, ``alpha * S`` for each predicted path, with its weight:
    ``alpha`` is a buffer (it moves with ``.to`` and is saved in the state dict), set in place as a schedule
    changes it, so that a captured CUDA graph reads the current value. For independent agents batched in one
    model it holds one weight per agent (shape (N,)), so that each agent may have its own.

    Where an agent's alpha is 0 its scores ignore the entropy altogether (a non-finite entropy included): that
    agent plans as NN-MPPI's planner does.

    :param entropy: how the path entropy ``S`` is measured
    :param alpha: its initial weight
    :param n_agents: None: one weight (shape ()); an int N: one weight per agent (shape (N,))
    """

    def __init__(self, entropy: PathEntropySettings, alpha: float = 0.0, n_agents: int | None = None):
        super().__init__()
        self.entropy = entropy
        self.alpha: th.Tensor
        self.register_buffer("alpha", th.full(() if n_agents is None else (n_agents,), float(alpha)))

    def weigh(self, entropy: th.Tensor) -> th.Tensor:
        """``alpha * S`` from the entropies ``S`` of shape (E, K) (E = N agents for per-agent weights), 0 where alpha is 0."""
        alpha = self.alpha if self.alpha.dim() == 0 else self.alpha[:, None]
        return th.where(alpha > 0, alpha * entropy, th.zeros((), dtype=entropy.dtype, device=entropy.device))

    def forward(
        self, paths: th.Tensor, history: th.Tensor | None = None, generator: th.Generator | None = None
    ) -> tuple[th.Tensor, th.Tensor]:
        """
        The entropies ``S`` of paths of shape (E, K, T, n) and the bonus ``alpha * S`` they earn, both (E, K).

        :param history: states already visited, shape (E, W, n), oldest first: each path's entropy is then that of
            those states followed by the path (the K paths of an environment share its history); None: the paths alone
        :param generator: where a random jitter of the covariances is drawn from (see :class:`PathEntropySettings`)
        """
        if history is not None and history.shape[-2] > 0:
            n_envs, n_samples = paths.shape[:2]
            past = history[:, None].expand(n_envs, n_samples, *history.shape[-2:]).to(paths.dtype)
            paths = th.cat([past, paths], dim=-2)
        entropy = self.entropy(paths, generator)
        return entropy, self.weigh(entropy)


def _window_size(window: bool | int | None, horizon: int, n_dims: int) -> int | None:
    """The window length a ``window`` option asks for (None: one window over the whole path)."""
    if window is True:
        return default_window_size(horizon, n_dims)
    if window is False or window is None:
        return None
    if isinstance(window, int) and 2 <= window <= horizon:
        return window
    raise ValueError(f"window must be False, True or an int in [2, horizon={horizon}], got {window!r}")


def make_path_entropy(
    obs_dim: int,
    horizon: int,
    dims: Sequence[int] | None = None,
    weights: Sequence[float] | None = None,
    window: bool | int = False,
    method: str = "logdet",
    top_m: int | None = None,
    history: int = 0,
    jitter: str = "diagonal",
) -> PathEntropySettings:
    """
    Validate the user's options once and build the :class:`PathEntropySettings`.

    :param obs_dim: size of the flat observation
    :param horizon: length of the paths the term will see (planning horizon or trailing window)
    :param dims: exploration dims (``explr_dims``), None for all
    :param weights: weights of the exploration dims (``explr_weights``), None for ones
    :param window: False: whole path; True: the authors' window ``max(H // 4, 2 * d)``; int: that length
    :param method: one of ``ENTROPY_METHODS``
    :param top_m: leading eigenvalues kept by ``"top_eigs"`` (default: all dims)
    :param history: visited states put ahead of each planned path (0: none)
    :param jitter: one of ``ENTROPY_JITTERS``: how the covariance is kept invertible ("random" with "logdet" only)
    """
    if horizon < 2:
        raise ValueError(f"horizon must be >= 2 for the path entropy (a covariance over time needs 2 states), got {horizon}")
    if dims is not None:
        dims = tuple(int(d) for d in dims)
        if len(dims) == 0 or any(not 0 <= d < obs_dim for d in dims):
            raise ValueError(f"explr_dims must be a non-empty list of indices in [0, {obs_dim - 1}], got {list(dims)}")
    n_dims = obs_dim if dims is None else len(dims)
    if weights is not None:
        weights = tuple(float(w) for w in weights)
        if len(weights) != n_dims:
            raise ValueError(f"explr_weights must have one weight per exploration dim ({n_dims}), got {len(weights)}")
    if method not in ENTROPY_METHODS:
        raise ValueError(f"entropy_method must be one of {ENTROPY_METHODS}, got {method!r}")
    if method == "top_eigs":
        top_m = n_dims if top_m is None else int(top_m)
        if not 1 <= top_m <= n_dims:
            raise ValueError(f"entropy_top_m must be in [1, {n_dims}] (the number of exploration dims), got {top_m}")
    window_size = _window_size(window, horizon, n_dims)
    if not (is_integer(history) and history >= 0):
        raise ValueError(f"history must be an integer >= 0 (visited states put ahead of each planned path), got {history!r}")
    if jitter not in ENTROPY_JITTERS:
        raise ValueError(f"entropy_jitter must be one of {ENTROPY_JITTERS}, got {jitter!r}")
    if jitter == "random" and method != "logdet":
        raise ValueError(f"entropy_jitter='random' needs entropy_method='logdet' (a log-determinant), got {method!r}")
    return PathEntropySettings(
        dims=dims, weights=weights, window=window_size, method=method, top_m=top_m, history=int(history), jitter=jitter
    )
