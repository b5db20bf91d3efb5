"""
The paper's experiments as presets: a grid of (setting, method) cells, each a training environment and
the algorithm's keyword arguments, at three budgets (``paper``, ``reduced``, ``smoke``).

The hyperparameters come from the RL Zoo files in ``hyperparams/`` (the published
settings); a preset only states what differs from them (an alpha of a sweep, single-shot samples).
The method ``sac-zoo`` is SB3's SAC with the hyperparameters that the installed RL Zoo (rl_zoo3) ships
for the matching Gymnasium task (:mod:`~sb3_maxdiff.experiments.define.zoo_files`).
"""

import dataclasses
from collections.abc import Mapping
from typing import Any, NamedTuple

from sb3_maxdiff.envs import ANT, HALF_CHEETAH, POINT_MASS_BETAS, SWIMMER_HEAVY, SWIMMER_LIGHT, point_mass_id
from sb3_maxdiff.experiments.define.zoo_files import SAC_ZOO, literal_policy_kwargs, rl_zoo_kwargs
from sb3_maxdiff.hyperparams import load_hyperparams

METHODS = ("maxdiff", "nnmppi", "sac")
# MaxDiff with the published settings but alpha="auto" (not in the paper)
MAXDIFF_AUTO = "maxdiff-auto"
METHOD_LABELS = {
    "maxdiff": "MaxDiff",
    "nnmppi": "NN-MPPI",
    "sac": "SAC",
    SAC_ZOO: "SAC (RL Zoo)",
    MAXDIFF_AUTO: "MaxDiff (auto alpha)",
}
BUDGETS = ("paper", "reduced", "smoke")
SWIMMER_ALPHAS = (1.0, 5.0, 10.0, 50.0, 100.0, 500.0, 1000.0)
# the id of MaxDiffMPPI("Swimmer-v5"): Gymnasium's Swimmer, stock observation
STOCK_SWIMMER = "Swimmer-v5"
# ergodicity diagnostics of the point mass's training paths: (x, y) on a 20 x 20 grid over its +/-5 box
POINT_MASS_ERGODICITY = dict(dims=[0, 1], low=[-5.0, -5.0], high=[5.0, 5.0], bins=20)
# the paper's swimmers keep the tip's (x, y) as observations 0 and 1: a 40 x 40 grid of 0.5 m cells over +/-10 m
SWIMMER_ERGODICITY = dict(dims=[0, 1], low=[-10.0, -10.0], high=[10.0, 10.0], bins=40)


@dataclasses.dataclass(frozen=True)
class PresetEnv:
    """
    What the experiments know about one of their training environments (the paper's, and Gymnasium's stock
    Swimmer).

    :param family: which of a budget's step counts applies (``"point-mass"`` or ``"mujoco"``)
    :param ergodicity: exploration dims and coverage grid of the training-path diagnostics (None: no diagnostics)
    :param single_shot_kwargs: environment keyword arguments that keep a single-shot episode from ending
    """

    family: str
    ergodicity: dict[str, Any] | None = None
    single_shot_kwargs: dict[str, Any] = dataclasses.field(default_factory=dict)


PRESET_ENVS: dict[str, PresetEnv] = {
    **{
        point_mass_id(beta, bounded_actions=bounded): PresetEnv("point-mass", POINT_MASS_ERGODICITY)
        for beta in POINT_MASS_BETAS
        for bounded in (True, False)
    },
    SWIMMER_HEAVY: PresetEnv("mujoco", SWIMMER_ERGODICITY),
    SWIMMER_LIGHT: PresetEnv("mujoco", SWIMMER_ERGODICITY),
    # the Ant flips over now and then; in a single never-reset episode that must not end it
    ANT: PresetEnv("mujoco", single_shot_kwargs={"terminate_when_upside_down": False}),
    HALF_CHEETAH: PresetEnv("mujoco"),
    # Gymnasium's stock Swimmer observes no x, y: no coverage grid
    STOCK_SWIMMER: PresetEnv("mujoco"),
}


