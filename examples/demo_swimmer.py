"""
MaxDiff RL vs NN-MPPI on the heavy-tail Swimmer, without training on your machine.

``examples/models/`` keeps one agent of each method trained for 50,000 steps by the experiment runner
(seed 0 of the Swimmer runs in REPRODUCTION.md: the first seed, not the best one). The demo runs one
episode of each from the same start, and saves a figure with both tips' (x, y) paths, a filmstrip of each
swimmer (MuJoCo's offscreen frames from the tracking camera where a renderer is available, the bodies'
positions drawn otherwise), and the training curves of every seed of those runs, with the paper's points,
from ``docs/reproduction/swimmer_heavy_50k.csv``::

    python examples/demo_swimmer.py --out demo_output

Planning 1,000 steps takes about half a minute per agent on one CPU core (K = 500 samples, horizon 40).
"""

import argparse
import csv
import json
import os
from collections import defaultdict
from typing import Any

if "DISPLAY" not in os.environ:  # headless: MuJoCo renders through EGL (before mujoco is imported)
    os.environ.setdefault("MUJOCO_GL", "egl")

import matplotlib

matplotlib.use("Agg")
import gymnasium as gym
import matplotlib.pyplot as plt
import numpy as np
import torch as th
from tqdm import tqdm

from sb3_maxdiff import NNMPPI, MaxDiffMPPI
from sb3_maxdiff.envs import SWIMMER_HEAVY
from sb3_maxdiff.experiments.presets import PRESETS
from sb3_maxdiff.experiments.report import published_points

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = {
    "MaxDiff": (MaxDiffMPPI, os.path.join(HERE, "models", "swimmer_heavy_maxdiff_seed0.zip")),
    "NN-MPPI": (NNMPPI, os.path.join(HERE, "models", "swimmer_heavy_nnmppi_seed0.zip")),
}
CURVES_CSV = os.path.join(HERE, "..", "docs", "reproduction", "swimmer_heavy_50k.csv")
CSV_METHODS = {"maxdiff": "MaxDiff", "nnmppi": "NN-MPPI"}
BODIES = ("torso", "mid", "back")
COLORS = {"MaxDiff": "tab:blue", "NN-MPPI": "tab:orange"}


def make_env(render: bool) -> gym.Env:
    kwargs = {"render_mode": "rgb_array", "camera_name": "track", "width": 240, "height": 240} if render else {}
    return gym.make(SWIMMER_HEAVY, **kwargs)


def run_episode(name: str, steps: int, seed: int, frames_at: list[int], render: bool) -> dict[str, Any]:
    """One episode of a kept agent (its planner seeded): return, tip path, frames (or body positions) at ``frames_at``."""
    algo, path = MODELS[name]
    model = algo.load(path, device="cpu")
    env = make_env(render)
    obs, _ = env.reset(seed=seed)
    model.set_random_seed(seed)
    data = env.unwrapped.data  # type: ignore[attr-defined]

    def shot() -> np.ndarray:
        return env.render() if render else np.array([data.body(body).xpos[:2] for body in BODIES])

    tip, total, shots, state = [obs[:2].copy()], 0.0, [shot()], None
    for step in tqdm(range(1, steps + 1), desc=name, unit="step"):
        action, state = model.predict(obs, state=state, episode_start=np.array([step == 1]), deterministic=False)
        obs, reward, terminated, truncated, _ = env.step(action)
        total += float(reward)
        tip.append(obs[:2].copy())
        if step in frames_at:
            shots.append(shot())
        if terminated or truncated:
            break
    env.close()
    return {"return": total, "tip": np.array(tip), "shots": shots}


def read_curves(path: str) -> dict[str, dict[int, tuple[np.ndarray, np.ndarray]]]:
    """method -> seed -> (episode end steps, returns) of the training episodes in the per-episode CSV."""
    rows: dict[str, dict[int, list[tuple[float, float]]]] = defaultdict(lambda: defaultdict(list))
    with open(path) as file:
        for row in csv.DictReader(file):
            if row.get("kind", "train") == "train" and row["method"] in CSV_METHODS:
                rows[CSV_METHODS[row["method"]]][int(row["seed"])].append((float(row["length"]), float(row["return"])))
    return {
        method: {seed: (np.cumsum([e[0] for e in eps]), np.array([e[1] for e in eps])) for seed, eps in seeds.items()}
        for method, seeds in rows.items()
    }


