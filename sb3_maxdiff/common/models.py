"""The learned dynamics + reward model shared by NN-MPPI and MaxDiff, alone or batched over independent agents."""

import itertools
import math
from collections.abc import Callable
from typing import Any, NamedTuple

import torch as th
from torch import nn

from sb3_maxdiff.common.fused_rollout import LayerParams, affine, fused_rollout, transposed
from sb3_maxdiff.common.utils import check_fraction, is_integer, is_real

LOG_STD_MIN, LOG_STD_MAX = -10.0, 2.0
HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


class ModelLosses(NamedTuple):
    """Model losses: scalars for one model, shape (N,) for N independent agents (``value``: None without a value net)."""

    total: th.Tensor
    dynamics: th.Tensor
    reward: th.Tensor
    value: th.Tensor | None = None


def mlp_layers(input_dim: int, output_dim: int, net_arch: list[int], init_w: float) -> nn.ModuleList:
    """Linear layers of an MLP; the output layer is initialised uniformly in [-init_w, init_w]."""
    sizes = [input_dim, *net_arch, output_dim]
    layers = nn.ModuleList(nn.Linear(n_in, n_out) for n_in, n_out in itertools.pairwise(sizes))
    output = layers[-1]
    assert isinstance(output, nn.Linear)
    nn.init.uniform_(output.weight, -init_w, init_w)
    nn.init.uniform_(output.bias, -init_w, init_w)
    return layers


def run_mlp(params: list[LayerParams], activation: nn.Module, inputs: th.Tensor) -> th.Tensor:
    """Apply the layers, (W, b) each, with the activation between them (none after the output layer)."""
    hidden = inputs
    for weight, bias in params[:-1]:
        hidden = activation(affine(hidden, *transposed(weight, bias)))
    return affine(hidden, *transposed(*params[-1]))


def check_net_arch(net_arch: list[int] | None, name: str = "net_arch") -> list[int]:
    """The hidden layer sizes (default [200, 200]), or a ValueError naming the parameter ``name``."""
    net_arch = [200, 200] if net_arch is None else list(net_arch)
    if not net_arch or any(not (is_integer(size) and size >= 1) for size in net_arch):
        raise ValueError(f"{name} must be a non-empty list of positive ints (hidden layer sizes), got {net_arch!r}")
    return net_arch


def frozen_copy(layers: nn.ModuleList) -> nn.ModuleList:
    """A copy of linear layers whose weights and biases are buffers, not parameters (a target network)."""
    copies = nn.ModuleList()
    for layer in layers:
        assert isinstance(layer, nn.Linear)
        frozen = nn.Module()
        frozen.register_buffer("weight", layer.weight.detach().clone())
        frozen.register_buffer("bias", layer.bias.detach().clone())
        copies.append(frozen)
    return copies


# the paper's discount of the TD-like reward target: the "reward" head then predicts about r / (1 - 0.95)
PUBLISHED_REWARD_DISCOUNT = 0.95


def reward_head_discount(reward_discount: Any, terminal_value: str | None) -> float:
    """
    The discount of the reward head's TD-like target, checked (an error names ``reward_discount``). None: the paper's
    0.95 without a terminal value; 0 with one, so that the head predicts the one-step reward and a path scores
    ``sum_t gamma^t r_t + gamma^H value(s_H)`` on the value's own scale (with 0.95 the head predicts about
    ``r / (1 - 0.95)``, twenty times the reward the value is learned on, and counts the future twice).
    """
    if reward_discount is None:
        reward_discount = PUBLISHED_REWARD_DISCOUNT if terminal_value is None else 0.0
    if not (is_real(reward_discount) and 0.0 <= reward_discount < 1.0):
        raise ValueError(f"reward_discount must be a number in [0, 1), got {reward_discount!r}")
    return float(reward_discount)


