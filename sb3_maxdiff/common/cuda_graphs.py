"""
The MPPI planning step captured as one CUDA graph and replayed, so that a call costs one graph launch
instead of a few hundred kernel launches (on a GPU the planner is bound by launches, not arithmetic).
"""

import warnings

import torch as th
from torch import nn

from sb3_maxdiff.common.mppi import MPPIPlanner, PlanResult

# Eager calls on a side stream before the capture (cuBLAS workspaces and the planner's caches are set up there).
WARMUP_CALLS = 2


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
        self.pointers = storage_pointers(model, planner.path_entropy)
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


class GraphedPlanning:
    """
    The CUDA graphs of one policy's planning calls, one per input shape (e.g. training on N environments,
    evaluating on one), captured on first use and again when the model's storage changes. Where a capture
    fails (an operation that cannot be captured, e.g. on an older driver), it warns once and plans eagerly.
    """

    def __init__(self) -> None:
        self.graphs: list[PlanGraph] = []
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
        # graphs captured before the model's storage changed read stale memory: dropped
        pointers = storage_pointers(model, planner.path_entropy)
        self.graphs = [graph for graph in self.graphs if graph.pointers == pointers]
        graph = next((graph for graph in self.graphs if graph.matches(obs, nominal)), None)
        if graph is None:
            try:
                graph = PlanGraph(planner, model, obs, nominal)
            except RuntimeError as error:
                self.failed = True
                warnings.warn(f"cuda_graph=True: capturing the planner failed ({error}); planning eagerly instead")
                return planner.plan(model, obs, nominal, reset)
            self.graphs.append(graph)
        return graph(obs, nominal, reset)
