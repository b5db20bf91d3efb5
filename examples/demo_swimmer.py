"""
MaxDiff RL vs NN-MPPI on the heavy-tail Swimmer, where MaxDiff pulls ahead at 10 seeds per method.

REPRODUCTION.md has three runs of the same comparison, 5 seeds per method and 50,000 steps each: run 1 (on a CPU,
2026-11-25, ``docs/reproduction/swimmer_heavy_50k.csv``), where every MaxDiff seed ended above every NN-MPPI seed,
run 2 (seeds 0-4 on a GPU, 2026-11-27, ``swimmer_heavy_retrain_50k.csv``) and run 3 (seeds 5-9 on a CPU, 2026-11-28,
``swimmer_heavy_seeds5_9_50k.csv``), where four MaxDiff seeds of five did, and runs 2 and 3 read together as 10
seeds per method, as fixed before run 3 started. The kept agents are seed 0 of run 1 (``examples/models/``, the
first seed rather than the best) and every seed of run 2 (``docs/reproduction/models/``). The demo

1. reads the runs from their per-episode CSVs and tests each, and runs 2 and 3 together (two-sided Mann-Whitney on
   the per-seed training return at 50k steps and final evaluation);
2. runs one episode of each kept agent from the same start;
3. trains a MaxDiff agent live on the point mass with beta = 0.01 (the paper's hard point-mass setting and its
   published settings, ``MaxDiffMPPI(...).learn`` with a progress bar): the main job of the package running on your
   machine, short enough for a demo (a swimmer needs tens of thousands of steps);

and saves a figure with the tips' (x, y) paths, the training curves of every seed of the three runs with the paper's
points and the tests, the point mass's paths as it learned, and a filmstrip of each method's first kept swimmer
(MuJoCo's offscreen frames from the tracking camera where a renderer is available, the bodies' positions drawn
otherwise)::

    python examples/demo_swimmer.py --out demo_output

Planning 1,000 steps takes about 95 s per agent on one core of this project's 2-core AMD EPYC machines (K = 500
samples, horizon 40), so the 12 kept agents take about 9.5 minutes in two processes there; the live point-mass
training (K = 500, horizon 30, 5 model updates per step) about 33 ms per step (the point-mass demo's MaxDiff: 10,000
steps in 331 s).
"""

import argparse
import csv
import json
import multiprocessing
import os
from collections import defaultdict
from concurrent.futures import ProcessPoolExecutor
from typing import Any

if "DISPLAY" not in os.environ:  # headless: MuJoCo renders through EGL (before mujoco is imported)
    os.environ.setdefault("MUJOCO_GL", "egl")

import matplotlib

matplotlib.use("Agg")
import gymnasium as gym
import matplotlib.pyplot as plt
import numpy as np
import torch as th
from stable_baselines3.common.monitor import Monitor
from tqdm import tqdm

from sb3_maxdiff import NNMPPI, MaxDiffMPPI
from sb3_maxdiff.envs import SWIMMER_HEAVY, point_mass_id
from sb3_maxdiff.experiments.analyse.report import published_points
from sb3_maxdiff.experiments.analyse.stats import mann_whitney_pvalue
from sb3_maxdiff.experiments.analyse.tables import per_seed_values
from sb3_maxdiff.experiments.define.presets import PRESETS, published_kwargs

HERE = os.path.dirname(os.path.abspath(__file__))
REPRODUCTION = os.path.join(HERE, "..", "docs", "reproduction")
ALGOS: dict[str, type[NNMPPI]] = {"MaxDiff": MaxDiffMPPI, "NN-MPPI": NNMPPI}
CSV_METHODS = {"maxdiff": "MaxDiff", "nnmppi": "NN-MPPI"}
# the three 5-seed runs of the comparison: name -> (per-episode CSV, line style of its curves)
RUNS = {
    "run 1 (CPU, 2026-11-25)": (os.path.join(REPRODUCTION, "swimmer_heavy_50k.csv"), "-"),
    "run 2 (GPU, 2026-11-27)": (os.path.join(REPRODUCTION, "swimmer_heavy_retrain_50k.csv"), "--"),
    "run 3 (CPU, 2026-11-28)": (os.path.join(REPRODUCTION, "swimmer_heavy_seeds5_9_50k.csv"), ":"),
}
RUN_1, RUN_2, RUN_3 = RUNS
# runs read together (their seeds differ): name -> runs
POOLED = {"runs 2 and 3 (seeds 0-9)": (RUN_2, RUN_3)}
# the kept agents of each method, each run for one episode: (its run, its seed, model file)
MODELS = {
    name: [
        (RUN_1, 0, os.path.join(HERE, "models", f"swimmer_heavy_{method}_seed0.zip")),
        *(
            (RUN_2, seed, os.path.join(REPRODUCTION, "models", f"swimmer_heavy_retrain_50k_{method}_seed{seed}.zip"))
            for seed in range(5)
        ),
    ]
    for method, name in CSV_METHODS.items()
}
BODIES = ("torso", "mid", "back")
# the live training: the point mass with beta = 0.01, actions unclipped as in the authors' runs
POINT_MASS = point_mass_id("0.01", bounded_actions=False)
COLORS = {"MaxDiff": "tab:blue", "NN-MPPI": "tab:orange"}
# one episode of each kept agent, recorded by `python examples/demo_swimmer.py --replay --record <this file>`
RECORDING = os.path.join(HERE, "data", "kept_agents_episodes.npz")


