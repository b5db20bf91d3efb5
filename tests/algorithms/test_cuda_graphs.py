"""The planner captured as a CUDA graph (``cuda_graph=True``): eager fallback everywhere, replay checks on CUDA."""

import copy
import pickle

import numpy as np
import pytest
import torch as th
from helpers import TINY
from stable_baselines3.common.env_util import make_vec_env

from sb3_maxdiff import NNMPPI, MaxDiffMPPI
from sb3_maxdiff.common.cuda_graphs import (
    GraphedPlanning,
    GraphedUpdates,
    PlanGraph,
    UpdateGraph,
    optimizer_pointers,
    restore,
    storage_pointers,
)
from sb3_maxdiff.common.entropy import EntropyBonus, make_path_entropy
from sb3_maxdiff.common.models import BatchedDynamicsRewardModel, DynamicsRewardModel
from sb3_maxdiff.common.mppi import MPPIPlanner
from sb3_maxdiff.common.optimizers import AgentAdam
from sb3_maxdiff.common.training import model_updates

POINT_MASS = "sb3_maxdiff/PointMass-beta1-v0"
needs_cuda = pytest.mark.skipif(not th.cuda.is_available(), reason="CUDA not available")


def planner_and_model(
    batched: bool, device: str = "cpu"
) -> tuple[MPPIPlanner, DynamicsRewardModel | BatchedDynamicsRewardModel]:
    th.manual_seed(0)
    entropy = make_path_entropy(obs_dim=4, horizon=10, dims=[0, 1], weights=[1.0, 0.5])
    bonus = EntropyBonus(entropy, alpha=2.0).to(device)
    planner = MPPIPlanner(2, horizon=10, n_samples=64, temperature=0.5, noise_std=0.3, entropy_bonus=bonus)
    model = BatchedDynamicsRewardModel(3, 4, 2, [32, 32]) if batched else DynamicsRewardModel(4, 2, [32, 32])
    return planner, model.to(device)


def plan_sequence(plan, n_envs: int, device: str, calls: int = 4) -> list:
    """Consecutive calls threading the warm start, with an episode start at the third call."""
    obs_rng = th.Generator().manual_seed(1)
    nominal, results = th.zeros((n_envs, 10, 2), device=device), []
    for call in range(calls):
        obs = th.randn((n_envs, 4), generator=obs_rng).to(device)
        reset = th.full((n_envs,), call == 2, dtype=th.bool, device=device)
        result = plan(obs, nominal, reset)
        nominal = result.nominal
        results.append(result)
    return results


def eager_and_graphed_plans(batched: bool, device: str) -> tuple[GraphedPlanning, list, list]:
    """The same plan sequence (one agent on 2 environments, or 3 batched agents) eagerly and through the graphs."""
    planner, model = planner_and_model(batched, device)
    graphs = GraphedPlanning()
    n_envs = 3 if batched else 2
    th.manual_seed(5)
    eager = plan_sequence(lambda o, n, r: planner.plan(model, o, n, r), n_envs, device)
    th.manual_seed(5)
    graphed = plan_sequence(lambda o, n, r: graphs.plan(planner, model, o, n, r), n_envs, device)
    return graphs, eager, graphed


def agents_and_optimizer(device: str = "cpu") -> tuple[BatchedDynamicsRewardModel, AgentAdam]:
    th.manual_seed(0)
    model = BatchedDynamicsRewardModel(3, 4, 2, [32, 32]).to(device)
    return model, AgentAdam(model.parameters(), lr=1e-3, weight_decay=1e-4)


def replay_draws(device: str, draws: int = 4, rows: int = 3 * 8) -> list[tuple[th.Tensor, ...]]:
    """Replay draws for 3 agents (obs 4, action 2); in the third, agent 1's rows are all NaN (a skipped update)."""
    rng = th.Generator().manual_seed(2)
    result = []
    for draw in range(draws):
        sizes = [4, 2, 4, 2, 1, 1]
        data = [th.randn((3, rows, size), generator=rng) for size in sizes]
        data[-1] = (data[-1] > 0).float()
        if draw == 2:
            data[0][1] = float("nan")
        result.append(tuple(tensor.to(device) for tensor in data))
    return result


