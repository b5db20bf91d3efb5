"""
When does the path entropy's jitter decide what the planner does?

The covariance ``C`` of a planned path is close to singular while the model predicts almost no motion (a fresh
model): some of its eigenvalues lie below the 1e-8 added to it for numerical safety, and ``0.5 log |det C|`` then
depends on that jitter. This library adds ``1e-8 * I``; the authors' code adds a draw of N(0, 1e-8) to every entry
of ``C``, a new one for every sample and window. This script plans once from a start state with a MaxDiff agent's
own entropy settings and reports: the median of each eigenvalue of the windowed covariances over the samples, the
spread over the samples of the predicted return and of ``alpha * S`` under either jitter (and under none), and the
correlation over the samples of the two entropies (near 1: the jitter does not matter; well below 1: the authors'
planner would pick its sample partly at random where ours does not).

    python tools/entropy_jitter.py --train-steps 0 130 200 300     # a fresh single-shot Swimmer agent as it learns
    python tools/entropy_jitter.py --models docs/reproduction/models/single_shot_light_30k_maxdiff_seed1.zip
"""

import argparse
import json
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch as th
from stable_baselines3.common.preprocessing import get_action_dim

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sb3_maxdiff import MaxDiffMPPI  # noqa: E402
from sb3_maxdiff.common.entropy import entropy_from_covariance  # noqa: E402
from sb3_maxdiff.common.mppi import rollout, smoothing_matrix  # noqa: E402

JITTER = 1e-8
JITTERS = ("diagonal", "entries", "none")


def entropies(covariances: th.Tensor, jitter: str, generator: th.Generator | None = None) -> th.Tensor:
    """
    ``0.5 log |det(C + J)|`` averaged over the windows, (K, n_windows, d, d) -> (K,), in float64.

    :param jitter: ``"diagonal"``: J = 1e-8 I (this library); ``"entries"``: every entry of J drawn from N(0, 1e-8)
        (the authors' code); ``"none"``: J = 0
    """
    if jitter not in JITTERS:
        raise ValueError(f"jitter must be one of {JITTERS}, got {jitter!r}")
    covariances = covariances.double()
    if jitter == "entries":
        covariances = covariances + JITTER * th.randn(covariances.shape, dtype=covariances.dtype, generator=generator)
    # the library's own log-determinant, with its diagonal jitter where that is the one asked for
    return entropy_from_covariance(covariances, jitter=JITTER if jitter == "diagonal" else 0.0).mean(dim=-1)


def probe(agent: MaxDiffMPPI, obs: np.ndarray, seed: int = 0) -> dict[str, float | list[float]]:
    """One plan's worth of samples from ``obs`` around a zero nominal, the figures of the module's docstring."""
    settings, bonus = agent.policy.planner_settings, agent.policy.entropy_bonus
    if bonus is None:
        raise ValueError("the agent has no path entropy (an NN-MPPI agent): nothing to probe")
    generator = th.Generator().manual_seed(seed)
    shape = (1, settings.n_samples, settings.horizon, get_action_dim(agent.action_space))
    noise = smoothing_matrix(settings.horizon) @ (th.randn(shape, generator=generator) * settings.noise_std)
    start = th.as_tensor(obs, dtype=th.float32).reshape(1, 1, -1).expand(1, settings.n_samples, -1)
    model = agent.policy.model.cpu()
    with th.no_grad():
        returns, states = rollout(model, start, noise, settings.state_bound)
    covariances = bonus.entropy.covariances(states[0])
    alpha = float(bonus.alpha.reshape(-1)[0])
    by_jitter = {jitter: entropies(covariances, jitter, generator) for jitter in JITTERS}
    eigenvalues = th.linalg.eigvalsh(covariances.double()).flatten(0, 1)
    return {
        "eigenvalue_medians": eigenvalues.median(dim=0).values.tolist(),
        "return_std": float(returns.double().std()),
        **{f"alpha_entropy_std_{jitter}": alpha * float(values.std()) for jitter, values in by_jitter.items()},
        "correlation_diagonal_entries": float(np.corrcoef(by_jitter["diagonal"], by_jitter["entries"])[0, 1]),
    }


def _maxdiff_cell(preset: str, setting: str):
    from sb3_maxdiff.experiments.define.presets import get_preset

    cells = [cell for cell in get_preset(preset).cells if cell.setting == setting and cell.method == "maxdiff"]
    if not cells:
        raise ValueError(f"preset {preset!r} has no MaxDiff cell with setting {setting!r}")
    return cells[0]


def _print(label: str, figures: dict) -> None:
    medians = ", ".join(f"{value:.1e}" for value in figures["eigenvalue_medians"])
    print(
        f"{label}: eigenvalues (medians) {medians}; std over samples: return {figures['return_std']:.3g}, "
        f"alpha*S with 1e-8 I {figures['alpha_entropy_std_diagonal']:.3g}, with N(0, 1e-8) entries "
        f"{figures['alpha_entropy_std_entries']:.3g}, with none {figures['alpha_entropy_std_none']:.3g}; "
        f"correlation of the two jitters' entropies {figures['correlation_diagonal_entries']:.3f}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="*", default=[], help="saved MaxDiff agents to probe")
    parser.add_argument("--train-steps", type=int, nargs="*", default=[], help="probe a new agent after these steps")
    parser.add_argument("--preset", default="single-shot", help="the new agent's preset (its MaxDiff cell)")
    parser.add_argument("--setting", default="swimmer", help="the new agent's setting in the preset")
    parser.add_argument("--seed", type=int, default=3, help="the new agent's seed")
    parser.add_argument("--env", help="the environment of the start state (default: the preset cell's)")
    parser.add_argument("--start-seed", type=int, default=0, help="reset seed of the start state planned from")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (more slow down a busy machine)")
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args(argv)
    th.set_num_threads(args.threads)
    if any(steps < 0 for steps in args.train_steps) or args.train_steps != sorted(args.train_steps):
        parser.error(f"--train-steps must be increasing step counts >= 0, got {args.train_steps}")
    from sb3_maxdiff.experiments.define.presets import cell_kwargs, get_budget

    cell = _maxdiff_cell(args.preset, args.setting)
    obs, _ = gym.make(args.env or cell.env_id).reset(seed=args.start_seed)
    results = {}
    for path in args.models:
        results[path] = probe(MaxDiffMPPI.load(path, device="cpu"), obs, args.seed)
        _print(path, results[path])
    if args.train_steps:
        agent = MaxDiffMPPI(cell.env_id, seed=args.seed, **cell_kwargs(cell, get_budget("reduced")))
        done = 0
        for steps in args.train_steps:
            if steps > done:
                agent.learn(steps - done, reset_num_timesteps=False)
            done = steps
            results[f"after {steps} steps"] = probe(agent, obs, args.seed)
            _print(f"{args.setting}, seed {args.seed}, after {steps} steps", results[f"after {steps} steps"])
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