def make_env(render: bool) -> gym.Env:
    kwargs: dict[str, Any] = (
        {"render_mode": "rgb_array", "camera_name": "track", "width": 240, "height": 240} if render else {}
    )
    return gym.make(SWIMMER_HEAVY, **kwargs)


def run_episode(name: str, path: str, steps: int, seed: int, frames_at: list[int]) -> dict[str, Any]:
    """
    One episode of a kept agent (its planner seeded): return, tip path, and the simulator's state (qpos, qvel) at
    ``frames_at``, from which :func:`shots` draws the body.
    """
    th.set_num_threads(1)
    model = ALGOS[name].load(path, device="cpu")
    env = make_env(render=False)
    obs, _ = env.reset(seed=seed)
    model.set_random_seed(seed)
    data = env.unwrapped.data  # type: ignore[attr-defined]

    def state_now() -> np.ndarray:
        return np.concatenate([data.qpos, data.qvel]).copy()

    tip, total, states, state = [obs[:2].copy()], 0.0, [state_now()] if frames_at else [], None
    for step in tqdm(range(1, steps + 1), desc=f"{name} {os.path.basename(path)}", unit="step"):
        action, state = model.predict(obs, state=state, episode_start=np.array([step == 1]), deterministic=False)
        obs, reward, terminated, truncated, _ = env.step(action)
        total += float(reward)
        tip.append(obs[:2].copy())
        if step in frames_at:
            states.append(state_now())
        if terminated or truncated:
            break
    env.close()
    return {"return": total, "tip": np.array(tip), "states": np.array(states)}


def shots(states: np.ndarray, render: bool) -> list[np.ndarray]:
    """The swimmer at each simulator state (qpos then qvel): a MuJoCo frame, or its bodies' (x, y) positions."""
    import mujoco

    env = make_env(render)
    env.reset(seed=0)
    model, data = env.unwrapped.model, env.unwrapped.data  # type: ignore[attr-defined]
    drawn = []
    for state in states:
        data.qpos[:], data.qvel[:] = state[: model.nq], state[model.nq :]
        mujoco.mj_forward(model, data)
        drawn.append(np.asarray(env.render()) if render else np.array([data.body(body).xpos[:2] for body in BODIES]))
    env.close()
    return drawn


def run_kept_agents(steps: int, seed: int, frames_at: list[int], jobs: int) -> dict[str, list[dict]]:
    """
    One episode of every kept agent from the same start, ``jobs`` at a time in processes of their own (one: in this
    process); frames of each method's first agent only. method -> its agents' episodes, each with its run and seed.
    """
    tasks = [
        (name, run, run_seed, path, frames_at if index == 0 else [])
        for name, kept in MODELS.items()
        for index, (run, run_seed, path) in enumerate(kept)
    ]
    if jobs == 1:
        done = [run_episode(name, path, steps, seed, frames) for name, _, _, path, frames in tasks]
    else:
        with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
            futures = [pool.submit(run_episode, name, path, steps, seed, frames) for name, _, _, path, frames in tasks]
            done = [future.result() for future in futures]
    episodes: dict[str, list[dict]] = defaultdict(list)
    for (name, run, run_seed, _, _), episode in zip(tasks, done):
        episodes[name].append({**episode, "run": run, "seed": run_seed})
    return dict(episodes)


