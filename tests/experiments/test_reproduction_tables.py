"""
The tables of REPRODUCTION.md against the per-episode CSVs they were computed from: every per-seed value and every
mean +/- std (ddof 1) over seeds, recomputed from its file in docs/reproduction and rounded to the digits the table
shows, must match.
"""

import csv
import io
import math
import pathlib
import re
import zipfile

import numpy as np
import pytest
import torch as th

from sb3_maxdiff.experiments.analyse.episodes import DIAGNOSTICS, SETTING_SEPARATOR
from sb3_maxdiff.experiments.analyse.stats import mann_whitney_pvalue, welch_ttest
from sb3_maxdiff.experiments.analyse.tables import per_seed_values

ROOT = pathlib.Path(__file__).resolve().parents[2]
METHODS = {
    "MaxDiff": "maxdiff",
    "MaxDiff, alpha 100": "maxdiff",
    "MaxDiff (auto alpha)": "maxdiff-auto",
    "MaxDiff (bfloat16)": "maxdiff",
    "NN-MPPI": "nnmppi",
    "SAC": "sac",
    "SAC (paper's)": "sac",
    "SAC (RL Zoo)": "sac-zoo",
}
EVALUATION = "final evaluation (mean per seed)"
REPRODUCTION = ROOT / "docs" / "reproduction"
SWIMMER_COLUMNS = [
    "last episode at 10,000",
    "last episode at 20,000",
    "last episode at 50,000",
    "running max at 50,000",
    EVALUATION,
    "coverage (end of training)",
    "msd_exponent (median over episodes)",
    "autocorr_time (median over episodes)",
]


def table_after(marker: str, skip: int = 0, document: str = "REPRODUCTION.md") -> tuple[list[str], list[list[str]]]:
    """
    The header cells and the cells of each row of the first markdown table from the line that starts with
    ``marker`` on (the marker may be the table's header), or of the table ``skip`` tables further on, in
    ``document`` (a path from the repository's root).
    """
    lines = (ROOT / document).read_text().splitlines()
    start = next(index for index, line in enumerate(lines) if line.startswith(marker))
    starts = [i for i in range(start, len(lines)) if lines[i].startswith("|") and not lines[i - 1].startswith("|")]
    first = starts[skip]
    rows = []
    for line in lines[first:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip("|").split("|")])
    return rows[0], rows[2:]


def assert_shown_as(value: float, shown: str, where: str) -> None:
    """``value`` rounds to ``shown`` (a table cell, e.g. "-77" or "0.73") at the digits the cell has."""
    decimals = len(shown.split(".")[1]) if "." in shown else 0
    assert not math.isnan(value), where
    assert abs(value - float(shown)) <= 0.5 * 10**-decimals + 1e-9, f"{where}: {value} is not shown as {shown}"


def assert_mean_std_shown_as(per_seed: list[float], cell: str, where: str) -> None:
    """A "mean +/- std" cell against the per-seed values (std with ddof 1)."""
    mean, std = cell.split(" +/- ")
    assert_shown_as(float(np.mean(per_seed)), mean, where)
    assert_shown_as(float(np.std(per_seed, ddof=1)), std, where)


@pytest.mark.parametrize(
    "marker, csv_name",
    [
        ("### Per seed", "swimmer_heavy_50k.csv"),
        ("### Result: MaxDiff ahead on every seed", "swimmer_stock_50k.csv"),
        ("### Result: no detectable difference from either, at 5 seeds", "alpha_auto_heavy_50k.csv"),
        ("### Light tail, result", "swimmer_light_50k.csv"),
        ("### Result: no detectable difference from either, at 3 seeds", "alpha_auto_light_50k.csv"),
        ("Per seed (bfloat16", "swimmer_bf16_50k.csv"),
        ("Per seed (retrain", "swimmer_heavy_retrain_50k.csv"),
        ("Per seed (seeds 5-9", "swimmer_heavy_seeds5_9_50k.csv"),
    ],
)
def test_swimmer_per_seed_tables_are_those_of_their_csv(marker, csv_name):
    values = per_seed_values(str(ROOT / "docs" / "reproduction" / csv_name), [10_000, 20_000, 50_000])
    _, rows = table_after(marker)
    assert len([row for row in rows if row[1].isdigit()]) >= 3
    for method, seed, *cells in rows:
        if seed.isdigit():
            for quantity, shown in zip(SWIMMER_COLUMNS, cells):
                assert_shown_as(values[quantity][METHODS[method]][int(seed)], shown, f"{csv_name}: {method} seed {seed}")
            continue
        method = method.replace("**", "").removesuffix(", mean +/- std")  # the means below the seeds
        for quantity, cell in zip(SWIMMER_COLUMNS, cells):
            per_seed = list(values[quantity][METHODS[method]].values())
            assert_mean_std_shown_as(per_seed, cell, f"{csv_name}: {method} {quantity}")


@pytest.mark.parametrize(
    "marker, csv_name, quantities",
    [
        (
            "Per seed (last training episode at 20k / running max at 20k / mean of the 5 final evaluation",
            "point_mass_beta1_20k_batched.csv",
            ["last episode at 20,000", "running max at 20,000", EVALUATION],
        ),
        (
            "Per seed (seeds 10-14; last training episode at 20k / mean of the 5 final evaluation",
            "point_mass_beta0.001_20k_seeds10-14_batched.csv",
            ["last episode at 20,000", EVALUATION],
        ),
    ],
)
def test_point_mass_per_seed_tables_are_those_of_their_csv(marker, csv_name, quantities):
    values = per_seed_values(str(ROOT / "docs" / "reproduction" / csv_name), [20_000])
    header, rows = table_after(marker)
    assert header == ["seed", "MaxDiff", "NN-MPPI", "SAC"] and len(rows) >= 3
    for seed, *cells in rows:
        for method, cell in zip(header[1:], cells):
            for quantity, shown in zip(quantities, cell.split(" / "), strict=True):
                assert_shown_as(values[quantity][METHODS[method]][int(seed)], shown, f"{csv_name}: {method} seed {seed}")


def test_a_wrong_cell_is_caught():
    with pytest.raises(AssertionError, match="is not shown as -78"):
        assert_shown_as(-77.4, "-78", "here")
    assert_shown_as(-77.4, "-77", "here")
    assert_shown_as(0.734, "0.73", "here")


def quantity_of(label: str, steps: int) -> str | None:
    """The per_seed_values quantity a row label of a means table names (``steps`` where the label gives none)."""
    found = re.search(r"at (\d+)k", label)
    at = f"{int(found.group(1)) * 1000:,}" if found else f"{steps:,}"
    for pattern, quantity in (
        (r"last (training )?episode", f"last episode at {at}"),
        (r"running max", f"running max at {at}"),
        (r"final evaluation", EVALUATION),
        (r"coverage", "coverage (end of training)"),
        (r"MSD exponent", "msd_exponent (median over episodes)"),
        (r"autocorrelation time", "autocorr_time (median over episodes)"),
    ):
        if re.match(pattern, label):
            return quantity
    return None


def merged_values(csv_names: list[str], steps: list[int]) -> dict:
    """quantity -> method -> seed -> value over several CSVs of one cell (disjoint seeds)."""
    merged: dict = {}
    for name in csv_names:
        for quantity, by_method in per_seed_values(str(REPRODUCTION / name), steps).items():
            for method, by_seed in by_method.items():
                merged.setdefault(quantity, {}).setdefault(method, {}).update(by_seed)
    return merged


