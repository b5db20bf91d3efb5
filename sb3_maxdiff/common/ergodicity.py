"""
Ergodicity diagnostics of state trajectories: how much of the exploration space a trajectory covers,
how fast it spreads (mean-squared-displacement exponent) and how long it stays correlated with
itself (integrated autocorrelation time). MaxDiff RL is argued to work because it makes the agent's
trajectories decorrelate quickly and diffuse through the state space; these numbers measure that.
"""

import numpy as np


def _as_path(states: np.ndarray) -> np.ndarray:
    path = np.asarray(states, dtype=np.float64)
    if path.ndim == 1:
        path = path[:, None]
    if path.ndim != 2:
        raise ValueError(f"states must have shape (T,) or (T, d), got {path.shape}")
    return path


def visited_cells(states: np.ndarray, low: np.ndarray, high: np.ndarray, bins: int) -> set[tuple[int, ...]]:
    """
    Grid cells (``bins`` per dim over ``[low, high]``) that the states fall in; states outside the box
    are ignored.

    :param states: shape (T, d)
    :param low: lower corner of the grid, shape (d,)
    :param high: upper corner of the grid, shape (d,)
    :param bins: cells per dimension (>= 1)
    """
    path = _as_path(states)
    low, high = np.asarray(low, dtype=np.float64), np.asarray(high, dtype=np.float64)
    if bins < 1 or low.shape != (path.shape[1],) or high.shape != low.shape or np.any(high <= low):
        raise ValueError(f"need bins >= 1 and low < high of shape ({path.shape[1]},), got {bins}, {low}, {high}")
    inside = np.all((path >= low) & (path <= high), axis=1)
    index = np.floor((path[inside] - low) / (high - low) * bins).astype(int).clip(0, bins - 1)
    return {tuple(int(value) for value in row) for row in index}


def coverage(states: np.ndarray, low: np.ndarray, high: np.ndarray, bins: int = 20) -> float:
    """Fraction of the ``bins ** d`` grid cells over ``[low, high]`` that the states visit."""
    path = _as_path(states)
    return len(visited_cells(path, low, high, bins)) / float(bins ** path.shape[1])


def mean_squared_displacement(states: np.ndarray, lags: np.ndarray) -> np.ndarray:
    """``MSD(lag) = mean_t |x_{t+lag} - x_t|^2`` for each lag (time-averaged over the trajectory)."""
    path = _as_path(states)
    return np.array([np.mean(np.sum((path[lag:] - path[:-lag]) ** 2, axis=1)) for lag in lags])


def msd_exponent(states: np.ndarray, max_lag: int | None = None, n_lags: int = 12) -> float:
    """
    Exponent ``gamma`` of ``MSD(lag) ~ lag ** gamma``, the least-squares slope of log MSD against log lag
    over log-spaced lags from 1 to ``max_lag`` (default: a quarter of the trajectory). Diffusion (a
    random walk) gives 1, ballistic motion (a straight line) 2, a trapped or still trajectory about 0.

    :param states: shape (T, d) with T >= 8
    :param max_lag: largest lag used
    :param n_lags: number of log-spaced lags
    :return: the exponent, or NaN when the trajectory does not move at all
    """
    path = _as_path(states)
    max_lag = max(path.shape[0] // 4, 2) if max_lag is None else int(max_lag)
    if path.shape[0] < 8 or not 2 <= max_lag < path.shape[0]:
        raise ValueError(f"need at least 8 states and 2 <= max_lag < T, got T={path.shape[0]}, max_lag={max_lag}")
    lags = np.unique(np.geomspace(1, max_lag, n_lags).round().astype(int))
    msd = mean_squared_displacement(path, lags)
    if np.any(msd <= 0):
        return float("nan")
    return float(np.polyfit(np.log(lags), np.log(msd), 1)[0])


def autocorrelation_time(states: np.ndarray) -> float:
    """
    Integrated autocorrelation time ``1 + 2 * sum_k rho(k)`` of the trajectory, with ``rho`` the
    autocorrelation of each dim averaged over the dims (weighted by their variances), summed up to the
    first lag where it is no longer positive. 1 for uncorrelated states; ``(1 + phi) / (1 - phi)`` for
    an AR(1) process ``x_t = phi x_{t-1} + noise``; of the order of T for a trajectory that drifts.

    :param states: shape (T, d) with T >= 2
    :return: the time in steps, NaN when the trajectory does not move at all
    """
    path = _as_path(states)
    n_steps = path.shape[0]
    if n_steps < 2:
        raise ValueError(f"need at least 2 states, got {n_steps}")
    centred = path - path.mean(axis=0)
    variance = np.sum(centred**2)
    if variance <= 0:
        return float("nan")
    # autocovariance of every lag at once through the FFT (zero padded: no wrap-around)
    size = 1 << int(np.ceil(np.log2(2 * n_steps)))
    spectrum = np.fft.rfft(centred, n=size, axis=0)
    autocovariance = np.fft.irfft(spectrum * np.conj(spectrum), n=size, axis=0)[:n_steps].sum(axis=1)
    rho = autocovariance / variance
    non_positive = np.nonzero(rho[1:] <= 0)[0]
    last = non_positive[0] + 1 if non_positive.size else n_steps
    return float(1.0 + 2.0 * rho[1:last].sum())
