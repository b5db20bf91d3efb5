"""``planner_dtype="auto"``: bfloat16 only where the device has it in hardware and it plans the model faster."""

from typing import Any

import numpy as np
import pytest
import torch as th

from sb3_maxdiff import NNMPPI, MaxDiffMPPI
from sb3_maxdiff.common import precision
from sb3_maxdiff.common.precision import choose_planner_dtype, cpu_flags, time_planner_dtypes

ENV = "sb3_maxdiff/PointMass-beta0_01-v0"
KWARGS: dict[str, Any] = dict(horizon=5, n_samples=20, batch_size=8, learning_starts=10, policy_kwargs=dict(net_arch=[16]))


def _make(algo=MaxDiffMPPI, **kwargs):
    return algo("MlpPolicy", ENV, planner_dtype="auto", seed=0, **KWARGS, **kwargs)


def _hardware(monkeypatch, native: bool, seconds: dict[str, float] | None = None):
    monkeypatch.setattr(precision, "has_native_bfloat16", lambda device: native)
    if seconds is not None:
        monkeypatch.setattr(precision, "time_planner_dtypes", lambda *args, **kwargs: dict(seconds))


@pytest.mark.parametrize("algo", [NNMPPI, MaxDiffMPPI])
def test_auto_plans_in_float32_where_bfloat16_is_not_in_hardware(monkeypatch, algo):
    _hardware(monkeypatch, native=False, seconds={"float32": 1.0, "bfloat16": 0.1})  # the timings are not asked
    model = _make(algo)
    assert model.policy.planner.settings.dtype == "float32" and model.planner_dtype_timings == {}


@pytest.mark.parametrize("seconds, chosen", [((1.0, 0.5), "bfloat16"), ((1.0, 0.95), "float32"), ((1.0, 2.0), "float32")])
def test_auto_takes_bfloat16_only_where_it_plans_clearly_faster(monkeypatch, seconds, chosen):
    _hardware(monkeypatch, native=True, seconds=dict(zip(("float32", "bfloat16"), seconds)))
    model = _make()
    assert model.policy.planner.settings.dtype == chosen
    assert model.policy.planner_settings.dtype == chosen and model.planner_dtype == "auto"
    model.learn(20)
    actions, _ = model.predict(np.zeros(model.observation_space.shape, dtype=np.float32))
    assert np.isfinite(actions).all()


def test_auto_is_decided_again_at_load(monkeypatch, tmp_path):
    _hardware(monkeypatch, native=True, seconds={"float32": 1.0, "bfloat16": 0.5})
    model = _make()
    assert model.policy.planner.settings.dtype == "bfloat16"
    model.save(tmp_path / "model.zip")
    _hardware(monkeypatch, native=False)  # loaded on another machine
    loaded = MaxDiffMPPI.load(tmp_path / "model.zip")
    assert loaded.planner_dtype == "auto" and loaded.policy.planner.settings.dtype == "float32"


def test_timing_leaves_the_global_random_stream_and_the_model_as_they_were():
    model = MaxDiffMPPI("MlpPolicy", ENV, seed=0, **KWARGS)
    before = {name: value.clone() for name, value in model.policy.state_dict().items()}
    state = th.get_rng_state()
    seconds = time_planner_dtypes(model.policy.planner, model.policy.model, 4, 1, calls=2)
    assert set(seconds) == {"float32", "bfloat16"} and all(0 < value < 60 for value in seconds.values())
    assert th.equal(th.get_rng_state(), state)
    assert all(th.equal(before[name], value) for name, value in model.policy.state_dict().items())
    assert model.policy.planner.settings.dtype == "float32"  # the timing planned with copies of the planner


def test_the_choice_follows_the_hardware_check_on_this_machine():
    """Without any patch: where the CPU lacks AVX512_BF16 and AMX, float32 without timing; else whichever is faster."""
    model = MaxDiffMPPI("MlpPolicy", ENV, seed=0, **KWARGS)
    chosen, seconds = choose_planner_dtype(model.policy.planner, model.policy.model, 4, 1)
    native = bool(cpu_flags() & precision.BFLOAT16_CPU_FLAGS)
    assert (seconds != {}) == native
    assert chosen == "float32" or (native and seconds["bfloat16"] < precision.SPEED_MARGIN * seconds["float32"])


@pytest.mark.parametrize(
    "flags, native",
    [({"avx2", "avx512f"}, False), ({"avx512f", "avx512_bf16"}, True), ({"amx_tile", "amx_bf16"}, True), (set(), False)],
)
def test_a_cpu_multiplies_bfloat16_natively_only_with_avx512_bf16_or_amx(monkeypatch, flags, native):
    """The check on any machine: the flags of CPUs with and without the instructions, as /proc/cpuinfo names them."""
    monkeypatch.setattr(precision, "cpu_flags", lambda: frozenset(flags))
    assert precision.has_native_bfloat16(th.device("cpu")) is native


def test_auto_times_one_row_per_independent_agent(monkeypatch):
    from stable_baselines3.common.env_util import make_vec_env

    _hardware(monkeypatch, native=True)
    rows = []
    monkeypatch.setattr(
        precision,
        "time_planner_dtypes",
        lambda planner, model, obs_dim, n_rows: rows.append(n_rows) or {"float32": 1.0, "bfloat16": 0.5},
    )
    model = NNMPPI("MlpPolicy", make_vec_env(ENV, n_envs=3, seed=0), planner_dtype="auto", independent_agents=True, **KWARGS)
    assert rows == [3] and model.policy.planner.settings.dtype == "bfloat16"
    model.learn(30)


def test_a_saved_dtype_is_the_one_a_loaded_model_plans_in(tmp_path):
    model = MaxDiffMPPI("MlpPolicy", ENV, seed=0, planner_dtype="bfloat16", **KWARGS)
    model.save(tmp_path / "model.zip")
    assert MaxDiffMPPI.load(tmp_path / "model.zip").policy.planner.settings.dtype == "bfloat16"
    loaded = MaxDiffMPPI.load(tmp_path / "model.zip", planner_dtype="float32")  # chosen at load
    assert loaded.policy.planner.settings.dtype == "float32"