@pytest.mark.parametrize(
    "marker, csv_names, steps",
    [
        ("| 10 seeds, beta = 0.01 |", ["point_mass_beta0.01_20k_batched.csv"], 20_000),
        ("| 10 seeds, beta = 0.001 |", ["point_mass_beta0.001_20k_batched.csv"], 20_000),
        (
            "| beta = 0.001, 20k steps |",
            ["point_mass_beta0.001_20k_batched.csv", "point_mass_beta0.001_20k_seeds10-14_batched.csv"],
            20_000,
        ),
        ("| 3 seeds, beta = 1 |", ["point_mass_beta1_20k_batched.csv"], 20_000),
        ("| 10 seeds, beta = 0.001, 10k steps |", ["point_mass_beta0.001_10k_batched.csv"], 10_000),
        ("Each batch (10 agents x 10k steps) trained in", ["point_mass_beta0.01_10k_batched.csv"], 10_000),
    ],
)
def test_point_mass_means_are_those_of_their_csv(marker, csv_names, steps):
    values = merged_values(csv_names, [10_000, 20_000])
    header, rows = table_after(marker)
    columns = [(index, METHODS[name]) for index, name in enumerate(header) if name in METHODS]
    assert len(columns) >= 2, header
    checked = 0
    for label, *cells in rows:
        seeds = None
        subset = re.match(r"seeds (\d+)-(\d+): (.*)", label)
        if subset:
            seeds, label = range(int(subset.group(1)), int(subset.group(2)) + 1), subset.group(3)
        quantity = quantity_of(label, steps)
        assert quantity is not None, f"no quantity for the row {label!r}"
        assert quantity in values, f"{csv_names} hold no {quantity!r}"
        for index, method in columns:
            per_seed = [value for seed, value in values[quantity][method].items() if seeds is None or seed in seeds]
            assert_mean_std_shown_as(per_seed, cells[index - 1], f"{marker} {label}, {method}")
            checked += 1
    assert checked >= 2 * len(columns)


# runs without path diagnostics of the plane: Swimmer-v5's observation holds no (x, y) position, and the HalfCheetah's
# preset environment has no coverage grid (its runs log none)
NO_POSITION = {"swimmer_stock_50k.csv", "halfcheetah_horizon_100k.csv"}


def test_every_run_csv_holds_the_diagnostics_of_each_training_episode():
    """Every diagnostic figure of the document can be recomputed: each training episode carries its own."""
    run_csvs = [path for path in sorted(REPRODUCTION.glob("*.csv")) if "kind" in path.read_text().splitlines()[0]]
    assert len(run_csvs) >= 9
    for path in run_csvs:
        with path.open() as handle:
            rows = list(csv.DictReader(handle))
        assert set(DIAGNOSTICS) <= set(rows[0]), path.name
        training = [row for row in rows if row["kind"] == "train"]
        filled = {name: sum(row[name] != "" for row in training) for name in DIAGNOSTICS}
        expected = 0 if path.name in NO_POSITION else len(training)
        assert training and filled == dict.fromkeys(DIAGNOSTICS, expected), (path.name, filled, len(training))


@pytest.mark.parametrize(
    "marker, csv_name, n_rows",
    [("| method | 10k | 20k | 50k | running max 50k | final eval | published 10k", "swimmer_heavy_50k.csv", 4)],
)
def test_swimmer_means_are_those_of_the_csv(marker, csv_name, n_rows):
    values = per_seed_values(str(REPRODUCTION / csv_name), [10_000, 20_000, 50_000])
    _, rows = table_after(marker)
    assert len(rows) == n_rows
    for method, *cells in rows:
        for quantity, cell in zip(SWIMMER_COLUMNS[:5], cells):
            per_seed = list(values[quantity][METHODS[method]].values())
            assert_mean_std_shown_as(per_seed, cell, f"{method} {quantity}")


def assert_pvalue_shown_as(pvalue: float, shown: str, where: str) -> None:
    if shown.startswith("<"):
        assert pvalue < float(shown.lstrip("< ")), f"{where}: {pvalue} is not {shown}"
    else:
        assert_shown_as(pvalue, shown, where)


@pytest.mark.parametrize(
    "marker, skip, csv_names, steps",
    [
        ("## beta = 0.01 in the authors' semantics, 20k steps", 1, ["point_mass_beta0.01_20k_batched.csv"], 20_000),
        ("## beta = 0.001 in the authors' semantics, 20k steps", 1, ["point_mass_beta0.001_20k_batched.csv"], 20_000),
        (
            "| seeds 0-14 | MaxDiff vs NN-MPPI |",
            0,
            ["point_mass_beta0.001_20k_batched.csv", "point_mass_beta0.001_20k_seeds10-14_batched.csv"],
            20_000,
        ),
        ("## beta = 1 in the authors' semantics", 2, ["point_mass_beta1_20k_batched.csv"], 20_000),
    ],
)
def test_point_mass_pvalues_are_those_of_their_csv(marker, skip, csv_names, steps):
    """Welch's (and where shown Mann-Whitney's) p between the per-seed values of two methods."""
    values = merged_values(csv_names, [10_000, 20_000])
    header, rows = table_after(marker, skip)
    pairs = [tuple(METHODS[name] for name in column.split(" vs ")) for column in header[1:]]
    checked = 0
    for label, *cells in rows:
        if "pooled" in label:  # every evaluation episode as a sample: not per-seed values
            continue
        quantity = quantity_of(label, steps)
        assert quantity is not None, f"no quantity for the row {label!r}"
        assert quantity in values, f"{csv_names} hold no {quantity!r}"
        for (a, b), cell in zip(pairs, cells):
            x, y = (list(values[quantity][method].values()) for method in (a, b))
            where = f"{marker}: {label}, {a} vs {b}"
            welch = re.match(r"(?:Welch )?([<\d. ]+?)(?:, rank ([\d.]+))?$", cell)
            assert welch is not None, cell
            assert_pvalue_shown_as(welch_ttest(x, y).pvalue, welch.group(1), where)
            if welch.group(2):
                assert_pvalue_shown_as(mann_whitney_pvalue(x, y), welch.group(2), where + " (Mann-Whitney)")
            checked += 1
    assert checked >= 2 * len(pairs)


@pytest.mark.parametrize(
    "marker, csv_name, n_rows",
    [
        ("| MaxDiff against | training return at 50k", "swimmer_heavy_50k.csv", 3),
        ("| MaxDiff against, light tail |", "swimmer_light_50k.csv", 1),
        ("| MaxDiff against, retrain |", "swimmer_heavy_retrain_50k.csv", 1),
    ],
)
def test_swimmer_tests_are_those_of_the_csv(marker, csv_name, n_rows):
    """Mann-Whitney p (Welch p) of MaxDiff against each method, training return at 50k and final evaluation."""
    values = per_seed_values(str(REPRODUCTION / csv_name), [50_000])
    _, rows = table_after(marker)
    assert len(rows) == n_rows
    for other, *cells in rows:
        assert_swimmer_tests_shown(values, "maxdiff", METHODS[other], cells, f"{csv_name}: MaxDiff vs {other}")


def assert_swimmer_tests_shown(values: dict, method: str, other: str, cells: list[str], where: str) -> None:
    """Cells "Mann-Whitney p (Welch p)" of the training return at 50k and the final evaluation, ``method`` vs ``other``."""
    for quantity, cell in zip(["last episode at 50,000", EVALUATION], cells):
        shown = re.match(r"([\d.]+) \(([\d.]+)\)", cell)
        assert shown is not None, f"{where}: {cell!r} is not 'Mann-Whitney p (Welch p)'"
        rank, welch = shown.groups()
        x, y = (list(values[quantity][key].values()) for key in (method, other))
        assert_pvalue_shown_as(mann_whitney_pvalue(x, y), rank, f"{where}, {quantity}")
        assert_pvalue_shown_as(welch_ttest(x, y).pvalue, welch, f"{where}, {quantity} (Welch)")


