"""The presets' settings that come from outside this package: RL Zoo's tuned SAC, the authors' single-shot files."""

import subprocess
import sys

import numpy as np
import pytest
from helpers import SUBPROCESS_TIMEOUT

from sb3_maxdiff.envs import ANT, SWIMMER_HEAVY, SWIMMER_LIGHT
from sb3_maxdiff.experiments.analyse.report import curve_table
from sb3_maxdiff.experiments.analyse.results import Run
from sb3_maxdiff.experiments.define import presets, zoo_files
from sb3_maxdiff.experiments.define.presets import PRESETS, SAC_ZOO, cell_kwargs, get_budget
from sb3_maxdiff.experiments.define.specs import build_specs


def _cells(preset: str) -> dict:
    return {(cell.setting, cell.method): cell for cell in PRESETS[preset].cells}


def test_sac_zoo_takes_rl_zoos_swimmer_entry():
    cells = _cells("swimmer-methods")
    kwargs = cell_kwargs(cells[("heavy", SAC_ZOO)], get_budget("paper"))
    # rl_zoo3 2.9's Swimmer-v4: its MuJoCo defaults (SB3's SAC defaults, learning_starts 10000) with gamma 0.999
    assert kwargs == {"learning_starts": 10000, "gamma": 0.999}
    assert cells[("light", SAC_ZOO)].env_id == SWIMMER_LIGHT and cells[("heavy", SAC_ZOO)].env_id == SWIMMER_HEAVY
    # the paper's SAC is unchanged beside it
    assert cell_kwargs(cells[("heavy", "sac")], get_budget("paper"))["ent_coef"] == 0.01


def test_sac_zoo_reads_the_installed_yaml_rather_than_a_copy(tmp_path, monkeypatch):
    (tmp_path / "hyperparams").mkdir()
    (tmp_path / "hyperparams" / "sac.yml").write_text("Swimmer-v4:\n  n_timesteps: 5\n  policy: MlpPolicy\n  gamma: 0.5\n")
    monkeypatch.setattr(zoo_files, "rl_zoo_hyperparams_path", lambda algo: str(tmp_path / "hyperparams" / f"{algo}.yml"))
    zoo_files._rl_zoo_hyperparams.cache_clear()
    try:
        assert presets.published_kwargs(SAC_ZOO, SWIMMER_HEAVY) == {"gamma": 0.5}
        (tmp_path / "hyperparams" / "sac.yml").write_text("Swimmer-v4:\n  normalize: true\n")
        zoo_files._rl_zoo_hyperparams.cache_clear()
        with pytest.raises(ValueError, match="normalize"):
            presets.published_kwargs(SAC_ZOO, SWIMMER_HEAVY)
    finally:
        zoo_files._rl_zoo_hyperparams.cache_clear()
    with pytest.raises(ValueError, match=r"sac-zoo.*defined for"):
        zoo_files.rl_zoo_kwargs(ANT)


def test_sac_zoo_without_rl_zoo_names_the_extra():
    script = (
        "import sys\n"
        "sys.modules['rl_zoo3'] = None\n"
        "from sb3_maxdiff.experiments.define.specs import build_specs\n"
        "assert len(build_specs('swimmer-methods', 'smoke', [0], methods=['maxdiff', 'sac'])) == 4\n"
        "try:\n"
        "    build_specs('swimmer-methods', 'smoke', [0], methods=['sac-zoo'])\n"
        "except ModuleNotFoundError as error:\n"
        "    assert 'sb3-maxdiff[zoo]' in str(error) and '--methods' in str(error), error\n"
        "else:\n"
        "    raise AssertionError('no error')\n"
    )
    subprocess.run([sys.executable, "-c", script], check=True, timeout=SUBPROCESS_TIMEOUT)