def assert_same_training_state(first, second, exact: bool) -> None:
    (model_a, optimizer_a), (model_b, optimizer_b) = first, second
    compare = th.testing.assert_close if not exact else lambda a, b: th.testing.assert_close(a, b, rtol=0, atol=0)
    for a, b in zip(model_a.parameters(), model_b.parameters()):
        compare(a, b)
    for state_a, state_b in zip(optimizer_a.state.values(), optimizer_b.state.values()):
        for key in state_a:
            compare(state_a[key], state_b[key])


def test_graphed_updates_off_cuda_are_the_eager_updates():
    """
    The fallback, not the graphs (those are tested on CUDA below): off CUDA nothing is captured (no graph, no eager
    first step kept) and the updates are the eager ones bit for bit, skipped rows of a NaN agent included.
    """
    graphed, eager = agents_and_optimizer(), agents_and_optimizer()
    updates = GraphedUpdates()
    for data in replay_draws("cpu"):
        done = updates.run(*graphed, data, batch_size=8, gradient_steps=3)
        expected = model_updates(*eager, data, batch_size=8, gradient_steps=3)
        assert len(done) == 3 and [update.applied for update in done] == [True] * 3
        for update, reference in zip(done, expected):
            assert th.equal(update.finite, reference.finite)
            for a, b in zip(update.losses, reference.losses):
                if a is None or b is None:  # no value net: no value loss in either
                    assert a is None and b is None
                    continue
                th.testing.assert_close(a.detach(), b.detach(), rtol=0, atol=0, equal_nan=True)
        assert_same_training_state(graphed, eager, exact=True)
    assert not updates.graphs and not updates.eager
    # the third draw had agent 1's rows all NaN: that agent skipped those updates, the others did not
    assert eager[1].state[eager[0].flat]["step"].tolist() == [12.0, 9.0, 12.0]


def test_update_graph_needs_a_cuda_device():
    model, optimizer = agents_and_optimizer()
    with pytest.raises(ValueError, match="data must be on a CUDA device"):
        UpdateGraph(model, optimizer, replay_draws("cpu", draws=1)[0], batch_size=8, gradient_steps=3)


def test_restore_undoes_updates_and_starts_new_state_as_an_eager_first_step():
    model, optimizer = agents_and_optimizer()
    reference = agents_and_optimizer()
    draws = replay_draws("cpu", draws=3)
    # no optimizer state yet: the state made by the undone updates becomes the zeros of a first step
    saved = [param.detach().clone() for param in model.parameters()]
    model_updates(model, optimizer, draws[0], batch_size=8, gradient_steps=3)
    assert not th.equal(model.flat, saved[0])
    restore(model, optimizer, saved, {})
    assert th.equal(model.flat, saved[0])
    assert all(th.count_nonzero(value) == 0 for value in optimizer.state[model.flat].values())
    for data in draws[1:]:
        model_updates(model, optimizer, data, batch_size=8, gradient_steps=3)
        model_updates(*reference, data, batch_size=8, gradient_steps=3)
    assert_same_training_state((model, optimizer), reference, exact=True)
    # with state: it is put back as it was
    saved = [param.detach().clone() for param in model.parameters()]
    states = {param: {key: value.clone() for key, value in state.items()} for param, state in optimizer.state.items()}
    model_updates(model, optimizer, draws[0], batch_size=8, gradient_steps=3)
    restore(model, optimizer, saved, states)
    assert_same_training_state((model, optimizer), reference, exact=True)


def test_optimizer_pointers_change_when_the_state_is_loaded_not_when_updated():
    model, optimizer = agents_and_optimizer()
    assert optimizer_pointers(optimizer) == ()
    data = replay_draws("cpu", draws=1)[0]
    model_updates(model, optimizer, data, batch_size=8, gradient_steps=1)
    before = optimizer_pointers(optimizer)
    assert len(before) == 3  # step, exp_avg, exp_avg_sq of the one flat parameter
    model_updates(model, optimizer, data, batch_size=8, gradient_steps=1)
    assert optimizer_pointers(optimizer) == before
    optimizer.load_state_dict(copy.deepcopy(optimizer.state_dict()))
    assert optimizer_pointers(optimizer) != before