def test_heavy_tail_ten_seed_tests_are_those_of_the_csvs():
    """Seeds 5-9 alone, then pooled with the retrain's seeds 0-4: 5 against 5, then 10 against 10."""
    halves = ["swimmer_heavy_retrain_50k.csv", "swimmer_heavy_seeds5_9_50k.csv"]
    _, rows = table_after("| MaxDiff against, 10 seeds |")
    assert [row[0] for row in rows] == ["NN-MPPI, seeds 5-9 (5 against 5)", "NN-MPPI, seeds 0-9 (10 against 10)"]
    for (label, *cells), names in zip(rows, [halves[1:], halves]):
        values = merged_values(names, [50_000])
        assert all(len(values[EVALUATION][key]) == 5 * len(names) for key in ("maxdiff", "nnmppi"))
        assert_swimmer_tests_shown(values, "maxdiff", "nnmppi", cells[:2], label)


def test_bfloat16_against_float32_table_is_that_of_its_csvs():
    """The bfloat16 MaxDiff seeds beside the float32 MaxDiff seeds 0-2 of the heavy-tail retrain, seed by seed."""
    bf16, float32 = (
        per_seed_values(str(REPRODUCTION / name), [50_000])
        for name in ("swimmer_bf16_50k.csv", "swimmer_heavy_retrain_50k.csv")
    )
    columns = [
        (bf16, "last episode at 50,000"),
        (float32, "last episode at 50,000"),
        (bf16, EVALUATION),
        (float32, EVALUATION),
    ]
    _, rows = table_after("| bfloat16 against float32")
    assert [row[0] for row in rows] == ["0", "1", "2", "mean +/- std"]
    for seed, *cells in rows:
        for (values, quantity), cell in zip(columns, cells):
            per_seed = [values[quantity]["maxdiff"][index] for index in range(3)]
            if seed.isdigit():
                assert_shown_as(per_seed[int(seed)], cell, f"{quantity}, seed {seed}")
            else:
                assert_mean_std_shown_as(per_seed, cell, quantity)


@pytest.mark.parametrize(
    "marker, auto_csv, others_csv, steps, others",
    [
        (
            "| MaxDiff (auto alpha) against |",
            "alpha_auto_heavy_50k.csv",
            "swimmer_heavy_50k.csv",
            50_000,
            ["NN-MPPI", "MaxDiff, alpha 100"],
        ),
        (
            "| MaxDiff (auto alpha), point mass, against |",
            "alpha_auto_point_mass_20k.csv",
            "alpha_auto_point_mass_20k.csv",
            20_000,
            ["NN-MPPI", "MaxDiff"],
        ),
        (
            "| MaxDiff (auto alpha), light tail, against |",
            "alpha_auto_light_50k.csv",
            "swimmer_light_50k.csv",
            50_000,
            ["NN-MPPI", "MaxDiff, alpha 100"],
        ),
    ],
)
def test_auto_alpha_tests_are_those_of_the_csvs(marker, auto_csv, others_csv, steps, others):
    """The automatic alpha's seeds (5, or 3) against the 5 seeds of NN-MPPI and of the published alpha."""
    auto = per_seed_values(str(REPRODUCTION / auto_csv), [steps])
    other_values = per_seed_values(str(REPRODUCTION / others_csv), [steps])
    _, rows = table_after(marker)
    assert [row[0] for row in rows] == others
    for other, *cells in rows:
        for quantity, cell in zip([f"last episode at {steps:,}", EVALUATION], cells):
            rank, welch = re.match(r"([\d.]+) \(([\d.]+)\)", cell).groups()
            x, y = list(auto[quantity]["maxdiff-auto"].values()), list(other_values[quantity][METHODS[other]].values())
            assert len(x) in (3, 5) and len(y) == 5
            assert_pvalue_shown_as(mann_whitney_pvalue(x, y), rank, f"{auto_csv}: auto alpha vs {other}, {quantity}")
            assert_pvalue_shown_as(welch_ttest(x, y).pvalue, welch, f"{auto_csv}: auto alpha vs {other}, {quantity} (Welch)")


POINT_MASS_AUTO = "Per seed (last training episode at 10k and 20k, running maximum at 20k"
POINT_MASS_AUTO_COLUMNS = ["last episode at 10,000", "last episode at 20,000", "running max at 20,000", EVALUATION]


def kept_alpha(model_name: str) -> float | None:
    """The entropy weight a kept model (docs/reproduction/models) holds; None for a model with no entropy term."""
    with zipfile.ZipFile(REPRODUCTION / "models" / model_name) as archive:
        state = th.load(io.BytesIO(archive.read("policy.pth")), map_location="cpu")
    return float(state["entropy_bonus.alpha"]) if "entropy_bonus.alpha" in state else None


@pytest.mark.parametrize(
    "marker, model_name, n_seeds",
    [
        ("### Result: no detectable difference from either, at 5 seeds", "alpha_auto_heavy_50k_seed{seed}.zip", 5),
        (POINT_MASS_AUTO, "alpha_auto_point_mass_20k_{method}_seed{seed}.zip", 15),
        (
            "### Result: no detectable difference from either, at 3 seeds",
            "alpha_auto_light_50k_{method}_seed{seed}.zip",
            3,
        ),
    ],
)
def test_auto_alpha_column_is_that_of_the_kept_models(marker, model_name, n_seeds):
    """The alpha each seed settled on, as its final model holds it; an empty cell where the model has none."""
    header, rows = table_after(marker)
    column = next(index for index, name in enumerate(header) if name.startswith("alpha at"))
    alphas: dict[str, list[float]] = {}
    for row in rows:
        method = row[0].removesuffix(", mean +/- std")
        if row[1].isdigit():
            alpha = kept_alpha(model_name.format(method=METHODS[method], seed=row[1]))
            if alpha is None:
                assert row[column] == "", f"{method} seed {row[1]} has no alpha"
                continue
            alphas.setdefault(method, []).append(alpha)
            assert_shown_as(alpha, row[column], f"alpha of {method} seed {row[1]}")
        elif method in alphas:
            assert_mean_std_shown_as(alphas[method], row[column], f"{method} alpha, mean +/- std")
    assert sum(row[1].isdigit() for row in rows) == n_seeds


def test_point_mass_auto_alpha_table_is_that_of_its_csv():
    """Per seed and mean +/- std of each method in the point-mass auto-alpha run."""
    values = per_seed_values(str(REPRODUCTION / "alpha_auto_point_mass_20k.csv"), [10_000, 20_000])
    _, rows = table_after(POINT_MASS_AUTO)
    assert {row[0] for row in rows if row[1].isdigit()} == {"MaxDiff (auto alpha)", "MaxDiff", "NN-MPPI"}
    for method, seed, *cells in rows:
        method = method.removesuffix(", mean +/- std")
        for quantity, cell in zip(POINT_MASS_AUTO_COLUMNS, cells):
            per_seed = values[quantity][METHODS[method]]
            if seed.isdigit():
                assert_shown_as(per_seed[int(seed)], cell, f"point mass auto: {method} seed {seed} {quantity}")
            else:
                assert_mean_std_shown_as(list(per_seed.values()), cell, f"point mass auto: {method} {quantity}")