def save_recording(path: str, episodes: dict[str, list[dict]], frames_at: list[int], seed: int) -> None:
    """Write the kept agents' episodes (returns, tip paths, states at the frames) to an ``.npz`` file."""
    arrays: dict[str, Any] = {"frames_at": np.array(frames_at), "seed": np.array(seed)}
    for name, kept in episodes.items():
        for index, episode in enumerate(kept):
            key = f"{name}/{index}"
            arrays[f"{key}/run"] = np.array(episode["run"])
            arrays[f"{key}/seed"] = np.array(episode["seed"])
            arrays[f"{key}/return"] = np.array(episode["return"])
            arrays[f"{key}/tip"] = episode["tip"]
            arrays[f"{key}/states"] = episode["states"]
    np.savez_compressed(path, **arrays)


def load_recording(path: str) -> tuple[dict[str, list[dict]], list[int], int]:
    """The kept agents' episodes as :func:`save_recording` wrote them, their frame steps and their seed."""
    with np.load(path) as data:
        episodes: dict[str, list[dict]] = defaultdict(list)
        for name in ALGOS:
            index = 0
            while f"{name}/{index}/tip" in data:
                key = f"{name}/{index}"
                episodes[name].append(
                    {
                        "run": str(data[f"{key}/run"]),
                        "seed": int(data[f"{key}/seed"]),
                        "return": float(data[f"{key}/return"]),
                        "tip": data[f"{key}/tip"],
                        "states": data[f"{key}/states"],
                    }
                )
                index += 1
        return dict(episodes), [int(step) for step in data["frames_at"]], int(data["seed"])


def test_from_csv(*paths: str, steps: int = 50_000) -> dict[str, dict[str, Any]]:
    """
    Per quantity (training return at ``steps``, final evaluation): each method's per-seed values over the seeds of
    every file in ``paths`` (a seed found in two files is refused) and the two-sided Mann-Whitney p of MaxDiff against
    NN-MPPI.
    """
    values = per_seed_values(list(paths), [steps])
    evaluation = next(name for name in values if name.startswith("final evaluation"))
    quantities = {f"training return at {steps:,}": f"last episode at {steps:,}", "final evaluation": evaluation}
    found = {}
    for label, key in quantities.items():
        lists = {name: list(values[key][method].values()) for method, name in CSV_METHODS.items()}
        found[label] = {**lists, "p": mann_whitney_pvalue(lists["MaxDiff"], lists["NN-MPPI"])}
    return found


def test_runs() -> dict[str, dict[str, dict[str, Any]]]:
    """Each run whose CSV is here, tested alone, then each pooled set of runs whose CSVs are all here."""
    tests = {run: test_from_csv(path) for run, (path, _) in RUNS.items() if os.path.exists(path)}
    for run, (path, _) in RUNS.items():
        if run not in tests:
            print(f"{run}: {path} not found, not tested")
    for name, runs in POOLED.items():
        if all(run in tests for run in runs):
            tests[name] = test_from_csv(*(RUNS[run][0] for run in runs))
    return tests


def train_live(steps: int, seed: int) -> dict[str, Any]:
    """
    MaxDiff trained from scratch on the point mass for ``steps`` steps with the published settings: the (x, y) path of
    each episode (the last one unfinished) and the returns of the finished ones.
    """
    env = Monitor(gym.make(POINT_MASS))
    model = MaxDiffMPPI(env, seed=seed, **published_kwargs("maxdiff", POINT_MASS))
    paths: list[list[np.ndarray]] = [[]]

    def record_position(local: dict[str, Any], _: dict[str, Any]) -> bool:
        done = bool(local["dones"][0])  # the VecEnv has reset: the episode's last observation is in its info
        obs = local["infos"][0]["terminal_observation"] if done else local["new_obs"][0]
        paths[-1].append(np.asarray(obs[:2], dtype=float).copy())
        if done:
            paths.append([])
        return True

    model.learn(steps, progress_bar=True, callback=record_position)
    returns = [float(value) for value in env.get_episode_rewards()]
    return {"paths": [np.array(path) for path in paths if path], "returns": returns, "steps": steps}


def draw_live(axis: plt.Axes, live: dict[str, Any]) -> None:
    """The point mass's paths as it learned, one colour per episode (dark: early), start and goal marked."""
    colors = plt.get_cmap("viridis")(np.linspace(0.0, 0.9, max(len(live["paths"]), 2)))
    for index, (path, color) in enumerate(zip(live["paths"], colors)):
        shown = f"return {live['returns'][index]:.0f}" if index < len(live["returns"]) else "unfinished"
        axis.plot(path[:, 0], path[:, 1], color=color, linewidth=0.9, label=f"episode {index + 1}: {shown}")
    axis.plot([-1], [-1], "ks", label="start")
    axis.plot([0], [0], "r*", markersize=12, label="goal")
    axis.set(xlim=(-5.2, 5.2), ylim=(-5.2, 5.2), xlabel="x", ylabel="y")
    axis.set_aspect("equal")
    axis.set_title(f"MaxDiff trained here: point mass, beta = 0.01,\n{live['steps']:,} steps", fontsize=9)
    axis.legend(fontsize=7, loc="upper right")


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


