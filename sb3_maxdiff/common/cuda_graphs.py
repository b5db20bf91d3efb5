"""
The MPPI planning step and the batched agents' model updates, each captured as one CUDA graph and replayed,
so that a call costs one graph launch instead of hundreds of kernel launches (on a GPU both are bound by
launches, not arithmetic).
"""

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import torch as th
from torch import nn

from sb3_maxdiff.common.models import DynamicsRewardBase, ModelLosses
from sb3_maxdiff.common.mppi import MPPIPlanner, PlanResult
from sb3_maxdiff.common.optimizers import AgentAdam
from sb3_maxdiff.common.training import ModelUpdate, model_updates

# Eager calls on a side stream before the capture (cuBLAS workspaces and the planner's caches are set up there).
WARMUP_CALLS = 2


def copied_losses(losses: ModelLosses, copy: Callable[[th.Tensor], th.Tensor]) -> ModelLosses:
    """``losses`` with ``copy`` applied to each of them (the value loss stays None where there is none)."""
    value = None if losses.value is None else copy(losses.value)
    return ModelLosses(copy(losses.total), copy(losses.dynamics), copy(losses.reward), value)


def storage_pointers(*modules: nn.Module | None) -> tuple[int, ...]:
    """
    Addresses of the modules' parameters and buffers (None: no module): a captured graph reads them where they
    were at capture, so it stays valid exactly while these do not change. Host metadata only.
    """
    tensors = [tensor for module in modules if module is not None for tensor in (*module.parameters(), *module.buffers())]
    return tuple(tensor.data_ptr() for tensor in tensors)


class PlanGraph:
    """
    One call of :meth:`MPPIPlanner.plan` for fixed shapes on a CUDA device, captured once and replayed.

    Replays read the model's parameters and the path entropy's weight in place, so optimizer steps,
    ``load_state_dict`` and ``alpha.fill_`` between calls are seen; moving the model (``.to``) or replacing a
    tensor is not, which :func:`storage_pointers` detects (the owner then captures a new graph). The random
    stream is left as an eager call would leave it: the warm-up calls' draws are undone, and each replay draws
    the noise an eager call would draw from the same generator state.

    :param planner: the planner
    :param model: its learned model (on the CUDA device)
    :param obs: example observations, shape (E, n): the graph is for this shape, dtype and device
    :param nominal: example warm start, shape (E, H, m)
    """

    def __init__(self, planner: MPPIPlanner, model: nn.Module, obs: th.Tensor, nominal: th.Tensor):
        if obs.device.type != "cuda":
            raise ValueError(f"obs must be on a CUDA device to capture a CUDA graph, got device {obs.device}")
        self.pointers = storage_pointers(model, planner.entropy_bonus)
        self.obs, self.nominal = obs.detach().clone(), nominal.detach().clone()
        self.reset = th.zeros(obs.shape[0], dtype=th.bool, device=obs.device)
        self.graph = th.cuda.CUDAGraph()

        def call() -> PlanResult:
            return planner.plan(model, self.obs, self.nominal, self.reset)

        rng_state = th.cuda.get_rng_state(obs.device)
        side_stream = th.cuda.Stream(obs.device)
        side_stream.wait_stream(th.cuda.current_stream(obs.device))
        with th.cuda.stream(side_stream):
            for _ in range(WARMUP_CALLS):
                call()
        th.cuda.current_stream(obs.device).wait_stream(side_stream)
        th.cuda.set_rng_state(rng_state, obs.device)
        with th.cuda.graph(self.graph):
            self.output = call()

    def matches(self, obs: th.Tensor, nominal: th.Tensor) -> bool:
        """Whether this graph can plan for these inputs: same shapes, dtype and device."""
        return (
            obs.shape == self.obs.shape
            and obs.dtype == self.obs.dtype
            and obs.device == self.obs.device
            and nominal.shape == self.nominal.shape
        )

    def __call__(self, obs: th.Tensor, nominal: th.Tensor, reset: th.Tensor | None) -> PlanResult:
        """Plan (see :meth:`MPPIPlanner.plan`); the results are copies, so the next replay leaves them as they are."""
        self.obs.copy_(obs)
        self.nominal.copy_(nominal)
        if reset is None:
            self.reset.zero_()
        else:
            self.reset.copy_(reset)
        self.graph.replay()
        return PlanResult(*(tensor.clone() for tensor in self.output))