def test_point_mass_100k_blocks_are_those_of_their_csv():
    """
    The 100k section: mean training return of each block of 10 episodes, each seed's evaluation mean, their mean
    +/- std, each seed's running max at 10k and at 100k and the mean of the path diagnostics quoted in its prose.
    """
    name = "point_mass_beta0.001_100k_batched.csv"
    with open(REPRODUCTION / name) as file:
        rows = list(csv.DictReader(file))
    header, table = table_after("| method, seed | 0-10k |")
    assert len(header) == 12 and len(table) == 4
    evaluations = {}
    for label, *cells in table:
        method, seed = label.split(", ")
        key = (METHODS[method], seed)
        train = [float(row["return"]) for row in rows if (row["method"], row["seed"]) == key and row["kind"] == "train"]
        evaluation = [float(row["return"]) for row in rows if (row["method"], row["seed"]) == key and row["kind"] == "eval"]
        assert len(train) == 100 and len(evaluation) == 5, label
        for block, shown in enumerate(cells[:-1]):
            assert_shown_as(float(np.mean(train[10 * block : 10 * (block + 1)])), shown, f"{name}: {label} block {block}")
        assert_shown_as(float(np.mean(evaluation)), cells[-1], f"{name}: {label} evaluation")
        evaluations.setdefault(method, []).append(float(np.mean(evaluation)))
    text = (ROOT / "REPRODUCTION.md").read_text()
    shown = re.search(r"Final evaluation after 100k: MaxDiff (\S+ \+/- \S+), NN-MPPI (\S+ \+/- \S+)\*\*", text)
    assert shown is not None
    for method, cell in zip(["MaxDiff", "NN-MPPI"], shown.groups()):
        assert_mean_std_shown_as(evaluations[method], cell, f"{name}: {method} final evaluation")
    values = per_seed_values(str(REPRODUCTION / name), [10_000, 100_000])
    running = re.search(r"running max at 10k -> 100k:\s+MaxDiff (.*?), NN-MPPI (.*?)\)", text, re.S)
    assert running is not None
    for method, shown in zip(["maxdiff", "nnmppi"], running.groups()):
        for seed, pair in enumerate(re.split(r"\s+and\s+", shown)):
            before, after = pair.split(" -> ")
            assert_shown_as(values["running max at 10,000"][method][seed], before, f"{name}: {method} seed {seed}")
            assert_shown_as(values["running max at 100,000"][method][seed], after, f"{name}: {method} seed {seed}")
    diagnostics = re.search(
        r"MaxDiff (\S+), NN-MPPI (\S+) \(Welch p = (\S+)\); coverage of the grid at the\s+end of training (\S+) and (\S+)\.",
        text,
    )
    assert diagnostics is not None
    msd, coverage = values["msd_exponent (median over episodes)"], values["coverage (end of training)"]
    for quantity, method, shown in (
        (msd, "maxdiff", 1),
        (msd, "nnmppi", 2),
        (coverage, "maxdiff", 4),
        (coverage, "nnmppi", 5),
    ):
        assert_shown_as(float(np.mean(list(quantity[method].values()))), diagnostics.group(shown), f"{name}: {method}")
    welch = welch_ttest(list(msd["maxdiff"].values()), list(msd["nnmppi"].values())).pvalue
    assert_shown_as(welch, diagnostics.group(3), f"{name}: MSD exponent Welch p")


SWEEP_MARKER = "## The alpha sweep on the heavy Swimmer, 50k steps"
SWEEP_CSVS = [str(REPRODUCTION / "swimmer_alpha_50k.csv"), str(REPRODUCTION / "swimmer_heavy_50k.csv")]


def _sweep_group(label: str) -> str:
    """The group (``method@setting``) of a row label of the sweep's tables."""
    label = label.removesuffix(", mean +/- std")
    if label.startswith("NN-MPPI"):
        return "nnmppi@heavy"
    alpha = label.split(" ")[0]
    return "maxdiff@heavy" if alpha == "100" else f"maxdiff@alpha={alpha}"


def test_alpha_sweep_per_seed_table_is_that_of_its_csvs():
    values = per_seed_values(SWEEP_CSVS, [10_000, 20_000, 50_000], by_setting=True)
    quantities = [*SWIMMER_COLUMNS[:5], "coverage (end of training)", "msd_exponent (median over episodes)"]
    _, rows = table_after(SWEEP_MARKER)
    assert len([row for row in rows if row[1].isdigit()]) == 9 and len(rows) == 14
    for label, seed, *cells in rows:
        group = _sweep_group(label)
        for quantity, cell in zip(quantities, cells, strict=True):
            if seed.isdigit():
                assert_shown_as(values[quantity][group][int(seed)], cell, f"{label} seed {seed} {quantity}")
            else:
                assert_mean_std_shown_as(list(values[quantity][group].values()), cell, f"{label} {quantity}")


def test_alpha_sweep_tests_are_those_of_its_csvs():
    values = per_seed_values(SWEEP_CSVS, [50_000], by_setting=True)
    _, rows = table_after("| alpha | against | training return at 50k")
    assert len(rows) == 6
    for alpha, other, *cells in rows:
        group, against = _sweep_group(alpha), _sweep_group("100" if other == "alpha 100" else other)
        for quantity, cell in zip(["last episode at 50,000", EVALUATION], cells[:2]):
            rank, welch, direction = re.match(r"([\d.]+) \(([\d.e-]+)\), (higher|lower)", cell).groups()
            x, y = list(values[quantity][group].values()), list(values[quantity][against].values())
            assert len(x) == 3 and len(y) == 5
            assert_pvalue_shown_as(mann_whitney_pvalue(x, y), rank, f"alpha {alpha} vs {other}, {quantity}")
            shown = float(welch)
            assert abs(welch_ttest(x, y).pvalue - shown) <= 0.051 * shown, f"alpha {alpha} vs {other} (Welch)"
            assert (np.mean(x) > np.mean(y)) == (direction == "higher")


def test_light_tail_window_means_are_those_of_the_csv_and_of_the_published_curve():
    """Ours: the mean of the 5 episodes ending at each step count, per seed, then over seeds; the authors': the
    published light-tail curve that `report` draws."""
    from sb3_maxdiff.experiments.define.presets import PRESETS

    values = per_seed_values(str(REPRODUCTION / "swimmer_light_50k.csv"), [10_000, 20_000, 50_000], window=5)
    curve = PRESETS["swimmer-methods"].published_curve
    header, rows = table_after("| mean of the 5 episodes ending at |")
    steps = [int(column.removesuffix("k")) * 1000 for column in header[1:]]
    assert steps == [10_000, 20_000, 50_000] and len(rows) == 4
    for label, *cells in rows:
        method = METHODS[label.split(",")[0]]
        for at, cell in zip(steps, cells):
            if "ours" in label:
                per_seed = list(values[f"mean of the last 5 episodes at {at:,}"][method].values())
                assert len(per_seed) == 5
                assert_mean_std_shown_as(per_seed, cell, f"{label} at {at}")
            else:
                assert_shown_as(curve[("light", method)][at], cell, f"{label} at {at}")