def test_storage_pointers_change_when_a_tensor_is_replaced_not_when_updated():
    planner, model = planner_and_model(batched=False)
    bonus = planner.entropy_bonus
    before = storage_pointers(model, bonus)
    with th.no_grad():
        model.dynamics[0].weight.add_(1.0)  # an optimizer step or load_state_dict: in place
        bonus.alpha.fill_(3.0)
    assert storage_pointers(model, bonus) == before
    model.dynamics[0].weight = th.nn.Parameter(model.dynamics[0].weight.detach().clone())
    assert storage_pointers(model, bonus) != before
    other = EntropyBonus(bonus.entropy, 3.0)
    assert storage_pointers(model, other) != storage_pointers(model, bonus)
    assert storage_pointers(model, None) == storage_pointers(model)


def test_plan_graph_needs_a_cuda_device():
    planner, model = planner_and_model(batched=False)
    with pytest.raises(ValueError, match="obs must be on a CUDA device"):
        PlanGraph(planner, model, th.zeros((1, 4)), th.zeros((1, 10, 2)))


@pytest.mark.parametrize("batched", [False, True])
def test_graphed_planning_off_cuda_is_the_eager_planner(batched):
    """The fallback off CUDA: no graph captured, none failed, the plans those of the eager planner bit for bit."""
    graphs, eager, graphed = eager_and_graphed_plans(batched, "cpu")
    assert not graphs.graphs and not graphs.failed
    for first, second in zip(eager, graphed):
        assert all(th.equal(a, b) for a, b in zip(first, second))


@pytest.mark.parametrize("algo", [NNMPPI, MaxDiffMPPI])
def test_cuda_graph_on_cpu_warns_and_trains_as_without_it(algo):
    def train(cuda_graph: bool):
        env = make_vec_env(POINT_MASS, n_envs=2, seed=0)
        model = algo("MlpPolicy", env, seed=0, device="cpu", cuda_graph=cuda_graph, **TINY)
        model.learn(60)
        return model

    with pytest.warns(UserWarning, match="cuda_graph=True has no effect on device cpu"):
        graphed = train(True)
    eager = train(False)
    assert graphed.cuda_graph and graphed.policy.cuda_graph
    assert np.array_equal(graphed.replay_buffer.actions[:30], eager.replay_buffer.actions[:30])
    # a copy or a pickle of the policy carries the option, not captured graphs
    copy = pickle.loads(pickle.dumps(graphed.policy))
    assert copy.cuda_graph and not copy._graphs.graphs


@pytest.mark.parametrize("value", ["yes", 1, None])
def test_cuda_graph_must_be_a_bool(value):
    with pytest.raises(ValueError, match="cuda_graph must be True or False"):
        MaxDiffMPPI(POINT_MASS, cuda_graph=value, **TINY)


def test_cuda_graph_is_chosen_at_load_not_saved(tmp_path):
    from stable_baselines3.common.save_util import load_from_zip_file, save_to_zip_file

    with pytest.warns(UserWarning, match="no effect on device cpu"):
        model = MaxDiffMPPI(POINT_MASS, device="cpu", cuda_graph=True, **TINY)
        model.save(tmp_path / "model.zip")
        loaded = MaxDiffMPPI.load(tmp_path / "model.zip", device="cpu", cuda_graph=True)
    assert "cuda_graph" not in load_from_zip_file(tmp_path / "model.zip")[0]  # like the device: how to run
    assert loaded.cuda_graph and loaded.policy.cuda_graph
    plain = MaxDiffMPPI.load(tmp_path / "model.zip")
    assert not plain.cuda_graph and not plain.policy.cuda_graph
    # a file of an earlier version, which saved it, loads with what load is given
    data, params, _ = load_from_zip_file(tmp_path / "model.zip")
    save_to_zip_file(tmp_path / "old.zip", data={**data, "cuda_graph": True}, params=params)
    assert not MaxDiffMPPI.load(tmp_path / "old.zip").cuda_graph
    with pytest.raises(ValueError, match="cuda_graph must be True or False"):
        MaxDiffMPPI.load(tmp_path / "model.zip", cuda_graph="yes")