def test_lines(tests: dict[str, dict[str, dict[str, Any]]], compact: bool = False) -> list[str]:
    """
    One line per run and tested quantity: mean +/- std (ddof 1) of each method over its seeds, and the p value.
    ``tests``: run -> quantity -> what :func:`test_from_csv` found; ``compact``: one short line per run, the means
    and p of each quantity, for the figure.
    """
    lines = []
    for run, test in tests.items():
        if compact:
            parts = [
                f"{label.replace('training return ', '')} {np.mean(found['MaxDiff']):.1f} vs "
                f"{np.mean(found['NN-MPPI']):.1f}, p = {found['p']:.3f}"
                for label, found in test.items()
            ]
            lines.append(f"{short(run)}: {'; '.join(parts)}")
            continue
        for label, found in test.items():
            summaries = [
                f"{name} {np.mean(found[name]):.1f} +/- {np.std(found[name], ddof=1):.1f}" for name in ("MaxDiff", "NN-MPPI")
            ]
            seeds = len(found["MaxDiff"])
            lines.append(f"{run}, {label}, {seeds} seeds each: {' vs '.join(summaries)}, Mann-Whitney p = {found['p']:.3f}")
    return lines


def short(run: str) -> str:
    """ "run 1" of "run 1 (CPU, 2026-11-25)", "runs 2 and 3" of "runs 2 and 3 (seeds 0-9)"."""
    return run.split(" (")[0]