@pytest.mark.parametrize(
    "trained_csv, trained_tail, transfer_csv, other_tail",
    [
        ("swimmer_light_50k.csv", "light", "swimmer_transfer_light_to_heavy_50k.csv", "heavy"),
        ("swimmer_heavy_retrain_50k.csv", "heavy", "swimmer_transfer_heavy_to_light_50k.csv", "light"),
    ],
)
def test_transfer_tables_are_those_of_their_csvs(trained_csv, trained_tail, transfer_csv, other_tail):
    """Each seed's mean on the tail it trained on (its final evaluation) and on the other, and the test between methods."""
    trained = per_seed_values(str(REPRODUCTION / trained_csv), [])[EVALUATION]
    transferred = per_seed_values(str(REPRODUCTION / transfer_csv), [])[
        f"evaluation on sb3_maxdiff/Swimmer-{other_tail}-v0 (mean per seed)"
    ]
    direction = f"{trained_tail} to {other_tail}"
    header, rows = table_after(f"| transfer, {direction}: seed |")
    columns = [
        (trained if tail == trained_tail else transferred, METHODS[name]) for name, tail in (c.split(", ") for c in header[1:])
    ]
    assert len(rows) == 6
    for seed, *cells in rows:
        for (values, method), cell in zip(columns, cells, strict=True):
            if seed.isdigit():
                assert_shown_as(values[method][int(seed)], cell, f"{method} seed {seed}")
            else:
                assert_mean_std_shown_as(list(values[method].values()), cell, f"{method} mean")
    _, rows = table_after(f"| MaxDiff against, {direction} |")
    ((other, cell, _),) = rows
    rank, welch = re.match(r"([\d.]+) \(([\d.]+)\)", cell).groups()
    x, y = (list(transferred[method].values()) for method in ("maxdiff", METHODS[other]))
    assert len(x) == len(y) == 5
    assert_pvalue_shown_as(mann_whitney_pvalue(x, y), rank, f"{transfer_csv}: Mann-Whitney")
    assert_pvalue_shown_as(welch_ttest(x, y).pvalue, welch, f"{transfer_csv}: Welch")


def test_look_back_tables_are_those_of_the_csv():
    """Per seed and mean +/- std of each number of observations looked back, and the test between the two."""
    csv_name = "look_back_point_mass_10k.csv"
    values = per_seed_values(str(REPRODUCTION / csv_name), [10_000], by_setting=True)
    quantities = ["last episode at 10,000", "running max at 10,000", *SWIMMER_COLUMNS[4:]]
    _, rows = table_after("| looked back | seed |")
    assert len(rows) == 12
    for history, seed, *cells in rows:
        group = f"maxdiff{SETTING_SEPARATOR}history={history.removesuffix(', mean +/- std')}"
        for quantity, cell in zip(quantities, cells, strict=True):
            if seed.isdigit():
                assert_shown_as(values[quantity][group][int(seed)], cell, f"{csv_name}: {group} seed {seed} {quantity}")
            else:
                assert_mean_std_shown_as(list(values[quantity][group].values()), cell, f"{csv_name}: {group} {quantity}")
    _, ((_, *cells, _),) = table_after("| history=30 against history=0 |")
    for quantity, cell in zip(["last episode at 10,000", EVALUATION], cells, strict=True):
        rank, welch = re.match(r"([\d.]+) \(([\d.]+)\)", cell).groups()
        x, y = (list(values[quantity][f"maxdiff{SETTING_SEPARATOR}history={h}"].values()) for h in (30, 0))
        assert len(x) == len(y) == 5
        assert_pvalue_shown_as(mann_whitney_pvalue(x, y), rank, f"{csv_name}: {quantity}")
        assert_pvalue_shown_as(welch_ttest(x, y).pvalue, welch, f"{csv_name}: {quantity} (Welch)")


def test_single_shot_per_seed_table_is_that_of_its_csv():
    values = per_seed_values(str(REPRODUCTION / "single_shot_light_30k.csv"), [10_000, 20_000, 30_000])
    header, rows = table_after("Per seed so far (single-shot")
    assert header[:2] == ["method", "seed"] and len(header) == 8 and rows
    quantities = [f"{kind} at {steps:,}" for kind in ("window return", "x distance") for steps in (10_000, 20_000, 30_000)]
    for method, seed, *cells in rows:
        for quantity, shown in zip(quantities, cells, strict=True):
            assert_shown_as(values[quantity][METHODS[method]][int(seed)], shown, f"single-shot {method} seed {seed}")
    # every finished run of the CSV is in the table
    assert {(METHODS[method], int(seed)) for method, seed, *_ in rows} == {
        (key, seed) for key, by_seed in values[quantities[-1]].items() for seed in by_seed
    }


# the authors' ten single-shot MaxDiff seeds, x distance by 30k steps (their reward_data.pkl, as REPRODUCTION.md says)
AUTHORS_SINGLE_SHOT_30K = [211.1, 218.9, 185.8, 268.3, 12.1, 198.7, 269.1, 272.7, 290.4, 294.2]


def assert_single_shot_rows(rows: list[list[str]], values: dict[str, dict[int, float]], where: str) -> None:
    """Rows "seed | x by 10k | x by 20k | x by 30k | window return at 30k | swims" against one method's per-seed values."""
    for seed, x10, x20, x30, ret30, swims in rows:
        for at, shown in zip([10_000, 20_000, 30_000], [x10, x20, x30]):
            assert_shown_as(values[f"x distance at {at:,}"][int(seed)], shown, f"{where} {seed} x by {at}")
        assert_shown_as(values["window return at 30,000"][int(seed)], ret30, f"{where} {seed} window return")
        assert swims.startswith("yes" if values["x distance at 30,000"][int(seed)] > 100 else "no"), seed


def counts_above(a: list[float], b: list[float], line: float) -> tuple[list[int], float]:
    """How many values of each group are above ``line``, and Fisher's exact test (two-sided) on those counts."""
    from scipy.stats import fisher_exact

    above = [sum(value > line for value in a), sum(value > line for value in b)]
    table = [[above[0], len(a) - above[0]], [above[1], len(b) - above[1]]]
    return above, float(fisher_exact(table, alternative="two-sided").pvalue)


def swim_comparison(a: list[float], b: list[float]) -> tuple[list[int], float, float]:
    """
    Two groups of single-shot x distances by 30k: how many of each swim (more than 100), Fisher's exact test on those
    counts and the Mann-Whitney test on the distances (two-sided both).
    """
    swim, fisher = counts_above(a, b, 100)
    return swim, fisher, mann_whitney_pvalue(a, b)


def test_single_shot_ten_seed_reading_is_that_of_its_csvs():
    """The per-seed table of seeds 0-9, the swim counts and both tests of the single-shot reading."""
    steps = [10_000, 20_000, 30_000]
    first, rest = (
        per_seed_values(str(REPRODUCTION / name), steps)
        for name in ("single_shot_light_30k.csv", "single_shot_light_30k_maxdiff_seeds3_9.csv")
    )
    values = {q: {**first[q]["maxdiff"], **rest[q]["maxdiff"]} for q in rest}
    _, rows = table_after("| seed | x by 10k | x by 20k | x by 30k | window return at 30k |")
    ours = [row for row in rows if row[0].isdigit()]
    assert [int(row[0]) for row in ours] == sorted(values["x distance at 30,000"]) == list(range(10))
    assert_single_shot_rows(ours, values, "seed")
    distances = [values["x distance at 30,000"][seed] for seed in range(10)]
    swim, fisher, mann_whitney = swim_comparison(distances, AUTHORS_SINGLE_SHOT_30K)
    assert swim == [3, 9]
    text = (ROOT / "REPRODUCTION.md").read_text()
    reading = text[text.index("Three of our ten seeds swim by 30k") :][:900]
    shown_fisher = re.search(r"Fisher's exact test, two-sided, \*\*p = ([0-9.]+)\*\*", reading)
    shown_mw = re.search(r"10 against 10, \*\*p = ([0-9.]+)\*\*", reading)
    assert shown_fisher and shown_mw
    assert_pvalue_shown_as(fisher, shown_fisher.group(1), "Fisher")
    assert_pvalue_shown_as(mann_whitney, shown_mw.group(1), "Mann-Whitney")