def test_single_shot_preset_uses_the_authors_single_shot_settings():
    cells = _cells("single-shot")
    assert {cells[("swimmer", method)].env_id for method in ("maxdiff", "nnmppi", "sac")} == {SWIMMER_LIGHT}
    paper = get_budget("paper")
    maxdiff, nnmppi = (cell_kwargs(cells[("swimmer", method)], paper) for method in ("maxdiff", "nnmppi"))
    for kwargs in (maxdiff, nnmppi):
        assert kwargs["n_samples"] == 1000 and kwargs["gradient_steps"] == 10 and kwargs["batch_size"] == 128
    assert maxdiff["alpha"] == 50.0 and maxdiff["window"] is True
    assert "window" not in nnmppi and "alpha" not in nnmppi
    assert cell_kwargs(cells[("swimmer", "sac")], paper) == cell_kwargs(_cells("swimmer-methods")[("light", "sac")], paper)
    ant = cell_kwargs(cells[("ant", "maxdiff")], paper)
    assert ant["alpha"] == 15.0 and ant["gradient_steps"] == 5 and ant["n_samples"] == 1000
    assert "light tail" in PRESETS["single-shot"].notes and "max_frames" in PRESETS["single-shot"].notes
    # single-shot runs keep checkpoints like the others, at any step since their one episode never ends
    (spec,) = build_specs("single-shot", "reduced", [0], settings=["swimmer"], methods=["maxdiff"])
    assert spec.single_shot and spec.checkpoint_every == get_budget("reduced").checkpoint_every == 5_000


def test_presets_that_change_one_setting_keep_the_published_rest():
    """swimmer-bfloat16 and look-back: the published settings of their body, with only their own setting changed."""
    paper = get_budget("paper")
    published = cell_kwargs(_cells("swimmer-methods")[("heavy", "maxdiff")], paper)
    assert cell_kwargs(_cells("swimmer-bfloat16")[("heavy", "maxdiff")], paper) == {**published, "planner_dtype": "bfloat16"}
    look_back = _cells("look-back")
    point_mass = cell_kwargs(_cells("point-mass-beta")[("beta=0.01", "maxdiff")], paper)
    assert cell_kwargs(look_back[("history=0", "maxdiff")], paper) == point_mass
    assert cell_kwargs(look_back[("history=30", "maxdiff")], paper) == {**point_mass, "history": 30}
    assert point_mass["horizon"] == 30  # looking back as far as the planner looks ahead


def test_past_horizon_runs_the_published_halfcheetah_beside_rl_zoos_sac():
    """past-horizon: the published multi-shot HalfCheetah MaxDiff, and SAC with RL Zoo's HalfCheetah-v4 entry."""
    paper = get_budget("paper")
    cells = _cells("past-horizon")
    published = cell_kwargs(_cells("ant-halfcheetah")[("halfcheetah multi-shot", "maxdiff")], paper)
    assert cell_kwargs(cells[("halfcheetah", "maxdiff")], paper) == published
    assert published["horizon"] == 10 and published["alpha"] == 5.0
    assert cell_kwargs(cells[("halfcheetah", "sac-zoo")], paper) == {"learning_starts": 10_000}
    # the critic arms: the published cells with terminal_value="q" (and, for the swimmer, the 10-step horizon and the
    # diagonal jitter of the terminal-value preset's value arm), with the YAML's discount; the reward head keeps the
    # published TD-like discount, as those runs had it, beside the YAML's networks
    kept = {"policy_kwargs": {**published["policy_kwargs"], "reward_discount": 0.95}}
    assert kept["policy_kwargs"]["net_arch"] == [200, 200]
    assert cell_kwargs(cells[("halfcheetah critic", "maxdiff")], paper) == {**published, "terminal_value": "q", **kept}
    swimmer = cell_kwargs(cells[("swimmer critic", "maxdiff")], paper)
    value_arm = cell_kwargs(_cells("terminal-value")[("H=10 value", "maxdiff")], paper)
    assert swimmer == {**value_arm, "terminal_value": "q", "gamma": 0.999}
    # the same arms with the library's one-step reward head: no reward_discount, the YAML's networks
    for setting in ("halfcheetah", "swimmer"):
        one_step = cell_kwargs(cells[(f"{setting} critic one-step", "maxdiff")], paper)
        pinned = cell_kwargs(cells[(f"{setting} critic", "maxdiff")], paper)
        assert one_step == {**pinned, "policy_kwargs": {"net_arch": [200, 200]}}
    assert "gamma" not in published  # 0.99, the default


def test_swimmer_report_puts_ours_beside_the_published_curve_points():
    specs = build_specs("swimmer-methods", "reduced", [0, 1], settings=["heavy"], methods=["maxdiff"], steps=50_000)
    steps = np.arange(1000, 50_001, 1000)
    runs = [Run(spec, steps, np.full(len(steps), 10.0 * (spec.seed + 1)), {}) for spec in specs]
    lines = curve_table(PRESETS["swimmer-methods"], runs)
    rows = [line for line in lines if line.startswith("| heavy | MaxDiff")]
    assert [row.split(" | ")[2] for row in rows] == ["10,000", "20,000", "50,000"]  # 100k is past these runs
    assert rows[2].endswith("| 15.0 +/- 7.1 | 15.0 +/- 7.1 | 15.0 +/- 7.1 | 122 |")  # 10 and 20, sample std