# ----- models ------------------------------------------------------------------------------------
class DynamicsRewardBase(nn.Module):
    """
    Dynamics ``s' ~ N(s + f(s, a), sigma^2)`` with a learned log-std per state dim, and a reward model
    ``r(s, a)``; both MLPs take ``[s, a]`` with ``a`` the normalised action. What the model computes (forward,
    loss, rollout) is written once here, over the parameters that a subclass provides: one model's layers
    (:class:`DynamicsRewardModel`) or N agents' stacked in one tensor (:class:`BatchedDynamicsRewardModel`).

    :param obs_dim: size of the flat observation
    :param action_dim: size of the action
    :param activation_fn: hidden activation
    :param reward_discount: discount of the TD-like reward target (see :func:`reward_head_discount`)
    :param value_discount: discount ``gamma`` of the terminal value's TD target (used only with a value net)
    :param value_tau: step of the value's target network toward the value net after each update (Polyak averaging)

    A model with a value net (``value_net_arch`` in the subclasses) also learns ``V(s)``, the discounted return of
    the behaviour in the replay buffer from ``s``, by temporal differences: ``V(s) <- r + gamma * (1 - done) *
    V_target(s')``, with ``V_target`` a slowly moving copy of ``V``; the planner adds ``gamma^H V(s_H)`` to each
    sampled path's discounted predicted return.
    """

    def __init__(
        self,
        obs_dim: int,
        action_dim: int,
        activation_fn: type[nn.Module],
        reward_discount: float,
        value_discount: float = 0.99,
        value_tau: float = 0.005,
    ):
        super().__init__()
        self.obs_dim, self.action_dim = obs_dim, action_dim
        self.reward_discount = reward_discount
        self.value_discount, self.value_tau = check_fraction("gamma", value_discount), check_fraction("tau", value_tau)
        # in place where possible: the planner runs this K x H times per step
        self.activation = nn.ReLU(inplace=True) if activation_fn is nn.ReLU else activation_fn()

    # the parameters, as the subclass holds them
    agent_axes: tuple[int, ...] = ()  # leading axes of the parameters: () for one model, (N,) for N agents
    has_value: bool = False  # whether the model learns a terminal value (a value net and its target)

    def layer_params(self, network: str) -> list[LayerParams]:
        """(weight, bias) of the layers of ``network``, "dynamics", "reward", "value" or "value_target"."""
        raise NotImplementedError

    def update_value_target(self) -> None:
        """Move the value's target network a step ``value_tau`` toward the value net (no-op without a value net)."""
        raise NotImplementedError

    def log_std_rows(self) -> th.Tensor:
        """The learned log-std, broadcastable against a batch of states."""
        raise NotImplementedError

    # what is computed
    def forward(self, obs: th.Tensor, action: th.Tensor) -> tuple[th.Tensor, th.Tensor]:
        """
        :param obs: states of shape (B, n), or (N, B, n) for batched agents
        :param action: normalised actions of shape (B, m), or (N, B, m)
        :return: mean next states and predicted rewards, shapes (B, n) and (B,) (or with the leading N)
        """
        inputs = th.cat([obs, action], dim=-1)
        delta = run_mlp(self.layer_params("dynamics"), self.activation, inputs)
        return obs + delta, run_mlp(self.layer_params("reward"), self.activation, inputs).squeeze(-1)

    def predict_reward(self, obs: th.Tensor, action: th.Tensor) -> th.Tensor:
        return run_mlp(self.layer_params("reward"), self.activation, th.cat([obs, action], dim=-1)).squeeze(-1)

    def terminal_value(self, obs: th.Tensor, target: bool = False) -> th.Tensor:
        """
        The learned value ``V(s)`` of states (shape (..., n) -> (...); the first axis the agent's for batched agents).

        :param target: use the target network (the TD target's), not the value net
        """
        if not self.has_value:
            raise ValueError("this model has no value net: make it with value_net_arch (terminal_value=True)")
        network = "value_target" if target else "value"
        return run_mlp(self.layer_params(network), self.activation, obs).squeeze(-1)

    def rollout(
        self,
        obs: th.Tensor,
        actions: th.Tensor,
        state_bound: float,
        dtype: th.dtype = th.float32,
        value_discount: float | None = None,
        terminal: Callable[[th.Tensor], th.Tensor] | None = None,
    ) -> tuple[th.Tensor, th.Tensor]:
        """
        The planner's rollout of the mean dynamics (see :func:`fused_rollout`), over any leading axes; for
        batched agents the first axis is the agent's, and agent i's paths go through agent i's model only.

        :param obs: start states, shape (*lead, n), float32, e.g. (E, K, n) for K samples in E environments
        :param actions: action sequences, shape (*lead, H, m)
        :param state_bound: predicted states are clamped to [-state_bound, state_bound]
        :param dtype: compute dtype of the multiplies (float32 or bfloat16)
        :param value_discount: None: the predicted rewards summed (as published). A discount gamma: the return
            ``sum_t gamma^t r_t + gamma^H V(s_H)`` with ``terminal`` as ``V``, or the model's learned terminal value
            (the model then needs a value net)
        :param terminal: the terminal value of states, (..., n) -> (...) (None: the model's value net)
        :return: predicted returns (*lead,) and the visited states s_0 .. s_{H-1}, shape (*lead, H, n)
        """
        agents = self.agent_axes
        if tuple(obs.shape[: len(agents)]) != agents or tuple(actions.shape[: len(agents)]) != agents:
            raise ValueError(
                f"obs and actions must have one row per agent ({agents[0]}) on their first axis, "
                f"got shapes {tuple(obs.shape)} and {tuple(actions.shape)}"
            )
        lead = obs.shape[:-1]
        obs = obs.reshape(*agents, -1, obs.shape[-1])
        final_state = None
        if value_discount is not None:
            if terminal is None and not self.has_value:
                raise ValueError("value_discount needs a model with a value net (value_net_arch; terminal_value=True)")
            final_state = th.empty_like(obs)
        returns, visited = fused_rollout(
            self.layer_params("dynamics"),
            self.layer_params("reward"),
            self.activation,
            obs,
            actions.reshape(*agents, -1, *actions.shape[-2:]),
            state_bound,
            dtype,
            1.0 if value_discount is None else value_discount,
            final_state,
        )
        if final_state is not None:
            assert value_discount is not None
            value = self.terminal_value if terminal is None else terminal
            returns = returns + value_discount ** actions.shape[-2] * value(final_state)
        return returns.view(lead), visited.view(*lead, *visited.shape[-2:])

    def loss(
        self,
        obs: th.Tensor,
        actions: th.Tensor,
        next_obs: th.Tensor,
        next_actions: th.Tensor,
        rewards: th.Tensor,
        bootstrap_masks: th.Tensor,
        dones: th.Tensor | None = None,
    ) -> ModelLosses:
        """
        Model loss on a replay batch (rows on the second-to-last axis; a leading agent axis for batched agents):
        Gaussian NLL of ``s'`` (mean over batch and dims) plus half the TD-like reward loss
        ``mean((r + reward_discount * mask * r_hat(s', a') - r_hat(s, a))^2)``, with the target detached; with a value net,
        plus half the value's TD loss ``mean((r + gamma * (1 - done) * V_target(s') - V(s))^2)``.
        Rows with a non-finite entry (e.g. a NaN observation from the env) are left out of the means,
        without a host sync; a batch with no finite row gives a NaN loss.

        :param rewards: shape (..., B, 1)
        :param bootstrap_masks: shape (..., B, 1), 1 where ``a'`` is the real next action of the same episode, else 0
        :param dones: shape (..., B, 1), 1 where the episode terminated at ``s'`` (not where it was truncated), for
            the value's TD target (None: no row terminated); unused without a value net
        """
        rows = obs.shape[:-1]
        parts = [obs, actions, next_obs, next_actions, rewards.reshape(*rows, 1), bootstrap_masks.reshape(*rows, 1)]
        if self.has_value:
            parts.append(th.zeros_like(parts[-1]) if dones is None else dones.reshape(*rows, 1))
        batch = th.cat(parts, dim=-1)  # one finiteness test and one select for the whole batch
        valid = th.isfinite(batch).all(dim=-1)
        batch = th.where(valid.unsqueeze(-1), batch, th.zeros((), dtype=batch.dtype, device=batch.device))
        obs, actions, next_obs, next_actions, rewards, bootstrap_masks, *value_parts = batch.split(
            [p.shape[-1] for p in parts], dim=-1
        )
        # NaN weights (0 / 0) when no row is finite
        row_weights = valid.to(obs.dtype) / valid.sum(dim=-1, keepdim=True)
        mean_next, predicted_reward = self(obs, actions)
        log_std = self.log_std_rows().clamp(LOG_STD_MIN, LOG_STD_MAX)
        # -log N(s'; mean, std^2) per dim, averaged over dims, then over the finite rows
        nll = (0.5 * ((next_obs - mean_next) * th.exp(-log_std)) ** 2 + log_std + HALF_LOG_2PI).mean(dim=-1)
        dynamics_loss = (nll * row_weights).sum(dim=-1)
        with th.no_grad():
            next_reward = self.predict_reward(next_obs, next_actions)
            target = rewards.squeeze(-1) + self.reward_discount * bootstrap_masks.squeeze(-1) * next_reward
        reward_loss = (((target - predicted_reward) ** 2) * row_weights).sum(dim=-1)
        if not self.has_value:
            return ModelLosses(0.5 * reward_loss + dynamics_loss, dynamics_loss, reward_loss)
        value_loss = self._value_loss(obs, next_obs, rewards, value_parts[0], row_weights)
        return ModelLosses(0.5 * reward_loss + dynamics_loss + 0.5 * value_loss, dynamics_loss, reward_loss, value_loss)

    def _value_loss(
        self, obs: th.Tensor, next_obs: th.Tensor, rewards: th.Tensor, dones: th.Tensor, row_weights: th.Tensor
    ) -> th.Tensor:
        """The value's TD loss, ``mean((r + gamma * (1 - done) * V_target(s') - V(s))^2)`` over the finite rows."""
        with th.no_grad():
            next_value = self.terminal_value(next_obs, target=True)
            target = rewards.squeeze(-1) + self.value_discount * (1.0 - dones.squeeze(-1)) * next_value
        return (((target - self.terminal_value(obs)) ** 2) * row_weights).sum(dim=-1)