def halfcheetah_single_shot_values(steps: list[int], seeds: range) -> dict[str, dict[str, dict[int, float]]]:
    """The single-shot HalfCheetah runs' values (``per_seed_values``) of ``seeds``; each must be in the CSV."""
    values = per_seed_values(str(REPRODUCTION / "halfcheetah_single_shot_30k.csv"), steps)
    kept = {
        q: {m: {s: v for s, v in by_seed.items() if s in seeds} for m, by_seed in by_method.items()}
        for q, by_method in values.items()
    }
    for by_method in kept.values():
        assert all(sorted(by_seed) == list(seeds) for by_seed in by_method.values()), "a seed is missing"
    return kept


HALFCHEETAH_STEPS = [10_000, 20_000, 30_000]
HALFCHEETAH_QUANTITIES = [f"return so far at {at:,}" for at in HALFCHEETAH_STEPS] + [
    "window return at 30,000",
    "x distance at 30,000",
]


def assert_halfcheetah_rows(rows: list[list[str]], values: dict, n_seeds: int) -> None:
    """
    Rows "method | seed | return so far by 10k, 20k, 30k | last window's return | x by 30k | runs forward" against the
    per-seed values; a row "<method>, ... mean +/- std" against the means of all ``n_seeds`` seeds of ``values``.
    """
    by_30k = HALFCHEETAH_QUANTITIES[2]
    for method, seed, *cells in rows:
        forward = cells.pop()
        if seed.isdigit():
            for quantity, shown in zip(HALFCHEETAH_QUANTITIES, cells, strict=True):
                assert_shown_as(values[quantity][METHODS[method]][int(seed)], shown, f"HalfCheetah {method} seed {seed}")
            assert forward == ("yes" if values[by_30k][METHODS[method]][int(seed)] > 5000 else "no"), seed
            continue
        assert method.endswith("mean +/- std"), method
        key = METHODS[method.split(",")[0]]
        assert len(values[by_30k][key]) == n_seeds
        for quantity, cell in zip(HALFCHEETAH_QUANTITIES, cells, strict=True):
            assert_mean_std_shown_as(list(values[quantity][key].values()), cell, f"HalfCheetah {method} {quantity}")
        assert forward == f"{sum(value > 5000 for value in values[by_30k][key].values())} of {n_seeds}"


def shown_pvalues(start: str, pattern: str, length: int = 300) -> tuple[str, ...]:
    """The groups of ``pattern`` in the text of REPRODUCTION.md that begins with ``start``."""
    text = (ROOT / "REPRODUCTION.md").read_text()
    shown = re.search(pattern, text[text.index(start) :][:length])
    assert shown is not None, start
    return shown.groups()


def test_single_shot_halfcheetah_reading_is_that_of_its_csv():
    """Per seed the return so far, the last window's return and the distance, the means, and the rule's test."""
    # seeds 0-4 (the file also holds the seeds 5-9 run after this reading)
    values = halfcheetah_single_shot_values(HALFCHEETAH_STEPS, range(5))
    _, rows = table_after("| method | seed | return so far by 10k |")
    assert len(rows) == 12
    assert_halfcheetah_rows(rows, values, 5)
    maxdiff, nnmppi = (list(values[HALFCHEETAH_QUANTITIES[2]][key].values()) for key in ("maxdiff", "nnmppi"))
    start = "By the rule: the two-sided Mann-Whitney test on the return so far by 30k"
    rank, welch = shown_pvalues(start, r"\*\*p = ([0-9.]+)\*\* \(Welch p = ([0-9.]+)")
    assert_pvalue_shown_as(mann_whitney_pvalue(maxdiff, nnmppi), rank, "HalfCheetah Mann-Whitney")
    assert_pvalue_shown_as(welch_ttest(maxdiff, nnmppi).pvalue, welch, "HalfCheetah Welch")


# the authors' single-shot HalfCheetah seeds, window returns summed to 30k steps (their reward_data.pkl)
AUTHORS_HALFCHEETAH_30K = {
    "maxdiff": [15001.9, 7339.5, 9176.5, 12622.5, 11476.4, 10202.5, 8544.8, 9537.8, 8608.1, 8524.1],
    "nnmppi": [-126.3, -492.8, 11640.5, -548.5, -303.3, -1120.8, 11132.4, 12610.0, -292.0, -1307.9],
}


def test_single_shot_halfcheetah_ten_seed_reading_is_that_of_its_csv():
    """Seeds 5-9 per seed, the means of seeds 0-9, the rule's test at 10 against 10 and the descriptive tests."""
    values = halfcheetah_single_shot_values(HALFCHEETAH_STEPS, range(10))
    _, rows = table_after("| method | seed | return so far by 10k |", skip=1)
    assert sorted((METHODS[m], int(s)) for m, s, *_ in rows if s) == [
        (m, s) for m in ("maxdiff", "nnmppi") for s in range(5, 10)
    ]
    assert len(rows) == 12
    assert_halfcheetah_rows(rows, values, 10)
    by_30k = {key: values[HALFCHEETAH_QUANTITIES[2]][key] for key in ("maxdiff", "nnmppi")}
    maxdiff, nnmppi = (list(by_30k[key].values()) for key in ("maxdiff", "nnmppi"))
    rank, welch = shown_pvalues("By the rule, at ten seeds each:", r"\*\*p = ([0-9.]+)\*\* \(Welch p = ([0-9.]+)")
    assert_pvalue_shown_as(mann_whitney_pvalue(maxdiff, nnmppi), rank, "HalfCheetah 10 seeds Mann-Whitney")
    assert_pvalue_shown_as(welch_ttest(maxdiff, nnmppi).pvalue, welch, "HalfCheetah 10 seeds Welch")
    (later,) = shown_pvalues("By the rule, at ten seeds each:", r"seeds 5-9 alone give p = ([0-9.]+)", 500)
    later_pair = ([by_30k[key][seed] for seed in range(5, 10)] for key in ("maxdiff", "nnmppi"))
    assert_pvalue_shown_as(mann_whitney_pvalue(*later_pair), later, "HalfCheetah seeds 5-9")
    ours_maxdiff, ours_nnmppi = shown_pvalues(
        "By the rule, at ten seeds each:",
        r"Fisher's exact test, two-sided, p = ([0-9.]+)\)[\s\S]*?3 of 10 \(p = ([0-9.]+)\)",
        900,
    )
    for key, shown in (("maxdiff", ours_maxdiff), ("nnmppi", ours_nnmppi)):
        _, fisher = counts_above(list(by_30k[key].values()), AUTHORS_HALFCHEETAH_30K[key], 5000)
        assert_pvalue_shown_as(fisher, shown, key)
    (between,) = shown_pvalues("was read: the forward counts of the two methods", r"give Fisher p = ([0-9.]*[0-9])")
    assert_pvalue_shown_as(counts_above(maxdiff, nnmppi, 5000)[1], between, "HalfCheetah forward counts")