@dataclasses.dataclass(frozen=True)
class Budget:
    """
    How much of an experiment to run.

    :param steps: environment steps per run, by environment family (``"point-mass"``, ``"mujoco"``)
    :param seeds: default number of seeds per cell
    :param eval_episodes: episodes per seed for the final evaluation of a multi-shot run
    :param window: single-shot window length (environment steps)
    :param max_episode_steps: override of the episode length (``None``: the environment's 1000)
    :param checkpoint_every: save model and replay buffer every this many steps (0: never)
    :param shrink: smaller networks and planner, for tests only
    """

    steps: dict[str, int]
    seeds: int
    eval_episodes: int
    window: int = 1000
    max_episode_steps: int | None = None
    checkpoint_every: int = 0
    shrink: bool = False


BUDGET_SETTINGS: dict[str, Budget] = {
    "paper": Budget({"point-mass": 100_000, "mujoco": 1_000_000}, seeds=10, eval_episodes=100, checkpoint_every=50_000),
    "reduced": Budget({"point-mass": 10_000, "mujoco": 20_000}, seeds=5, eval_episodes=5, checkpoint_every=5_000),
    "smoke": Budget(
        {"point-mass": 300, "mujoco": 300}, seeds=2, eval_episodes=1, window=100, max_episode_steps=100, shrink=True
    ),
}

# for tests: tiny networks and planner, updates from step 50
SMOKE_MPPI = dict(
    n_samples=16, horizon=5, batch_size=32, gradient_steps=1, learning_starts=50, policy_kwargs={"net_arch": [16, 16]}
)
SMOKE_SAC = dict(batch_size=32, learning_starts=50, policy_kwargs={"net_arch": [16, 16]})


@dataclasses.dataclass(frozen=True)
class Cell:
    """
    One (setting, method) pair of an experiment.

    :param setting: the experimental condition, e.g. ``"beta=0.01"``
    :param method: ``"maxdiff"``, ``"nnmppi"``, ``"sac"``, ``"sac-zoo"`` or ``"maxdiff-auto"``
    :param env_id: training environment
    :param overrides: algorithm keyword arguments on top of the published ones (``policy_kwargs`` key by key; the smoke
        budget's tiny networks then replace ``policy_kwargs`` whole)
    :param single_shot: one never-reset episode for the whole run
    :param eval_env_ids: environments the final policy is evaluated on (multi-shot); default ``env_id``
    :param family: which of a budget's step counts applies (``"point-mass"`` or ``"mujoco"``)
    :param ergodicity: exploration dims and coverage grid of the training-path diagnostics (None: none are logged)

    :func:`preset_cell` fills ``family`` and ``ergodicity`` from what :data:`PRESET_ENVS` says of ``env_id``.
    """

    setting: str
    method: str
    env_id: str
    overrides: dict[str, Any] = dataclasses.field(default_factory=dict)
    single_shot: bool = False
    eval_env_ids: tuple[str, ...] = ()
    family: str = "mujoco"
    ergodicity: dict[str, Any] | None = None


def preset_cell(setting: str, method: str, env_id: str, **cell_kwargs: Any) -> Cell:
    """A :class:`Cell` on one of :data:`PRESET_ENVS`; a multi-shot one logs the ergodicity diagnostics (where defined)."""
    env = PRESET_ENVS[env_id]
    ergodicity = None if cell_kwargs.get("single_shot") else env.ergodicity
    return Cell(setting, method, env_id, **cell_kwargs, family=env.family, ergodicity=ergodicity)


class PublishedFinal(NamedTuple):
    """A final evaluation the paper reports for one cell: mean and std over the authors' seeds."""

    mean: float
    std: float


class PublishedFinals(NamedTuple):
    """The paper's final evaluations of one setting, one per method."""

    maxdiff: PublishedFinal
    nnmppi: PublishedFinal
    sac: PublishedFinal