class DynamicsRewardModel(DynamicsRewardBase):
    """
    The learned dynamics + reward model of one agent (see :class:`DynamicsRewardBase`).

    :param obs_dim: size of the flat observation
    :param action_dim: size of the action
    :param net_arch: hidden layer sizes of both networks
    :param activation_fn: hidden activation
    :param init_w: output layers are initialised uniformly in [-init_w, init_w]
    :param reward_discount: discount of the TD-like reward target (the paper's 0.95 here; the policy passes 0 with a
        terminal value, see :func:`reward_head_discount`)
    :param value_net_arch: hidden layer sizes of a terminal value net ``V(s)`` (None: no value net, as published)
    :param value_discount: discount ``gamma`` of the value's TD target
    :param value_tau: step of the value's target network toward the value net after each update
    """

    def __init__(
        self,
        obs_dim: int,
        action_dim: int,
        net_arch: list[int] | None = None,
        activation_fn: type[nn.Module] = nn.ReLU,
        init_w: float = 3e-3,
        reward_discount: float = PUBLISHED_REWARD_DISCOUNT,
        value_net_arch: list[int] | None = None,
        value_discount: float = 0.99,
        value_tau: float = 0.005,
    ):
        super().__init__(obs_dim, action_dim, activation_fn, reward_discount, value_discount, value_tau)
        net_arch = check_net_arch(net_arch)
        self.dynamics = mlp_layers(obs_dim + action_dim, obs_dim, net_arch, init_w)
        self.reward = mlp_layers(obs_dim + action_dim, 1, net_arch, init_w)
        self.log_std = nn.Parameter(th.zeros(obs_dim))
        if value_net_arch is not None:  # made after the others: without it, the initial weights are as published
            self.has_value = True
            self.value = mlp_layers(obs_dim, 1, check_net_arch(value_net_arch, "value_net_arch"), init_w)
            self.value_target = frozen_copy(self.value)

    def layer_params(self, network: str) -> list[LayerParams]:
        return [(layer.weight, layer.bias) for layer in getattr(self, network)]

    def log_std_rows(self) -> th.Tensor:
        return self.log_std

    @th.no_grad()
    def update_value_target(self) -> None:
        if self.has_value:
            # each layer's weight then bias, in both
            th._foreach_lerp_(list(self.value_target.buffers()), list(self.value.parameters()), self.value_tau)