def test_single_shot_jitter_reading_is_that_of_its_csv():
    """The per-seed table of the run with the authors' jitter, its swim count and the rule's tests against both."""
    steps = [10_000, 20_000, 30_000]
    # seeds 0-9 (the file also takes the seeds 10-19 run after this reading, as they finish)
    values = {
        q: {seed: value for seed, value in by_method["maxdiff"].items() if seed < 10}
        for q, by_method in per_seed_values(str(REPRODUCTION / "single_shot_jitter_30k.csv"), steps).items()
    }
    before = per_seed_values(
        [str(REPRODUCTION / name) for name in ("single_shot_light_30k.csv", "single_shot_light_30k_maxdiff_seeds3_9.csv")],
        steps,
    )["x distance at 30,000"]["maxdiff"]
    _, rows = table_after("#### The reading of the jitter run")
    assert [int(row[0]) for row in rows] == sorted(values["x distance at 30,000"]) == sorted(before) == list(range(10))
    assert_single_shot_rows(rows, values, "jitter seed")
    distances = [values["x distance at 30,000"][seed] for seed in range(10)]
    text = (ROOT / "REPRODUCTION.md").read_text()
    reading = text[text.index("#### The reading of the jitter run") :][:4000]
    for name, other in (
        ("the authors'", AUTHORS_SINGLE_SHOT_30K),
        ("ours with `1e-8 * I`", [before[seed] for seed in range(10)]),
    ):
        swim, fisher, mann_whitney = swim_comparison(distances, other)
        pattern = rf"against {re.escape(name)}: (\d+) of 10 against (\d+) of 10, Fisher\s+\*\*p = ([0-9.<]+)\*\*,"
        shown = re.search(pattern + r"\s+Mann-Whitney\s+\*\*p = ([0-9.<]+)\*\*", reading)
        assert shown is not None, name
        assert [int(shown.group(1)), int(shown.group(2))] == swim, name
        assert_pvalue_shown_as(fisher, shown.group(3), f"Fisher against {name}")
        assert_pvalue_shown_as(mann_whitney, shown.group(4), f"Mann-Whitney against {name}")


def test_single_shot_jitter_twenty_seed_reading_is_that_of_its_csvs():
    """Both jitters' per-seed tables of seeds 0-19, their swim counts and the rule's tests, each also against the authors'."""
    steps = [10_000, 20_000, 30_000]
    diagonal_csvs = [
        "single_shot_light_30k.csv",
        "single_shot_light_30k_maxdiff_seeds3_9.csv",
        "single_shot_light_30k_maxdiff_seeds10_19.csv",
    ]
    arms = {
        "jitter": per_seed_values(str(REPRODUCTION / "single_shot_jitter_30k.csv"), steps),
        "diagonal": per_seed_values([str(REPRODUCTION / name) for name in diagonal_csvs], steps),
    }
    values = {arm: {q: by_method["maxdiff"] for q, by_method in per_seed.items()} for arm, per_seed in arms.items()}
    for skip, arm in enumerate(arms):
        _, rows = table_after("#### The reading of the twenty seeds of each jitter", skip)
        assert [int(row[0]) for row in rows] == sorted(values[arm]["x distance at 30,000"]) == list(range(20)), arm
        assert_single_shot_rows(rows, values[arm], f"{arm} seed")
    distances = {arm: [values[arm]["x distance at 30,000"][seed] for seed in range(20)] for arm in arms}
    distances["the authors'"] = AUTHORS_SINGLE_SHOT_30K
    text = (ROOT / "REPRODUCTION.md").read_text()
    reading = text[text.index("#### The reading of the twenty seeds of each jitter") :][:9000]
    for label, first, second in (
        ("jitter against `1e-8 * I`", "jitter", "diagonal"),
        ("with the jitter against the authors'", "jitter", "the authors'"),
        ("with `1e-8 * I` against the authors'", "diagonal", "the authors'"),
    ):
        a, b = distances[first], distances[second]
        swim, fisher, mann_whitney = swim_comparison(a, b)
        words = [re.escape(word) for word in f"{label}: @ of {len(a)} against @ of {len(b)}, Fisher **p = %**,".split()]
        words += [re.escape(word) for word in "Mann-Whitney **p = %**".split()]
        # the text may wrap anywhere between two words
        pattern = r"\s+".join(words).replace("@", r"(\d+)").replace("%", r"([0-9.<]+(?:\s[0-9.]+)?)")
        shown = re.search(pattern, reading)
        assert shown is not None, label
        assert [int(shown.group(1)), int(shown.group(2))] == swim, label
        assert_pvalue_shown_as(fisher, shown.group(3), f"Fisher, {label}")
        assert_pvalue_shown_as(mann_whitney, shown.group(4), f"Mann-Whitney, {label}")


VALUE_STEPS = [10_000, 20_000, 50_000, 100_000]


def value_run_values() -> dict:
    """The terminal-value runs' per-seed values, by group ("maxdiff@H=10 value", "sac-zoo@heavy")."""
    return per_seed_values(str(REPRODUCTION / "swimmer_heavy_value_100k.csv"), VALUE_STEPS, by_setting=True)


@pytest.mark.parametrize(
    "marker, group",
    [("| seed, 10-step MaxDiff with the value |", "maxdiff@H=10 value"), ("| seed, RL Zoo's SAC |", "sac-zoo@heavy")],
)
def test_terminal_value_per_seed_tables_are_those_of_the_csv(marker, group):
    """Each arm of the terminal-value runs per seed, with mean +/- std over its 5 seeds."""
    values = value_run_values()
    header, rows = table_after(marker)
    quantities = [f"last episode at {at:,}" for at in VALUE_STEPS] + ["running max at 100,000", EVALUATION]
    assert header[1:] == ["10k", "20k", "50k", "100k", "running max 100k", "final eval"]
    assert [row[0] for row in rows] == ["0", "1", "2", "3", "4", "mean +/- std"]
    for seed, *cells in rows:
        for quantity, cell in zip(quantities, cells):
            per_seed = [values[quantity][group][index] for index in range(5)]
            if seed.isdigit():
                assert_shown_as(per_seed[int(seed)], cell, f"{group} {quantity}, seed {seed}")
            else:
                assert_mean_std_shown_as(per_seed, cell, f"{group} {quantity}")


def test_terminal_value_test_1_is_that_of_the_csvs():
    """Arm V against the 40-step MaxDiff's 10 seeds at 50k."""
    arm_v = value_run_values()["last episode at 50,000"]["maxdiff@H=10 value"]
    forty_step = merged_values(["swimmer_heavy_retrain_50k.csv", "swimmer_heavy_seeds5_9_50k.csv"], [50_000])
    x, y = list(arm_v.values()), list(forty_step["last episode at 50,000"]["maxdiff"].values())
    assert (len(x), len(y)) == (5, 10)
    _, rows = table_after("| V against | training return at 50k")
    assert [row[0] for row in rows] == ["P, the 40-step MaxDiff, 10 seeds (5 against 10)"]
    shown = re.match(r"([\d.]+) \(([\d.]+)\)", rows[0][1])
    assert shown is not None
    rank, welch = shown.groups()
    assert_pvalue_shown_as(mann_whitney_pvalue(x, y), rank, "arm V against P at 50k")
    assert_pvalue_shown_as(welch_ttest(x, y).pvalue, welch, "arm V against P at 50k (Welch)")


def test_terminal_value_test_2_is_that_of_the_csv():
    """Arm V against arm Z (RL Zoo's SAC), 5 against 5, on the training return at 100k and the final evaluation."""
    values = value_run_values()
    _, rows = table_after("| V against RL Zoo's SAC |")
    assert [row[0] for row in rows] == ["Z, RL Zoo's SAC (5 against 5)"]
    for quantity, cell in zip(["last episode at 100,000", EVALUATION], rows[0][1:]):
        shown = re.match(r"([\d.]+) \(([\d.]+)\)", cell)
        assert shown is not None, f"{cell!r} is not 'Mann-Whitney p (Welch p)'"
        rank, welch = shown.groups()
        x, y = (list(values[quantity][group].values()) for group in ("maxdiff@H=10 value", "sac-zoo@heavy"))
        assert (len(x), len(y)) == (5, 5)
        assert_pvalue_shown_as(mann_whitney_pvalue(x, y), rank, f"V against Z, {quantity}")
        assert_pvalue_shown_as(welch_ttest(x, y).pvalue, welch, f"V against Z, {quantity} (Welch)")