def draw(
    episodes: dict[str, list[dict[str, Any]]],
    frames_at: list[int],
    rendered: bool,
    out: str,
    tests: dict[str, dict[str, dict[str, Any]]],
    live: dict[str, Any] | None = None,
    source: str = "replayed here",
) -> str:
    """
    The figure: every kept agent's tip path, the runs' curves with the tests, the live point mass's paths (if it
    trained), a filmstrip of each method's first agent.
    """
    with_live = live is not None and bool(live["paths"])
    figure = plt.figure(figsize=(17 if with_live else 13, 4.2 + 1.9 * len(episodes)), layout="constrained")
    halves = figure.add_gridspec(2, 1, height_ratios=[4.2, 1.9 * len(episodes)])
    top, bottom = figure.add_subfigure(halves[0]), figure.add_subfigure(halves[1])
    ratios = [1, 1.4, 0.9] if with_live else [1, 1.4]
    paths, curves, *point_mass = top.subplots(1, len(ratios), width_ratios=ratios)
    if live is not None and with_live:
        draw_live(point_mass[0], live)
    for name, kept in episodes.items():
        kept_returns = ", ".join(f"{episode['return']:.0f}" for episode in kept)
        for index, episode in enumerate(kept):
            tip = episode["tip"]
            label = f"{name}, {len(kept)} agents: return {kept_returns}" if index == 0 else None
            paths.plot(tip[:, 0], tip[:, 1], color=COLORS[name], linewidth=1.4 if index == 0 else 0.8, label=label)
            paths.scatter(*tip[-1], color=COLORS[name], marker="o")
    first = next(iter(episodes.values()))[0]
    paths.scatter(*first["tip"][0], color="black", marker="x", label="start")
    paths.set(xlabel="x (m)", ylabel="y (m)")
    paths.set_title(f"tip paths, one {len(first['tip']) - 1}-step episode per kept agent\n({source})", fontsize=9)
    paths.axis("equal")
    paths.legend(fontsize=8)
    last_step = 0
    for run, (path, style) in RUNS.items():
        if not os.path.exists(path):
            continue
        for name, seeds in read_curves(path).items():
            for index, (ends, returns) in enumerate(seeds.values()):
                label = f"{name}, {short(run)}, {len(seeds)} seeds" if index == 0 else None
                curves.plot(ends, returns, style, color=COLORS[name], alpha=0.6, linewidth=0.8, label=label)
                last_step = max(last_step, int(ends[-1]))
    if last_step:
        for method, name in CSV_METHODS.items():
            steps, means = zip(*published_points(PRESETS["swimmer-methods"], "heavy", method, last_step))
            curves.scatter(steps, means, color=COLORS[name], marker="x", s=70, zorder=3, label=f"{name}, paper (mean)")
        curves.set(xlabel="environment steps", ylabel="training episode return")
        curves.set_title(
            "training, every seed of the three runs; MaxDiff vs NN-MPPI means (Mann-Whitney)\n"
            + "\n".join(test_lines(tests, compact=True)),
            fontsize=7,
        )
        curves.legend(fontsize=7)
    else:
        curves.text(0.5, 0.5, "the runs' CSVs were not found", ha="center", va="center")
    strip = bottom.subplots(len(episodes), len(frames_at), squeeze=False)
    for row, (name, kept) in enumerate(episodes.items()):
        episode = kept[0]
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
            axis.set_title(f"{name}, {short(episode['run'])} seed {episode['seed']}, step {step}", fontsize=8)
        for axis in strip[row, len(episode["shots"]) :]:  # the episode ended before these steps
            axis.set_visible(False)
    path = os.path.join(out, "swimmer_paths_and_curves.png")
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--replay", action="store_true", help="run the 12 kept agents' episodes here instead of reading their recording"
    )
    parser.add_argument("--record", help="with --replay: also write the episodes to this .npz file (how RECORDING is made)")
    parser.add_argument("--steps", type=int, default=1000, help="with --replay: episode length (the env's is 1000)")
    parser.add_argument("--seed", type=int, default=0, help="with --replay: seed of the start state and the planner's noise")
    parser.add_argument("--frames", type=int, default=5, help="with --replay: filmstrip frames per swimmer")
    parser.add_argument(
        "--jobs", type=int, default=2, help="with --replay: processes running the kept agents' episodes (1: this one)"
    )
    parser.add_argument("--no-render", action="store_true", help="draw the bodies' positions instead of MuJoCo frames")
    parser.add_argument(
        "--train-steps", type=int, default=0, help="steps of a live MaxDiff training on the point mass (default 0: none)"
    )
    parser.add_argument("--out", default="demo_output")
    args = parser.parse_args()
    if args.steps < 1 or args.frames < 2 or args.train_steps < 0 or args.jobs < 1:
        parser.error(
            f"need --steps >= 1, --frames >= 2, --train-steps >= 0 and --jobs >= 1, got {args.steps}, {args.frames}, "
            f"{args.train_steps} and {args.jobs}"
        )
    if args.record and not args.replay:
        parser.error("--record writes the episodes that --replay runs: give both")
    th.set_num_threads(1)
    os.makedirs(args.out, exist_ok=True)
    tests = test_runs()
    for line in test_lines(tests):
        print(line)
    if args.replay:
        frames_at = [round(float(value)) for value in np.linspace(0, args.steps, args.frames)]
        episodes = run_kept_agents(args.steps, args.seed, frames_at, args.jobs)
        source, kind = "replayed here", "replayed here"
        if args.record:
            save_recording(args.record, episodes, frames_at, args.seed)
    else:
        episodes, frames_at, _ = load_recording(RECORDING)
        source = f"recorded: {os.path.relpath(RECORDING, os.path.join(HERE, '..'))}, made by --replay --record"
        kind = "recorded episode"
    rendered = not args.no_render and renderer_works()
    for kept in episodes.values():  # the filmstrip: each method's first agent
        kept[0]["shots"] = shots(kept[0]["states"], rendered)
    summary: dict[str, Any] = {
        name: [
            {
                "run": short(e["run"]),
                "seed": e["seed"],
                "return": e["return"],
                "x_travelled": float(e["tip"][-1, 0] - e["tip"][0, 0]),
            }
            for e in kept
        ]
        for name, kept in episodes.items()
    }
    for name, kept in summary.items():
        for values in kept:
            print(
                f"{name} {values['run']} seed {values['seed']} (kept, 50k steps; {kind}): return {values['return']:.1f}, "
                f"tip moved {values['x_travelled']:+.2f} m along x"
            )
    live = None
    if args.train_steps > 0:
        live = train_live(args.train_steps, args.seed)
        shown = ", ".join(f"{value:.1f}" for value in live["returns"]) or "none finished"
        print(f"MaxDiff trained here on the point mass (beta = 0.01) for {args.train_steps} steps: episode returns {shown}")
        summary["live"] = {"env": POINT_MASS, "steps": args.train_steps, "returns": live["returns"]}
    summary["tests"] = tests
    with open(os.path.join(args.out, "swimmer_returns.json"), "w") as file:
        json.dump(summary, file, indent=1)
    figure = draw(episodes, frames_at, rendered, args.out, tests, live, source)
    print(f"figure: {figure} ({'MuJoCo frames' if rendered else 'bodies drawn'})")


if __name__ == "__main__":
    main()