@dataclasses.dataclass(frozen=True)
class Preset:
    """An experiment of the paper: its cells, the figure it reproduces, and the published numbers."""

    name: str
    figure: str
    cells: tuple[Cell, ...]
    # (setting, method) -> (mean, std) of the published final evaluation
    published_final: dict[tuple[str, str], PublishedFinal] = dataclasses.field(default_factory=dict)
    # (setting, method) -> {steps: mean training return over seeds (window return for single-shot runs)}
    published_curve: dict[tuple[str, str], dict[int, float]] = dataclasses.field(default_factory=dict)
    # single-shot: (setting, method) -> {steps: mean over seeds of the distance travelled along x by then}
    published_distance: dict[tuple[str, str], dict[int, float]] = dataclasses.field(default_factory=dict)
    # what the published numbers are, where they come from, and how they differ from ours
    notes: str = ""
    # whether its settings are the paper's (False: a variant the paper did not run, e.g. another option)
    paper: bool = True

    @property
    def settings(self) -> list[str]:
        return list(dict.fromkeys(cell.setting for cell in self.cells))

    @property
    def methods(self) -> list[str]:
        return list(dict.fromkeys(cell.method for cell in self.cells))

    def cell(self, setting: str, method: str) -> Cell:
        for cell in self.cells:
            if (cell.setting, cell.method) == (setting, method):
                return cell
        raise ValueError(f"preset {self.name!r} has no cell ({setting!r}, {method!r})")


def _grid(settings: dict[str, str], methods: tuple[str, ...] = METHODS, **cell_kwargs: Any) -> tuple[Cell, ...]:
    return tuple(
        preset_cell(setting, method, env_id, **cell_kwargs) for setting, env_id in settings.items() for method in methods
    )


def _single_shot_cells(
    settings: dict[str, str], maxdiff: dict[str, Any], planner: dict[str, Any], methods: tuple[str, ...] = METHODS
) -> tuple[Cell, ...]:
    overrides = {"maxdiff": {**planner, **maxdiff}, "nnmppi": planner, "sac": {}}
    return tuple(
        preset_cell(setting, method, env_id, overrides=overrides[method], single_shot=True)
        for setting, env_id in settings.items()
        for method in methods
    )