def test_learn_leaves_the_flush_denormal_setting_as_it_was():
    from sb3_maxdiff.common.utils import flush_denormal_enabled

    model = MaxDiffMPPI(POINT_MASS, **TINY)
    for before in (False, True):
        th.set_flush_denormal(before)
        try:
            model.learn(5)
            assert flush_denormal_enabled() == before
        finally:
            th.set_flush_denormal(False)


def test_predict_plans_with_denormals_flushed_on_a_cpu_and_puts_the_setting_back(monkeypatch):
    """Evaluation plans as training does: a trained model's plan is several times slower with denormal floats."""
    from sb3_maxdiff.common.utils import flush_denormal_enabled

    model = MaxDiffMPPI(POINT_MASS, device="cpu", **TINY)
    plan, seen = model.policy.plan, []

    def recording_plan(*args, **kwargs):
        seen.append(flush_denormal_enabled())
        return plan(*args, **kwargs)

    monkeypatch.setattr(model.policy, "plan", recording_plan)
    obs = model.observation_space.sample()
    for before in (False, True):
        th.set_flush_denormal(before)
        try:
            model.predict(obs)
            assert flush_denormal_enabled() == before
        finally:
            th.set_flush_denormal(False)
    assert seen == [True, True]


# ----- on a CUDA device ------------------------------------------------------------------------------
@needs_cuda
@pytest.mark.parametrize("batched", [False, True])
def test_replay_equals_eager_planning(batched):
    """A replay draws the noise an eager call draws from the same generator state, so the plans agree."""
    graphs, eager, graphed = eager_and_graphed_plans(batched, "cuda")
    assert len(graphs.graphs) == 1 and not graphs.failed
    for first, second in zip(eager, graphed):
        for a, b in zip(first, second):
            th.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)


@needs_cuda
def test_replay_sees_in_place_updates_and_recaptures_after_a_move():
    planner, model = planner_and_model(False, "cuda")
    planner.entropy_bonus.alpha.zero_()
    graphs = GraphedPlanning()
    obs, nominal = th.zeros((2, 4), device="cuda"), th.zeros((2, 10, 2), device="cuda")
    th.manual_seed(0)
    before = graphs.plan(planner, model, obs, nominal, None)
    with th.no_grad():  # every reward shifted by 0.25: every return by 10 * 0.25, the weights unchanged
        model.reward[-1].bias.add_(0.25)
    th.manual_seed(0)
    after = graphs.plan(planner, model, obs, nominal, None)
    assert len(graphs.graphs) == 1
    th.testing.assert_close(after.nominal, before.nominal)
    shift = after.stat("predicted_return") - before.stat("predicted_return")
    th.testing.assert_close(shift, th.full((2,), 2.5, device="cuda"))
    # results are copies: a later replay leaves them as they were
    kept = after.nominal.clone()
    graphs.plan(planner, model, obs + 1.0, nominal, None)
    assert th.equal(after.nominal, kept)
    # a replaced parameter is not where the graph reads: a new graph is captured
    model.reward[-1].bias = th.nn.Parameter(model.reward[-1].bias.detach() - 0.25)
    th.manual_seed(0)
    moved = graphs.plan(planner, model, obs, nominal, None)
    assert len(graphs.graphs) == 1 and graphs.graphs[0].pointers == storage_pointers(model, planner.entropy_bonus)
    th.testing.assert_close(moved.stat("predicted_return"), before.stat("predicted_return"))


