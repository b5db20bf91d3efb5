"""
The alpha sweep on the heavy-tail Swimmer, from the committed per-episode CSVs: final evaluation and training return
at 50k steps of every seed against alpha (1, 10 and 1000: 3 seeds; 100 and NN-MPPI: 5 seeds; ``alpha="auto"``: 5
seeds, each at the alpha its kept model settled on), beside the paper's sweep (10 seeds, 1M steps)::

    python examples/alpha_sweep_figure.py --out docs

Nothing is trained: it reads ``docs/reproduction`` and takes a few seconds.
"""

import argparse
import io
import os
import zipfile

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import torch as th

from sb3_maxdiff.experiments.analyse.tables import per_seed_values
from sb3_maxdiff.experiments.define.presets import SWIMMER_ALPHA_PUBLISHED

HERE = os.path.dirname(os.path.abspath(__file__))
REPRODUCTION = os.path.join(HERE, "..", "docs", "reproduction")
FILES = ("swimmer_alpha_50k.csv", "swimmer_heavy_50k.csv", "alpha_auto_heavy_50k.csv")
PUBLISHED_NNMPPI = 33.6
QUANTITIES = {"final evaluation (mean per seed)": "final evaluation", "last episode at 50,000": "training return at 50k"}


def kept_auto_alphas() -> dict[int, float]:
    """seed -> the alpha the automatic rule settled on, as each kept final model holds it."""
    alphas = {}
    for seed in range(5):
        with zipfile.ZipFile(os.path.join(REPRODUCTION, "models", f"alpha_auto_heavy_50k_seed{seed}.zip")) as archive:
            state = th.load(io.BytesIO(archive.read("policy.pth")), map_location="cpu")
        alphas[seed] = float(state["entropy_bonus.alpha"])
    return alphas


def sweep_points() -> dict[str, dict[str, list[tuple[float, float]]]]:
    """quantity -> series (a fixed alpha, NN-MPPI, auto) -> (alpha, value) per seed; NN-MPPI's alpha is 0."""
    values = per_seed_values([os.path.join(REPRODUCTION, name) for name in FILES], [50_000], by_setting=True)
    auto = kept_auto_alphas()
    points: dict[str, dict[str, list[tuple[float, float]]]] = {}
    for quantity in QUANTITIES:
        series: dict[str, list[tuple[float, float]]] = {"fixed alpha": [], "NN-MPPI": [], "auto": []}
        for group, per_seed in values[quantity].items():
            method, _, setting = group.partition("@")
            if method == "maxdiff":
                alpha = 100.0 if setting == "heavy" else float(setting.removeprefix("alpha="))
                series["fixed alpha"] += [(alpha, value) for value in per_seed.values()]
            elif method == "nnmppi":
                series["NN-MPPI"] += [(0.0, value) for value in per_seed.values()]
            elif method == "maxdiff-auto":
                series["auto"] += [(auto[seed], value) for seed, value in per_seed.items()]
        points[quantity] = series
    return points


def draw(points: dict[str, dict[str, list[tuple[float, float]]]], path: str) -> None:
    figure, axes = plt.subplots(1, 2, figsize=(12, 4.4), layout="constrained")
    for axis, (quantity, title) in zip(axes, QUANTITIES.items()):
        series = points[quantity]
        fixed = np.array(series["fixed alpha"])
        axis.scatter(fixed[:, 0], fixed[:, 1], color="tab:blue", alpha=0.6, label="MaxDiff, fixed alpha (each seed)")
        means = {alpha: fixed[fixed[:, 0] == alpha, 1].mean() for alpha in np.unique(fixed[:, 0])}
        axis.plot(list(means), list(means.values()), color="tab:blue", marker="_", markersize=18, label="its mean")
        auto = np.array(series["auto"])
        axis.scatter(auto[:, 0], auto[:, 1], color="tab:green", marker="D", label='alpha="auto" (at its settled alpha)')
        nnmppi = np.array(series["NN-MPPI"])[:, 1]
        axis.axhspan(nnmppi.mean() - nnmppi.std(ddof=1), nnmppi.mean() + nnmppi.std(ddof=1), color="tab:orange", alpha=0.2)
        axis.axhline(nnmppi.mean(), color="tab:orange", label="NN-MPPI, mean +/- std over seeds")
        if quantity.startswith("final"):
            alphas, published = zip(*SWIMMER_ALPHA_PUBLISHED.items())
            axis.plot(alphas, published, color="black", linestyle="--", marker="x", label="paper, 1M steps (mean)")
            axis.axhline(PUBLISHED_NNMPPI, color="black", linestyle=":", label="paper's NN-MPPI, 1M steps")
        axis.set(xscale="log", xlabel="alpha", ylabel=title, title=f"heavy-tail Swimmer, 50k steps: {title}")
        axis.legend(fontsize=7)
    figure.savefig(path, dpi=110)
    plt.close(figure)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="demo_output", help="folder of alpha_sweep_heavy_swimmer.png")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    points = sweep_points()
    for quantity, title in QUANTITIES.items():
        fixed = np.array(points[quantity]["fixed alpha"])
        means = ", ".join(f"{alpha:g}: {fixed[fixed[:, 0] == alpha, 1].mean():.1f}" for alpha in np.unique(fixed[:, 0]))
        nnmppi = np.mean([value for _, value in points[quantity]["NN-MPPI"]])
        auto = ", ".join(f"{alpha:.0f}: {value:.1f}" for alpha, value in sorted(points[quantity]["auto"]))
        print(f"{title}, mean per alpha: {means}; NN-MPPI {nnmppi:.1f}; auto (settled alpha: value) {auto}")
    path = os.path.join(args.out, "alpha_sweep_heavy_swimmer.png")
    draw(points, path)
    print(f"figure: {path}")


if __name__ == "__main__":
    main()