_P = PublishedFinal
# the point mass's final evaluations by beta (Fig. 1)
_PM_FINAL = {
    "1": PublishedFinals(maxdiff=_P(-56.5, 8.5), nnmppi=_P(-24.1, 3.3), sac=_P(-127.0, 25.9)),
    "0.1": PublishedFinals(maxdiff=_P(-62.6, 23.9), nnmppi=_P(-44.5, 9.1), sac=_P(-165.2, 31.8)),
    "0.01": PublishedFinals(maxdiff=_P(-269.9, 257.0), nnmppi=_P(-355.0, 322.0), sac=_P(-646.2, 300.0)),
    "0.001": PublishedFinals(maxdiff=_P(-629.6, 278.0), nnmppi=_P(-862.0, 217.0), sac=_P(-975.4, 100.0)),
}
_PM_CURVE = {
    ("beta=0.01", "maxdiff"): {10_000: -560.0, 20_000: -385.0},
    ("beta=0.01", "nnmppi"): {10_000: -942.0, 20_000: -633.0},
    ("beta=0.01", "sac"): {10_000: -2270.0, 20_000: -1839.0},
    ("beta=1", "maxdiff"): {10_000: -74.0, 20_000: -54.0},
    ("beta=1", "nnmppi"): {10_000: -49.0, 20_000: -40.0},
    ("beta=1", "sac"): {10_000: -467.0, 20_000: -266.0},
}
# the Swimmer's final evaluations by tail (Fig. 3), after 1M steps
_SWIMMER_FINAL = {
    "heavy": PublishedFinals(maxdiff=_P(151.7, 11.2), nnmppi=_P(33.6, 10.6), sac=_P(33.5, 17.7)),
    "light": PublishedFinals(maxdiff=_P(375.3, 10.2), nnmppi=_P(331.7, 100.0), sac=_P(96.4, 20.4)),
}
# the paper's alpha sweep on the heavy-tail swimmer (Fig. 3b): mean final evaluation over the authors' 10 seeds after
# 1M steps, from their raw data, per alpha (NN-MPPI: 33.6)
SWIMMER_ALPHA_PUBLISHED = {1.0: 35.4, 5.0: 36.7, 10.0: 57.0, 50.0: 145.9, 100.0: 151.7, 500.0: -36.3, 1000.0: -84.7}
# the paper's training curves (Fig. 3c, 10 seeds). Heavy tail: the paper's points (the 100k ones read off the plot);
# they are the mean over the authors' seeds of the 5 training episodes ending at each step count (their data gives
# 1.7 / 39.4 / 122.1 for MaxDiff). Light tail: that same reading of the authors' data folders
# SwimmerEnv_v3_Light_H40_alpha100 and mppi/SwimmerEnv_v3_Light_H40 (reward_data.pkl, seeds 13-913)
_SWIMMER_CURVE = {
    ("heavy", "maxdiff"): {10_000: 2.0, 20_000: 39.0, 50_000: 122.0, 100_000: 147.0},
    ("heavy", "nnmppi"): {10_000: 5.0, 20_000: 10.0, 50_000: 16.0, 100_000: 22.0},
    ("heavy", "sac"): {100_000: 37.0},
    ("light", "maxdiff"): {10_000: 73.4, 20_000: 149.3, 50_000: 323.7, 100_000: 380.9},
    ("light", "nnmppi"): {10_000: 22.1, 20_000: 118.0, 50_000: 224.0, 100_000: 284.8},
}
# mean over the authors' 10 published seeds of the 1000-step window return ending at each step count (their data
# folders SwimmerEnv_v3_Light_H40_alpha50_singleshot and SwimmerEnv_v3_Light_singleshot, AntEnv_v3_orig_H20_*singleshot)
_SINGLE_SHOT_CURVE = {
    ("swimmer", "maxdiff"): {10_000: 160.7, 20_000: 239.8, 30_000: 259.2, 50_000: 289.3, 100_000: 296.1, 1_000_000: 145.3},
    ("swimmer", "nnmppi"): {10_000: 43.3, 20_000: 36.3, 30_000: 62.6, 50_000: 77.5, 100_000: 68.3, 1_000_000: 30.6},
    ("ant", "maxdiff"): {10_000: -6.9, 20_000: -2.6, 50_000: -0.9, 100_000: 133.2, 1_000_000: 665.3},
    ("ant", "nnmppi"): {10_000: 7.6, 20_000: -7.3, 50_000: 9.8, 100_000: 47.1, 1_000_000: 404.6},
}
# the distance travelled along x by each step count, mean over the same 10 seeds: the window returns up to then summed,
# times the Swimmer's time step (0.04 s), since its reward is the x velocity less a control cost of at most 2e-4 per
# step; at 1M steps this reading gives 8149.8 and 2043.1, the paper's 8156 +/- 2605 and 2048 +/- 2817 less that cost
_SINGLE_SHOT_DISTANCE = {
    ("swimmer", "maxdiff"): {10_000: 29.9, 20_000: 118.4, 30_000: 222.1, 1_000_000: 8149.8},
    ("swimmer", "nnmppi"): {10_000: 7.4, 20_000: 19.9, 30_000: 40.9, 1_000_000: 2043.1},
}
# the authors' single-shot settings (maxdiff_singleshot.yaml, mppi_singleshot.yaml): the Swimmer plans with K = 1000
# samples and takes 10 model updates per step, MaxDiff with alpha 50 and the windowed entropy; the Ant keeps its
# multi-shot planner (K = 1000) with alpha 15
_SINGLE_SHOT_SWIMMER_PLANNER = {"n_samples": 1000, "gradient_steps": 10}
_SINGLE_SHOT_SWIMMER_MAXDIFF = {"alpha": 50.0, "window": True}
# the short-horizon planner with a learned terminal value (not in the paper): TD-MPC's discount for 1000-step episodes
# (runs of 2026-12-03): the reward head keeps the published TD-like discount 0.95, as those runs had it; the library's
# default with a terminal value is now 0
TERMINAL_VALUE_PLANNER = {"horizon": 10, "terminal_value": True, "gamma": 0.99, "policy_kwargs": {"reward_discount": 0.95}}
# the planner with an actor-critic (not in the paper): the critic's Q(s_H, pi(s_H)) ends each path, the actor proposes
# 5% of the samples, SAC's 256x256 networks, no pull toward the planner; the discount is the YAML's (0.999 for the
# Swimmers, RL Zoo's, and 0.99 elsewhere); the reward head keeps the published 0.95, as the runs fixed on 2026-12-07 had
# it (the library's default with a terminal value is now 0)
CRITIC_PLANNER = {"terminal_value": "q", "policy_kwargs": {"reward_discount": 0.95}}
# the same with the library's reward head for a terminal value: the one-step reward, on the critic's scale
ONE_STEP_CRITIC_PLANNER = {"terminal_value": "q"}