def test_past_horizon_m_against_z_table_is_that_of_its_csv():
    """Arm M against arm Z on the multi-shot HalfCheetah: per-seed values, mean +/- std and both p-values."""
    values = per_seed_values(str(REPRODUCTION / "halfcheetah_horizon_100k.csv"), [50_000, 100_000], by_setting=True)
    quantities = {
        "training return at 50k": "last episode at 50,000",
        "running max at 50k": "running max at 50,000",
        "training return at 100k": "last episode at 100,000",
        "running max at 100k": "running max at 100,000",
        "final evaluation (5 episodes)": EVALUATION,
    }
    _, rows = table_after("| | MaxDiff (M), seeds 0-4 |")
    assert [row[0] for row in rows] == list(quantities)
    for label, m_seeds, m_mean, z_seeds, z_mean, rank, welch in rows:
        m, z = (values[quantities[label]][f"{method}@halfcheetah"] for method in ("maxdiff", "sac-zoo"))
        for per_seed, shown_seeds, shown_mean in ((m, m_seeds, m_mean), (z, z_seeds, z_mean)):
            assert sorted(per_seed) == [0, 1, 2, 3, 4]
            for seed, shown in zip(range(5), shown_seeds.split(", "), strict=True):
                assert_shown_as(per_seed[seed], shown, f"{label} seed {seed}")
            assert_mean_std_shown_as(list(per_seed.values()), shown_mean, label)
        assert_pvalue_shown_as(mann_whitney_pvalue(list(m.values()), list(z.values())), rank, f"{label} Mann-Whitney")
        assert_pvalue_shown_as(welch_ttest(list(m.values()), list(z.values())).pvalue, welch, f"{label} Welch")


ACTOR_EVALUATION = "actor evaluation (mean per seed)"
CRITIC_SWIMMER_STEPS = [10_000, 20_000, 50_000]


CRITIC_SWIMMER_ARMS = [
    pytest.param("swimmer_critic_50k.csv", "swimmer critic", "| seed, 10-step MaxDiff with the critic |", "S", id="S"),
    pytest.param(
        "swimmer_critic_one_step_50k.csv",
        "swimmer critic one-step",
        "| seed, 10-step MaxDiff with the critic, one-step head |",
        "S1",
        id="S1",
    ),
]


def critic_swimmer_values(csv: str) -> dict:
    """Per-seed values of a critic arm on the heavy Swimmer (group "maxdiff@<setting>")."""
    return per_seed_values(str(REPRODUCTION / csv), CRITIC_SWIMMER_STEPS, by_setting=True)


def swimmer_returns_at_50k() -> dict[str, list[float]]:
    """The heavy Swimmer's training returns at 50k per arm: P (40-step MaxDiff, 10 seeds), V (value), S and S1."""
    at_50k = "last episode at 50,000"
    forty_step = merged_values(["swimmer_heavy_retrain_50k.csv", "swimmer_heavy_seeds5_9_50k.csv"], [50_000])
    value = per_seed_values(str(REPRODUCTION / "swimmer_heavy_value_100k.csv"), [50_000], by_setting=True)
    return {
        "P": list(forty_step[at_50k]["maxdiff"].values()),
        "V": list(value[at_50k]["maxdiff@H=10 value"].values()),
        "S": list(critic_swimmer_values("swimmer_critic_50k.csv")[at_50k]["maxdiff@swimmer critic"].values()),
        "S1": list(
            critic_swimmer_values("swimmer_critic_one_step_50k.csv")[at_50k]["maxdiff@swimmer critic one-step"].values()
        ),
    }


@pytest.mark.parametrize(("csv", "setting", "marker", "arm"), CRITIC_SWIMMER_ARMS)
def test_past_horizon_swimmer_critic_per_seed_table_is_that_of_its_csv(csv, setting, marker, arm):
    """A critic arm on the heavy Swimmer (MaxDiff at H = 10) per seed, with mean +/- std over its 5 seeds."""
    values = critic_swimmer_values(csv)
    header, rows = table_after(marker)
    quantities = [f"last episode at {at:,}" for at in CRITIC_SWIMMER_STEPS] + ["running max at 50,000"]
    quantities += [EVALUATION, ACTOR_EVALUATION]
    assert header[1:7] == ["10k", "20k", "50k", "running max 50k", "final eval", "its actor alone"]
    assert [row[0] for row in rows] == ["0", "1", "2", "3", "4", "mean +/- std"]
    for seed, *cells in rows:
        for quantity, cell in zip(quantities, cells):
            per_seed = [values[quantity][f"maxdiff@{setting}"][index] for index in range(5)]
            if seed.isdigit():
                assert_shown_as(per_seed[int(seed)], cell, f"arm {arm} {quantity}, seed {seed}")
            else:
                assert_mean_std_shown_as(per_seed, cell, f"arm {arm} {quantity}")


@pytest.mark.parametrize(("csv", "setting", "marker", "arm"), CRITIC_SWIMMER_ARMS)
def test_past_horizon_swimmer_critic_tests_are_those_of_the_csvs(csv, setting, marker, arm):
    """A critic arm against the 40-step MaxDiff's 10 seeds (P) and the value arm's 5 (V), training return at 50k."""
    returns = swimmer_returns_at_50k()
    tested = returns[arm]
    others = {
        "P, the 40-step MaxDiff, 10 seeds (5 against 10)": returns["P"],
        "V, the 10-step MaxDiff with the value, 5 seeds (5 against 5)": returns["V"],
    }
    if arm != "S":  # a later arm is also set against arm S
        others = {"S, the same arm with the 0.95 reward head, 5 seeds (5 against 5)": returns["S"], **others}
    _, rows = table_after(f"| {arm} against | training return at 50k")
    assert [row[0] for row in rows] == list(others)
    for label, cell, *_ in rows:
        shown = re.match(r"([\d.]+) \(([\d.]+)\)", cell)
        assert shown is not None, f"{cell!r} is not 'Mann-Whitney p (Welch p)'"
        rank, welch = shown.groups()
        assert_pvalue_shown_as(mann_whitney_pvalue(tested, others[label]), rank, f"arm {arm} against {label}")
        assert_pvalue_shown_as(welch_ttest(tested, others[label]).pvalue, welch, f"arm {arm} against {label} (Welch)")


def test_terminal_value_guide_table_is_that_of_the_csvs():
    """The guide's "Which value to choose" table: seeds, mean +/- std at 50k and each p against the 0.95 critic row."""
    returns = swimmer_returns_at_50k()
    arms = [returns[arm] for arm in ("P", "S", "S1", "V")]
    _, rows = table_after("| heavy Swimmer, training return at 50k |", document="docs/guide/terminal_value.md")
    assert len(rows) == len(arms)
    for (label, seeds, mean_std, pvalue), per_seed in zip(rows, arms):
        assert int(seeds) == len(per_seed), label
        assert_mean_std_shown_as(per_seed, mean_std, label)
        if pvalue:
            assert_pvalue_shown_as(mann_whitney_pvalue(per_seed, arms[1]), pvalue, f"{label} against the critic")
        else:
            assert "0.95" in label, f"{label}: only the row the others are set against has no p-value"