class CapturedGraphs:
    """
    Graphs of one kind captured for one owner, one per input shape, each kept while the storage it reads (its
    ``pointers``) stays where it was at capture: graphs captured before the model's storage changed read stale
    memory, so they are dropped.
    """

    def __init__(self) -> None:
        self.graphs: list = []

    def find_or_capture(self, pointers: tuple[int, ...], matches: Callable[[Any], bool], capture: Callable[[], Any]) -> Any:
        """The graph that ``matches`` among those for ``pointers``, else a new one from ``capture`` (which may raise)."""
        self.graphs = [graph for graph in self.graphs if graph.pointers == pointers]
        graph = next((graph for graph in self.graphs if matches(graph)), None)
        if graph is None:
            graph = capture()
            self.graphs.append(graph)
        return graph


class GraphedPlanning(CapturedGraphs):
    """
    The CUDA graphs of one policy's planning calls, one per input shape (e.g. training on N environments,
    evaluating on one), captured on first use and again when the model's storage changes. Where a capture
    fails (an operation that cannot be captured, e.g. on an older driver), it warns once and plans eagerly.
    """

    def __init__(self) -> None:
        super().__init__()
        self.failed = False

    def plan(
        self,
        planner: MPPIPlanner,
        model: nn.Module,
        obs: th.Tensor,
        nominal: th.Tensor,
        reset: th.Tensor | None,
    ) -> PlanResult:
        if self.failed or obs.device.type != "cuda":
            return planner.plan(model, obs, nominal, reset)
        try:
            graph = self.find_or_capture(
                storage_pointers(model, planner.entropy_bonus, planner.prior),  # type: ignore[arg-type]
                lambda graph: graph.matches(obs, nominal),
                lambda: PlanGraph(planner, model, obs, nominal),
            )
        except RuntimeError as error:
            self.failed = True
            warnings.warn(f"cuda_graph=True: capturing the planner failed ({error}); planning eagerly instead")
            return planner.plan(model, obs, nominal, reset)
        return graph(obs, nominal, reset)


def optimizer_pointers(optimizer: th.optim.Optimizer) -> tuple[int, ...]:
    """Addresses of the optimizer's state tensors (``load_state_dict`` replaces them). Host metadata only."""
    return tuple(
        value.data_ptr() for state in optimizer.state.values() for value in state.values() if isinstance(value, th.Tensor)
    )


def learning_rates(optimizer: th.optim.Optimizer) -> tuple[float, ...]:
    """The learning rate of each parameter group (a captured update holds them as constants)."""
    return tuple(float(group["lr"]) for group in optimizer.param_groups)


@th.no_grad()
def restore(
    model: nn.Module,
    optimizer: th.optim.Optimizer,
    parameters: list[th.Tensor],
    states: dict[th.Tensor, dict[str, th.Tensor]],
) -> None:
    """
    Copy saved parameters and optimizer state back in place; state that did not exist when they were saved
    becomes zeros, which is the state an eager first step starts from.
    """
    for parameter, saved in zip(model.parameters(), parameters):
        parameter.copy_(saved)
    for param, state in optimizer.state.items():
        for key, value in state.items():
            if param in states:
                value.copy_(states[param][key])
            else:
                value.zero_()