def _final_table(numbers: Mapping[str, PublishedFinals], setting_format: str) -> dict[tuple[str, str], PublishedFinal]:
    """The published finals by (setting, method), each setting named by ``setting_format``."""
    return {
        (setting_format.format(key), method): final
        for key, finals in numbers.items()
        for method, final in finals._asdict().items()
    }


PRESETS: dict[str, Preset] = {
    preset.name: preset
    for preset in (
        Preset(
            "point-mass-beta",
            "Fig. 1: point mass, controllability beta in {1, 0.1, 0.01, 0.001}, unbounded actions as in the authors' runs",
            _grid({f"beta={beta}": point_mass_id(beta, bounded_actions=False) for beta in POINT_MASS_BETAS}),
            _final_table(_PM_FINAL, "beta={}"),
            _PM_CURVE,
        ),
        Preset(
            "point-mass-beta-bounded",
            "Fig. 1 with actions clipped to [-1, 1] (env and planner): the bounded variant of point-mass-beta",
            _grid({f"beta={beta}": point_mass_id(beta) for beta in POINT_MASS_BETAS}),
            _final_table(_PM_FINAL, "beta={}"),
            _PM_CURVE,
            paper=False,
        ),
        Preset(
            "swimmer-alpha",
            "Fig. 3b: MaxDiff on the heavy-tail swimmer across alpha",
            tuple(
                preset_cell(f"alpha={alpha:g}", "maxdiff", SWIMMER_HEAVY, overrides={"alpha": alpha})
                for alpha in SWIMMER_ALPHAS
            ),
        ),
        Preset(
            "swimmer-methods",
            "Fig. 3c: MaxDiff (alpha 100) vs NN-MPPI vs SAC on the heavy- and light-tail swimmer, "
            "and SB3's SAC with RL Zoo's tuned Swimmer-v4 hyperparameters (sac-zoo)",
            _grid({"heavy": SWIMMER_HEAVY, "light": SWIMMER_LIGHT}, (*METHODS, SAC_ZOO)),
            _final_table(_SWIMMER_FINAL, "{}"),
            _SWIMMER_CURVE,
        ),
        Preset(
            "alpha-auto",
            "Not in the paper: MaxDiff with alpha='auto' against the published (hand-tuned) alpha and NN-MPPI, on bodies "
            "whose published alphas differ",
            _grid(
                {
                    "heavy": SWIMMER_HEAVY,
                    "light": SWIMMER_LIGHT,
                    "beta=0.01": point_mass_id("0.01", bounded_actions=False),
                    "halfcheetah": HALF_CHEETAH,
                },
                (MAXDIFF_AUTO, "maxdiff", "nnmppi"),
            ),
            paper=False,
        ),
        Preset(
            "swimmer-bfloat16",
            "Not in the paper: MaxDiff (alpha 100) on the heavy-tail swimmer with the planner's rollouts in bfloat16 "
            "(planner_dtype='bfloat16'), to set beside the float32 runs of swimmer-methods; only sensible where the "
            "hardware multiplies bfloat16 natively",
            (preset_cell("heavy", "maxdiff", SWIMMER_HEAVY, overrides={"planner_dtype": "bfloat16"}),),
            paper=False,
        ),
        Preset(
            "look-back",
            "Not in the paper: MaxDiff on the point mass (beta 0.01) with the path entropy taken over the last 30 "
            "observations followed by each planned path (history=30, the horizon) against the published planned path "
            "alone (history=0), published settings otherwise",
            tuple(
                preset_cell(f"history={history}", "maxdiff", point_mass_id("0.01", bounded_actions=False), overrides=kwargs)
                for history, kwargs in ((0, {}), (30, {"history": 30}))
            ),
            paper=False,
        ),
        Preset(
            "swimmer-stock",
            "The design card's id: MaxDiff (alpha 100) vs NN-MPPI on Gymnasium's Swimmer-v5, whose observation has "
            "no x, y (the path entropy is taken over the tip's velocity, obs 3 and 4)",
            _grid({"stock": STOCK_SWIMMER}, ("maxdiff", "nnmppi")),
            paper=False,
            notes="Not in the paper: its swimmers keep the tip's x, y in the observation (sb3_maxdiff/Swimmer-heavy-v0 "
            "is this body with x, y kept), so MaxDiff's entropy there is over position and velocity.",
        ),
        Preset(
            "swimmer-transfer",
            "Fig. 4: trained on one tail, evaluated on both",
            _grid(
                {"trained light": SWIMMER_LIGHT, "trained heavy": SWIMMER_HEAVY},
                eval_env_ids=(SWIMMER_LIGHT, SWIMMER_HEAVY),
            ),
        ),
        Preset(
            "single-shot",
            "Fig. 5: single-shot light-tail swimmer (alpha 50, windowed entropy, K 1000, 10 model updates per step) "
            "and Ant (alpha 15)",
            _single_shot_cells({"swimmer": SWIMMER_LIGHT}, _SINGLE_SHOT_SWIMMER_MAXDIFF, _SINGLE_SHOT_SWIMMER_PLANNER)
            + _single_shot_cells({"ant": ANT}, {"alpha": 15.0}, {}),
            published_curve=_SINGLE_SHOT_CURVE,
            published_distance=_SINGLE_SHOT_DISTANCE,
            notes="The published single-shot Swimmer runs all used the light tail (the authors' data folders "
            "SwimmerEnv_v3_Light_*_singleshot) and ran 1M steps; the authors' multi-shot mppi.yaml says max_frames "
            "100000 for the Swimmer, while their published multi-shot data ran 1M steps.",
        ),
        Preset(
            "single-shot-jitter",
            "Not in the paper's settings: the single-shot light-tail swimmer's MaxDiff (as in single-shot) with the "
            "authors' jitter of the path entropy's covariance, a N(0, 1e-8) draw on every entry "
            "(entropy_jitter='random', the default since 2026-12-03), where the published runs here added 1e-8 * I",
            _single_shot_cells(
                {"swimmer random-jitter": SWIMMER_LIGHT},
                {**_SINGLE_SHOT_SWIMMER_MAXDIFF, "entropy_jitter": "random"},
                _SINGLE_SHOT_SWIMMER_PLANNER,
                methods=("maxdiff",),
            ),
            published_curve={("swimmer random-jitter", "maxdiff"): _SINGLE_SHOT_CURVE[("swimmer", "maxdiff")]},
            published_distance={("swimmer random-jitter", "maxdiff"): _SINGLE_SHOT_DISTANCE[("swimmer", "maxdiff")]},
            notes="The authors' code draws the jitter (mpc_lib/entropy.py); the published numbers are those of their "
            "single-shot MaxDiff, made with it.",
            paper=False,
        ),
        Preset(
            "terminal-value",
            "Not in the paper: the heavy-tail swimmer planned 10 steps ahead with a learned terminal value "
            "(terminal_value=True, gamma 0.99), MaxDiff (alpha 100) and NN-MPPI, beside the published 40-step MaxDiff "
            "and SB3's SAC with RL Zoo's Swimmer hyperparameters (sac-zoo)",
            (
                *(
                    preset_cell("H=10 value", method, SWIMMER_HEAVY, overrides={**overrides, **TERMINAL_VALUE_PLANNER})
                    for method, overrides in (("maxdiff", {"entropy_jitter": "diagonal"}), ("nnmppi", {}))
                ),
                preset_cell("H=40", "maxdiff", SWIMMER_HEAVY, overrides={"entropy_jitter": "diagonal"}),
                preset_cell("heavy", SAC_ZOO, SWIMMER_HEAVY),
            ),
            published_curve={("H=40", "maxdiff"): _SWIMMER_CURVE[("heavy", "maxdiff")]},
            notes="The MaxDiff cells state entropy_jitter='diagonal' (1e-8 * I), the jitter of the published 40-step "
            "runs here (swimmer-methods), so that the horizon and the value are the only difference.",
            paper=False,
        ),
        Preset(
            "past-horizon",
            "Not in the paper: the paper's multi-shot HalfCheetah (horizon 10) with the published MaxDiff beside SB3's "
            "SAC with RL Zoo's HalfCheetah hyperparameters (sac-zoo), and MaxDiff with an actor-critic (terminal_value="
            "'q') there and on the heavy-tail swimmer at H = 10 (gamma 0.999): with the reward head the runs of "
            "2026-12-07 had (the published 0.95), and with the one-step reward head ('... one-step')",
            (
                preset_cell("halfcheetah", "maxdiff", HALF_CHEETAH),
                preset_cell("halfcheetah", SAC_ZOO, HALF_CHEETAH),
                *(
                    cell
                    for suffix, critic in (("", CRITIC_PLANNER), (" one-step", ONE_STEP_CRITIC_PLANNER))
                    for cell in (
                        preset_cell(f"halfcheetah critic{suffix}", "maxdiff", HALF_CHEETAH, overrides=critic),
                        preset_cell(
                            f"swimmer critic{suffix}",
                            "maxdiff",
                            SWIMMER_HEAVY,
                            overrides={"horizon": 10, "entropy_jitter": "diagonal", **critic},
                        ),
                    )
                ),
            ),
            paper=False,
        ),
        Preset(
            "ant-halfcheetah",
            "Supplementary: Ant and HalfCheetah, multi-shot and single-shot (K 1000 for HalfCheetah)",
            _grid({"ant multi-shot": ANT, "halfcheetah multi-shot": HALF_CHEETAH})
            + _single_shot_cells({"ant single-shot": ANT}, {"alpha": 15.0}, {})
            + _single_shot_cells({"halfcheetah single-shot": HALF_CHEETAH}, {}, {"n_samples": 1000}),
        ),
    )
}