def train_on_cuda(cuda_graph: bool, **kwargs):
    """MaxDiff on two point-mass environments on the GPU, 40 steps each, with or without CUDA graphs."""
    model = MaxDiffMPPI(make_vec_env(POINT_MASS, n_envs=2, seed=0), seed=0, device="cuda", cuda_graph=cuda_graph, **kwargs)
    model.learn(2 * 40)
    return model


@needs_cuda
@pytest.mark.parametrize("independent_agents", [False, True])
@pytest.mark.parametrize("entropy_jitter", ["diagonal", "random"])  # a random jitter is drawn inside the graph too
def test_cuda_graph_training_matches_eager_training(independent_agents, entropy_jitter):
    options = dict(independent_agents=independent_agents, entropy_jitter=entropy_jitter, **TINY)
    graphed, eager = train_on_cuda(True, **options), train_on_cuda(False, **options)
    assert graphed.policy._graphs.graphs  # the planner ran as a graph
    # the updates ran as graphs too: N agents' and, a batch of one, a single agent's
    assert graphed.policy._graphed_updates.graphs and not graphed.policy._graphed_updates.eager
    np.testing.assert_allclose(graphed.replay_buffer.actions[:30], eager.replay_buffer.actions[:30], atol=1e-4)
    th.testing.assert_close(graphed.policy.model.state_dict(), eager.policy.model.state_dict(), rtol=1e-4, atol=1e-4)


@needs_cuda
@pytest.mark.parametrize("independent_agents", [False, True])
def test_cuda_graph_planning_with_the_critic_matches_eager_training(independent_agents):
    """The actor's prior paths and the critics' terminal value are planned inside the captured graph."""
    policy_kwargs = {**TINY["policy_kwargs"], "critic_net_arch": [16]}
    options = dict(independent_agents=independent_agents, terminal_value="q", actor_samples=0.1)
    options.update({**TINY, "policy_kwargs": policy_kwargs})
    graphed, eager = train_on_cuda(True, **options), train_on_cuda(False, **options)
    assert graphed.policy._graphs.graphs and not graphed.policy._graphs.failed
    np.testing.assert_allclose(graphed.replay_buffer.actions[:30], eager.replay_buffer.actions[:30], atol=1e-4)
    graphed_critics, eager_critics = graphed.policy.actor_critic.state_dict(), eager.policy.actor_critic.state_dict()
    th.testing.assert_close(graphed_critics, eager_critics, rtol=1e-4, atol=1e-4)


@needs_cuda
def test_graphed_updates_made_before_the_environments_step_learn_the_same():
    """overlap_updates=True on the GPU, planner and updates as graphs: the actions and parameters of updates after the
    step (the same kernels in the same order on the device: equal, not only close)."""

    def train(overlap_updates: bool):
        env = make_vec_env(POINT_MASS, n_envs=3, seed=0)
        model = MaxDiffMPPI(
            env, seed=0, device="cuda", cuda_graph=True, independent_agents=True, overlap_updates=overlap_updates, **TINY
        )
        model.learn(3 * 60)
        return model

    overlapped, after = train(True), train(False)
    assert overlapped.policy._graphed_updates.graphs and not overlapped.policy._graphed_updates.eager
    np.testing.assert_array_equal(overlapped.replay_buffer.actions[:60], after.replay_buffer.actions[:60])
    for name, value in after.policy.model.state_dict().items():
        assert th.equal(overlapped.policy.model.state_dict()[name], value), name


@needs_cuda
def test_one_agents_update_replays_equal_eager_updates():
    """A single agent, a batch of one without an agent axis: its updates replay from a graph as N agents' do."""

    def one_agent():
        th.manual_seed(0)
        model = BatchedDynamicsRewardModel(1, 4, 2, [32, 32], agent_axis=False).to("cuda")
        return model, AgentAdam(model.parameters(), lr=1e-3, weight_decay=1e-4)

    graphed, eager = one_agent(), one_agent()
    updates = GraphedUpdates()
    for data in replay_draws("cuda"):
        rows = [tensor[1] for tensor in data]  # agent 1's rows, no agent axis (the third draw's are NaN: a skip)
        done = updates.run(*graphed, rows, batch_size=8, gradient_steps=3)
        expected = model_updates(*eager, rows, batch_size=8, gradient_steps=3)
        for update, reference in zip(done, expected):
            assert update.losses.total.shape == () and th.equal(update.finite, reference.finite)
            th.testing.assert_close(update.losses.total, reference.losses.total.detach(), equal_nan=True)
        assert_same_training_state(graphed, eager, exact=False)
    assert len(updates.graphs) == 1 and not updates.eager
    assert eager[1].state[eager[0].flat]["step"].tolist() == [9.0]