def test_single_shot_report_puts_the_published_distance_beside_ours():
    from sb3_maxdiff.experiments.analyse.report import single_shot_tables

    specs = build_specs("single-shot", "reduced", [0, 1], settings=["swimmer"], steps=30_000)
    windows = np.arange(1000, 30_001, 1000)

    def result(spec):
        return {"window_returns": [1.0] * 29 + [100.0 + spec.seed], "final_distance": 50.0 * (spec.seed + 1)}

    runs = [Run(spec, windows, np.ones(len(windows)), result(spec)) for spec in specs if spec.method != "sac"]
    rows = {line.split(" | ")[1]: line for line in single_shot_tables(PRESETS["single-shot"], runs) if "| swimmer |" in line}
    # terminal windows 100 and 101, distances 50 and 100 (sample std); the authors' data at 30k: 222.1 and 40.9
    assert rows["MaxDiff"] == "| swimmer | MaxDiff | 2 | 30,000 | 100.5 +/- 0.7 | 75.0 +/- 35.4 | 222.1 |"
    assert rows["NN-MPPI"].endswith("| 40.9 |")
    short = [Run(spec, windows[:5], np.ones(5), result(spec)) for spec in build_specs("single-shot", "smoke", [0])]
    assert all(line.endswith("| n/a |") for line in single_shot_tables(PRESETS["single-shot"], short) if "| swimmer |" in line)


def test_learning_curves_of_runs_shorter_than_a_window_are_drawn(tmp_path):
    from sb3_maxdiff.experiments.analyse.report import plot_learning_curves

    # 300 steps of 1,000-step windows: no window finished, nothing to draw but the axes
    specs = build_specs("single-shot", "reduced", [0], settings=["swimmer"], methods=["maxdiff"], steps=300)
    runs = [Run(spec, np.array([], dtype=int), np.array([]), {"window_returns": [], "final_distance": 0.3}) for spec in specs]
    plot_learning_curves(PRESETS["single-shot"], runs, str(tmp_path / "curves.png"))
    assert (tmp_path / "curves.png").stat().st_size > 1000


def test_cells_say_what_the_runner_needs_of_their_environment():
    """A cell's step-count family and diagnostics grid are fields set from the table of the paper's environments."""
    from sb3_maxdiff.envs import point_mass_id
    from sb3_maxdiff.experiments.define.presets import POINT_MASS_ERGODICITY, PRESET_ENVS, SWIMMER_ERGODICITY

    for preset in PRESETS.values():
        for cell in preset.cells:
            env = PRESET_ENVS[cell.env_id]
            assert cell.family == env.family
            assert cell.ergodicity == (None if cell.single_shot else env.ergodicity)
    point_mass = _cells("point-mass-beta")[("beta=0.01", "maxdiff")]
    assert point_mass.env_id == point_mass_id("0.01", bounded_actions=False)
    assert (point_mass.family, point_mass.ergodicity) == ("point-mass", POINT_MASS_ERGODICITY)
    swimmer = _cells("swimmer-methods")[("heavy", "nnmppi")]
    assert (swimmer.family, swimmer.ergodicity) == ("mujoco", SWIMMER_ERGODICITY)
    assert _cells("ant-halfcheetah")[("halfcheetah multi-shot", "sac")].ergodicity is None
    assert PRESET_ENVS[ANT].single_shot_kwargs == {"terminate_when_upside_down": False}
    (spec,) = build_specs("swimmer-methods", "smoke", [0], settings=["heavy"], methods=["nnmppi"])
    assert spec.cell == swimmer
    with pytest.raises(ValueError, match="preset 'swimmer-methods' has no cell \\('heavy', 'ppo'\\)"):
        PRESETS["swimmer-methods"].cell("heavy", "ppo")


def test_learning_curves_carry_the_published_points_up_to_the_runs_length():
    from sb3_maxdiff.experiments.analyse.report import published_points

    preset = PRESETS["swimmer-methods"]
    assert published_points(preset, "heavy", "maxdiff", 50_000) == [(10_000, 2.0), (20_000, 39.0), (50_000, 122.0)]
    assert published_points(preset, "heavy", "sac", 50_000) == []  # the paper's SAC point is at 100k
    assert published_points(None, "heavy", "maxdiff", 50_000) == []