class UpdateGraph:
    """
    ``gradient_steps`` model updates of one agent or N (loss, backward pass, :class:`AgentAdam` step with its
    per-agent skip of a non-finite loss; :func:`~sb3_maxdiff.common.training.model_updates`) on a CUDA device,
    captured once for fixed shapes and replayed on each new draw. The policy captures one minibatch's update
    (``gradient_steps=1``), which ``train`` replays once per minibatch. The arithmetic is the eager updates' own; the warm-up
    updates made before the capture are undone, so the first replay starts from the same parameters and
    optimizer state as an eager update would.

    A replay reads and writes the parameters and the optimizer state in place; the learning rates are
    constants of the graph (:class:`GraphedUpdates` stops capturing when they change).

    :param model: batched learned model on the CUDA device
    :param optimizer: its :class:`AgentAdam`
    :param data: example replay draw (the graph is for these shapes, dtypes and device)
    :param batch_size: rows per update
    :param gradient_steps: updates per call
    """

    def __init__(
        self,
        model: DynamicsRewardBase,
        optimizer: AgentAdam,
        data: Sequence[th.Tensor],
        batch_size: int,
        gradient_steps: int,
    ):
        device = data[0].device
        if device.type != "cuda":
            raise ValueError(f"data must be on a CUDA device to capture a CUDA graph, got device {device}")
        self.data = tuple(tensor.detach().clone() for tensor in data)
        self.batch_size, self.gradient_steps = batch_size, gradient_steps
        self.learning_rates = learning_rates(optimizer)
        self.graph = th.cuda.CUDAGraph()

        def call() -> list[ModelUpdate]:
            return model_updates(model, optimizer, self.data, batch_size, gradient_steps)

        parameters = [param.detach().clone() for param in model.parameters()]
        states = {param: {key: value.clone() for key, value in state.items()} for param, state in optimizer.state.items()}
        side_stream = th.cuda.Stream(device)
        side_stream.wait_stream(th.cuda.current_stream(device))
        try:
            with th.cuda.stream(side_stream):
                for _ in range(WARMUP_CALLS):
                    call()
        finally:
            th.cuda.current_stream(device).wait_stream(side_stream)
            restore(model, optimizer, parameters, states)
        optimizer.zero_grad(set_to_none=True)
        with th.cuda.graph(self.graph):
            updates = call()
        # the outputs, detached: a replay overwrites them in place
        self.outputs = [
            ModelUpdate(copied_losses(update.losses, th.Tensor.detach), update.finite, update.applied) for update in updates
        ]
        self.pointers = storage_pointers(model) + optimizer_pointers(optimizer)

    def matches(self, data: Sequence[th.Tensor], batch_size: int, gradient_steps: int) -> bool:
        """Whether this graph can update on this draw: same shapes, dtypes, device and split."""
        return (
            (batch_size, gradient_steps) == (self.batch_size, self.gradient_steps)
            and len(data) == len(self.data)
            and all(
                (new.shape, new.dtype, new.device) == (old.shape, old.dtype, old.device) for new, old in zip(data, self.data)
            )
        )

    def __call__(self, data: Sequence[th.Tensor]) -> list[ModelUpdate]:
        """Update on ``data``; the returned losses are copies, so the next replay leaves them as they are."""
        for static, tensor in zip(self.data, data):
            static.copy_(tensor)
        self.graph.replay()
        return [
            ModelUpdate(copied_losses(update.losses, th.Tensor.clone), update.finite.clone(), update.applied)
            for update in self.outputs
        ]


class GraphedUpdates(CapturedGraphs):
    """
    The CUDA graphs of one model's updates, one per replay-draw shape, captured on first use and again when
    the model's or the optimizer's storage changes (``.to``, ``optimizer.load_state_dict``). Updates run eagerly
    (:func:`model_updates`) off CUDA, for an optimizer other than :class:`AgentAdam` (whose skip of a non-finite loss
    would read the host), once the learning rate has changed between calls (a schedule: a graph
    holds it as a constant; a warning says so), and where a capture fails (a warning says so).
    """

    def __init__(self) -> None:
        super().__init__()
        self.eager = False

    def run(
        self,
        model: DynamicsRewardBase,
        optimizer: th.optim.Optimizer,
        data: Sequence[th.Tensor],
        batch_size: int,
        gradient_steps: int,
    ) -> list[ModelUpdate]:
        """The updates of :func:`model_updates`, replayed from a captured graph where that is possible."""
        graph = self._graph(model, optimizer, data, batch_size, gradient_steps)
        if graph is None:
            return model_updates(model, optimizer, data, batch_size, gradient_steps)
        return graph(data)

    def _graph(
        self,
        model: DynamicsRewardBase,
        optimizer: th.optim.Optimizer,
        data: Sequence[th.Tensor],
        batch_size: int,
        gradient_steps: int,
    ) -> UpdateGraph | None:
        """The graph for these updates, captured if need be; None where they run eagerly."""
        if self.eager or not isinstance(optimizer, AgentAdam) or data[0].device.type != "cuda":
            return None
        rates = learning_rates(optimizer)
        if self.graphs and rates != self.graphs[0].learning_rates:
            self.stop(f"the learning rate changed from {self.graphs[0].learning_rates} to {rates}")
            return None
        try:
            return self.find_or_capture(
                storage_pointers(model) + optimizer_pointers(optimizer),
                lambda graph: graph.matches(data, batch_size, gradient_steps),
                lambda: UpdateGraph(model, optimizer, data, batch_size, gradient_steps),
            )
        except RuntimeError as error:
            self.stop(f"capturing the model updates failed ({error})")
            return None

    def stop(self, reason: str) -> None:
        """Update eagerly from now on, with a warning that says why."""
        self.eager, self.graphs = True, []
        warnings.warn(f"cuda_graph=True: {reason}; the model updates run eagerly from now on")