@needs_cuda
def test_update_replays_equal_eager_updates():
    """Replays of the captured updates (a skipped agent included) leave the same parameters and optimizer state."""
    graphed, eager = agents_and_optimizer("cuda"), agents_and_optimizer("cuda")
    updates = GraphedUpdates()
    for data in replay_draws("cuda"):
        done = updates.run(*graphed, data, batch_size=8, gradient_steps=3)
        expected = model_updates(*eager, data, batch_size=8, gradient_steps=3)
        for update, reference in zip(done, expected):
            assert th.equal(update.finite, reference.finite)
            th.testing.assert_close(update.losses.total, reference.losses.total.detach(), equal_nan=True)
        assert_same_training_state(graphed, eager, exact=False)
    assert len(updates.graphs) == 1 and not updates.eager
    assert eager[1].state[eager[0].flat]["step"].tolist() == [12.0, 9.0, 12.0]
    # results are copies: a later replay leaves them as they were
    kept = done[0].losses.total.clone()
    updates.run(*graphed, replay_draws("cuda", draws=1)[0], batch_size=8, gradient_steps=3)
    assert th.equal(done[0].losses.total, kept)
    model_updates(*eager, replay_draws("cuda", draws=1)[0], batch_size=8, gradient_steps=3)
    # loaded optimizer state is new storage: a new graph is captured, from the loaded state
    for _, optimizer in (graphed, eager):
        optimizer.load_state_dict(copy.deepcopy(optimizer.state_dict()))
    data = replay_draws("cuda", draws=1)[0]
    updates.run(*graphed, data, batch_size=8, gradient_steps=3)
    model_updates(*eager, data, batch_size=8, gradient_steps=3)
    assert len(updates.graphs) == 1 and updates.graphs[0].pointers[-3:] == optimizer_pointers(graphed[1])
    assert_same_training_state(graphed, eager, exact=False)
    # another split of the draw is another graph; a changed learning rate ends the capturing, with a warning
    updates.run(*graphed, data, batch_size=12, gradient_steps=2)
    model_updates(*eager, data, batch_size=12, gradient_steps=2)
    assert len(updates.graphs) == 2
    for optimizer in (graphed[1], eager[1]):
        optimizer.param_groups[0]["lr"] = 5e-4
    with pytest.warns(UserWarning, match="the learning rate changed"):
        updates.run(*graphed, data, batch_size=8, gradient_steps=3)
    model_updates(*eager, data, batch_size=8, gradient_steps=3)
    assert updates.eager and not updates.graphs
    assert_same_training_state(graphed, eager, exact=False)


@needs_cuda
def test_runner_trains_batched_seeds_with_cuda_graphs(tmp_path):
    import json

    from sb3_maxdiff.experiments.__main__ import main as experiments_main
    from sb3_maxdiff.experiments.define.specs import RESULT_FILE, build_specs

    cell = ["point-mass-beta", "--budget", "smoke", "--settings", "beta=1", "--methods", "maxdiff"]
    argv = ["run", *cell, "--seeds", "2", "--device", "cuda", "--cuda-graph", "--batch-seeds", "--out", str(tmp_path)]
    assert experiments_main(argv) == 0
    for spec in build_specs("point-mass-beta", "smoke", [0, 1], settings=["beta=1"], methods=["maxdiff"], device="cuda"):
        result = json.loads((tmp_path / spec.relpath / RESULT_FILE).read_text())
        assert result["batched_seeds"] == [0, 1] and np.isfinite(result["eval_returns"][spec.env_id]).all()