class BatchedDynamicsRewardModel(DynamicsRewardBase):
    """
    N independent :class:`DynamicsRewardModel`\\ s in one set of tensors, for N agents trained side by
    side: the planner rolls all agents out in one batched rollout and one forward/backward trains them
    all. Every parameter lives in one (N, P) tensor, row i holding agent i's weights, so that nothing
    crosses between agents: agent i's outputs and gradients depend only on row i and agent i's inputs.

    A single agent is a batch of one (``agent_axis=False``): its inputs and outputs have no agent axis (every leading
    axis holds rows of the one agent, as for :class:`DynamicsRewardModel`), and it is computed, updated (with
    :class:`~sb3_maxdiff.common.optimizers.AgentAdam`) and captured as a batch of N agents is.

    :param n_agents: number of agents N
    :param model_args: the arguments of each agent's :class:`DynamicsRewardModel` (obs_dim, action_dim, net_arch,
        activation_fn, init_w, reward_discount)
    :param agent_axis: whether inputs and outputs lead with the agent axis (N); False: one agent, no agent axis
    """

    flat_buffers: th.Tensor  # with a terminal value: the target network's tensors, (N, Q)

    def __init__(self, n_agents: int, *model_args: Any, agent_axis: bool = True, **model_kwargs: Any):
        if not (is_integer(n_agents) and n_agents >= 1):
            raise ValueError(f"n_agents must be an integer >= 1, got {n_agents!r}")
        if not agent_axis and n_agents != 1:
            raise ValueError(f"agent_axis=False is for one agent (a batch of one), got n_agents={n_agents}")
        # each agent initialised as a model of its own, one after the other from the torch random stream
        singles = [DynamicsRewardModel(*model_args, **model_kwargs) for _ in range(n_agents)]
        first = singles[0]
        super().__init__(first.obs_dim, first.action_dim, type(first.activation), first.reward_discount)
        self.n_agents, self.agent_axis = n_agents, agent_axis
        self.agent_axes = (n_agents,)
        self.value_discount, self.value_tau = first.value_discount, first.value_tau
        self.has_value = first.has_value
        # the parameters in one (N, P) parameter, the buffers (a value's target network) in one (N, Q) buffer
        self.layout = self._layout(dict(first.named_parameters()))
        self.flat = nn.Parameter(th.stack([th.cat([t.flatten() for t in single.parameters()]) for single in singles]))
        self.buffer_layout = self._layout(dict(first.named_buffers()))
        if self.buffer_layout:
            self.register_buffer("flat_buffers", th.stack([th.cat([t.flatten() for t in s.buffers()]) for s in singles]))
        self._n_layers = {
            name: len(getattr(first, name)) for name in ("dynamics", "reward", "value", "value_target") if hasattr(first, name)
        }
        self._split: dict[str, th.Tensor] | None = None

    # ----- one agent without an agent axis: its rows given the agent axis of a batch of one, and taken off again
    def _one_agent(self, tensor: th.Tensor, trailing: int = 1) -> th.Tensor:
        """A tensor of one agent's rows (..., *trailing dims) with the agent axis of a batch of one, (1, R, ...)."""
        return tensor.reshape(1, -1, *tensor.shape[tensor.dim() - trailing :])

    def forward(self, obs: th.Tensor, action: th.Tensor) -> tuple[th.Tensor, th.Tensor]:
        if self.agent_axis:
            return super().forward(obs, action)
        next_obs, reward = super().forward(self._one_agent(obs), self._one_agent(action))
        return next_obs.view(obs.shape), reward.view(obs.shape[:-1])

    def predict_reward(self, obs: th.Tensor, action: th.Tensor) -> th.Tensor:
        if self.agent_axis:
            return super().predict_reward(obs, action)
        return super().predict_reward(self._one_agent(obs), self._one_agent(action)).view(obs.shape[:-1])

    def terminal_value(self, obs: th.Tensor, target: bool = False) -> th.Tensor:
        if self.agent_axis:
            return super().terminal_value(obs, target)
        return super().terminal_value(self._one_agent(obs), target).view(obs.shape[:-1])

    def rollout(self, obs: th.Tensor, actions: th.Tensor, *args: Any, **kwargs: Any) -> tuple[th.Tensor, th.Tensor]:
        if self.agent_axis:
            return super().rollout(obs, actions, *args, **kwargs)
        returns, visited = super().rollout(self._one_agent(obs), self._one_agent(actions, trailing=2), *args, **kwargs)
        return returns.view(obs.shape[:-1]), visited.view(*obs.shape[:-1], *visited.shape[-2:])

    @staticmethod
    def _layout(tensors: dict[str, th.Tensor]) -> dict[str, tuple[int, th.Size]]:
        """Where each tensor of a single model lies in a flat row: name -> (offset, shape)."""
        layout, offset = {}, 0
        for name, tensor in tensors.items():
            layout[name] = (offset, tensor.shape)
            offset += tensor.numel()
        return layout

    def view(self, name: str, flat: th.Tensor | None = None) -> th.Tensor:
        """Every agent's copy of the single-model tensor ``name`` (e.g. "dynamics.0.weight"), shape (N, *shape)."""
        if name in self.buffer_layout:
            offset, shape = self.buffer_layout[name]
            flat = self.flat_buffers if flat is None else flat
            return flat[:, offset : offset + shape.numel()].view(flat.shape[0], *shape)
        if flat is None and self._split is not None:
            return self._split[name]
        offset, shape = self.layout[name]
        flat = self.flat if flat is None else flat
        return flat[:, offset : offset + shape.numel()].view(flat.shape[0], *shape)

    @th.no_grad()
    def update_value_target(self) -> None:
        if self.has_value:
            # the value net's and the target's tensors lie in the same order in their flat rows
            value_start, _ = self.layout["value.0.weight"]
            width = self.flat_buffers.shape[1]
            self.flat_buffers.lerp_(self.flat[:, value_start : value_start + width], self.value_tau)

    def loss(self, *batch: Any) -> ModelLosses:
        """
        The loss of every agent, shape (N,) each (see :meth:`DynamicsRewardBase.loss`). The tensors are cut
        out of the flat parameter by one ``split`` for the whole loss, so that the backward pass gathers their
        gradients in one concatenation instead of one zero-filled (N, P) tensor per view.
        """
        if not self.agent_axis:  # one agent's rows (..., B, d): the losses of a batch of one, as scalars
            losses = self._agent_losses(*(None if part is None else self._one_agent(part) for part in batch))
            total, dynamics, reward, value = losses
            return ModelLosses(total.view(()), dynamics.view(()), reward.view(()), None if value is None else value.view(()))
        return self._agent_losses(*batch)

    def _agent_losses(self, *batch: Any) -> ModelLosses:
        sizes = [shape.numel() for _, shape in self.layout.values()]
        parts = self.flat.split(sizes, dim=1)
        self._split = {name: part.view(self.n_agents, *shape) for (name, (_, shape)), part in zip(self.layout.items(), parts)}
        try:
            return super().loss(*batch)
        finally:
            self._split = None

    def layer_params(self, network: str) -> list[LayerParams]:
        layers = range(self._n_layers[network])
        return [(self.view(f"{network}.{i}.weight"), self.view(f"{network}.{i}.bias")) for i in layers]

    @property
    def log_std(self) -> th.Tensor:
        """Learned log-std of every agent, shape (N, n); (n,) for one agent without an agent axis."""
        return self.view("log_std") if self.agent_axis else self.view("log_std")[0]

    def log_std_rows(self) -> th.Tensor:
        return self.view("log_std").unsqueeze(-2)

    def _load_from_state_dict(self, state_dict: dict[str, Any], prefix: str, *args: Any, **kwargs: Any) -> None:
        # a file of one DynamicsRewardModel (saved before a single agent was a batch of one): its tensors in one row
        if prefix + "flat" not in state_dict and self.n_agents == 1 and all(prefix + n in state_dict for n in self.layout):
            state_dict[prefix + "flat"] = th.cat([state_dict.pop(prefix + name).flatten() for name in self.layout])[None]
            if self.buffer_layout:
                buffers = [state_dict.pop(prefix + name).flatten() for name in self.buffer_layout]
                state_dict[prefix + "flat_buffers"] = th.cat(buffers)[None]
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)

    def single_model_adam_state(self, saved: dict[str, Any], optimizer: th.optim.Optimizer) -> dict[str, Any]:
        """
        The state dict of ``optimizer`` (this one agent's AgentAdam) from that of torch's Adam over a
        :class:`DynamicsRewardModel`'s parameters (``saved``, from a file saved before a single agent was a batch of
        one): the moments in one row, the step count per agent, the learning rate as saved.
        """
        groups = optimizer.state_dict()["param_groups"]
        groups[0]["lr"] = saved["param_groups"][0]["lr"]
        state = saved["state"]
        if not state:
            return {"state": {}, "param_groups": groups}
        flat = {
            key: th.cat([state[index][key].flatten() for index in range(len(self.layout))])[None]
            for key in ("exp_avg", "exp_avg_sq")
        }
        step = th.as_tensor(state[0]["step"], dtype=th.float32).reshape(1)
        return {"state": {0: {"step": step, **flat}}, "param_groups": groups}

    def agent_state_dict(self, index: int) -> dict[str, th.Tensor]:
        """The state dict of agent ``index`` as a :class:`DynamicsRewardModel` (copies)."""
        return {name: self.view(name)[index].detach().clone() for name in (*self.layout, *self.buffer_layout)}

    def load_agent_state_dict(self, index: int, state_dict: dict[str, Any]) -> None:
        """Set agent ``index``'s weights from a :class:`DynamicsRewardModel` state dict."""
        with th.no_grad():
            for name in (*self.layout, *self.buffer_layout):
                self.view(name)[index].copy_(state_dict[name])