def renderer_works() -> bool:
    try:
        env = make_env(render=True)
        env.reset(seed=0)
        env.render()
        env.close()
        return True
    except Exception:  # no OpenGL context: draw the bodies instead
        return False


def draw(episodes: dict[str, dict[str, Any]], frames_at: list[int], rendered: bool, out: str) -> str:
    figure = plt.figure(figsize=(13, 4.2 + 1.9 * len(episodes)), layout="constrained")
    top, bottom = figure.subfigures(2, 1, height_ratios=[4.2, 1.9 * len(episodes)])
    paths, curves = top.subplots(1, 2, width_ratios=[1, 1.4])
    for name, episode in episodes.items():
        tip = episode["tip"]
        paths.plot(tip[:, 0], tip[:, 1], color=COLORS[name], label=f"{name}: return {episode['return']:.1f}")
        paths.scatter(*tip[-1], color=COLORS[name], marker="o")
    paths.scatter(*next(iter(episodes.values()))["tip"][0], color="black", marker="x", label="start")
    paths.set(
        xlabel="x (m)", ylabel="y (m)", title=f"tip path, one {len(next(iter(episodes.values()))['tip']) - 1}-step episode"
    )
    paths.axis("equal")
    paths.legend(fontsize=8)
    if os.path.exists(CURVES_CSV):
        for name, seeds in read_curves(CURVES_CSV).items():
            for index, (ends, returns) in enumerate(seeds.values()):
                label = f"{name}, {len(seeds)} seeds" if index == 0 else None
                curves.plot(ends, returns, color=COLORS[name], alpha=0.6, linewidth=0.8, label=label)
            method = next(key for key, label in CSV_METHODS.items() if label == name)
            last_step = max(int(ends[-1]) for ends, _ in seeds.values())
            steps, means = zip(*published_points(PRESETS["swimmer-methods"], "heavy", method, last_step))
            curves.scatter(steps, means, color=COLORS[name], marker="x", s=70, zorder=3, label=f"{name}, paper (mean)")
        curves.set(xlabel="environment steps", ylabel="training episode return", title="training, every seed")
        curves.legend(fontsize=8)
    else:
        curves.text(0.5, 0.5, f"{CURVES_CSV} not found", ha="center", va="center")
    strip = bottom.subplots(len(episodes), len(frames_at), squeeze=False)
    for row, (name, episode) in enumerate(episodes.items()):
        for column, (step, shot) in enumerate(zip(frames_at, episode["shots"])):
            axis = strip[row, column]
            if rendered:
                axis.imshow(shot)
                axis.set_xticks([])
                axis.set_yticks([])
            else:
                axis.plot(shot[:, 0], shot[:, 1], "-o", color=COLORS[name], markersize=3)
                axis.set_aspect("equal")
                axis.tick_params(labelsize=6)
            axis.set_title(f"{name}, step {step}", fontsize=8)
        for axis in strip[row, len(episode["shots"]) :]:  # the episode ended before these steps
            axis.set_visible(False)
    path = os.path.join(out, "swimmer_paths_and_curves.png")
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=1000, help="episode length to run (the env's is 1000)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the start state and the planner's noise")
    parser.add_argument("--frames", type=int, default=5, help="filmstrip frames per swimmer")
    parser.add_argument("--no-render", action="store_true", help="draw the bodies' positions instead of MuJoCo frames")
    parser.add_argument("--out", default="demo_output")
    args = parser.parse_args()
    if args.steps < 1 or args.frames < 2:
        parser.error(f"need --steps >= 1 and --frames >= 2, got {args.steps} and {args.frames}")
    th.set_num_threads(1)
    os.makedirs(args.out, exist_ok=True)
    rendered = not args.no_render and renderer_works()
    frames_at = [round(float(value)) for value in np.linspace(0, args.steps, args.frames)]
    episodes = {name: run_episode(name, args.steps, args.seed, frames_at, rendered) for name in MODELS}
    figure = draw(episodes, frames_at, rendered, args.out)
    summary = {
        name: {"return": episode["return"], "x_travelled": float(episode["tip"][-1, 0] - episode["tip"][0, 0])}
        for name, episode in episodes.items()
    }
    with open(os.path.join(args.out, "swimmer_returns.json"), "w") as file:
        json.dump(summary, file, indent=1)
    for name, values in summary.items():
        print(f"{name}: return {values['return']:.1f}, tip moved {values['x_travelled']:+.2f} m along x")
    print(f"figure: {figure} ({'MuJoCo frames' if rendered else 'bodies drawn'})")


if __name__ == "__main__":
    main()