def get_preset(name: str) -> Preset:
    if name not in PRESETS:
        raise ValueError(f"preset must be one of {sorted(PRESETS)}, got {name!r}")
    return PRESETS[name]


def get_budget(name: str) -> Budget:
    if name not in BUDGET_SETTINGS:
        raise ValueError(f"budget must be one of {list(BUDGET_SETTINGS)}, got {name!r}")
    return BUDGET_SETTINGS[name]


def published_kwargs(method: str, env_id: str) -> dict[str, Any]:
    """
    The algorithm keyword arguments of ``hyperparams/<method>.yml`` for ``env_id`` (for ``sac-zoo``: of the
    installed RL Zoo's ``sac.yml``).
    """
    if method == MAXDIFF_AUTO:
        return {**published_kwargs("maxdiff", env_id), "alpha": "auto"}
    entry = rl_zoo_kwargs(env_id) if method == SAC_ZOO else dict(load_hyperparams(method)[env_id])
    for key in ("n_timesteps", "policy"):
        entry.pop(key, None)
    if isinstance(entry.get("policy_kwargs"), str):
        entry["policy_kwargs"] = literal_policy_kwargs(entry["policy_kwargs"])
    return entry


def with_overrides(kwargs: Mapping[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """``kwargs`` with ``overrides`` on top, ``policy_kwargs`` key by key."""
    merged = {**kwargs, **overrides}
    if "policy_kwargs" in overrides:  # a new dict: the preset's own stays as it is
        merged["policy_kwargs"] = {**kwargs.get("policy_kwargs", {}), **overrides["policy_kwargs"]}
    return merged


def cell_kwargs(cell: Cell, budget: Budget) -> dict[str, Any]:
    """Everything the algorithm of ``cell`` is built with under ``budget``."""
    kwargs = with_overrides(published_kwargs(cell.method, cell.env_id), cell.overrides)
    if budget.shrink:
        kwargs.update(SMOKE_SAC if cell.method in ("sac", SAC_ZOO) else SMOKE_MPPI)  # its tiny networks, whole
    return kwargs
