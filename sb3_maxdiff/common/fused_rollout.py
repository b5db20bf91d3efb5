"""
The planner's rollout kernel: the learned model's mean dynamics and reward rolled out over H steps with the first
layers split into state and action parts, the action parts of every step in one multiply, preallocated layer
outputs and padded columns for the CPU's matrix kernels; and the affine map of a layer, alone or batched over agents.
"""

import torch as th
from torch import nn
from torch.nn import functional as F

# (weight, bias) of one linear layer: (out, in) and (out,) alone; (N, out, in) and (N, out) batched over agents
LayerParams = tuple[th.Tensor, th.Tensor]


def affine(inputs: th.Tensor, weight_t: th.Tensor, bias: th.Tensor, out: th.Tensor | None = None) -> th.Tensor:
    """
    ``inputs @ weight_t + bias`` (one ``addmm``) with W^T (in, out) and bias (out,); batched over agents
    (one ``baddbmm``): inputs (N, B, in), W^T (N, in, out) and bias (N, 1, out). Into ``out`` when given.
    """
    if weight_t.dim() == 2 and inputs.dim() != 2:  # rows on several leading axes
        return affine(inputs.reshape(-1, inputs.shape[-1]), weight_t, bias).view(*inputs.shape[:-1], -1)
    if weight_t.dim() == 2:
        return th.addmm(bias, inputs, weight_t) if out is None else th.addmm(bias, inputs, weight_t, out=out)
    return th.baddbmm(bias, inputs, weight_t) if out is None else th.baddbmm(bias, inputs, weight_t, out=out)


def transposed(weight: th.Tensor, bias: th.Tensor) -> LayerParams:
    """(W^T, b) of a layer's (W, b) as views, a batched bias with a row axis (N, 1, out), for :func:`affine`."""
    return weight.transpose(-1, -2), bias.unsqueeze(-2) if bias.dim() == 2 else bias


def _compute_params(params: list[LayerParams], dtype: th.dtype) -> list[LayerParams]:
    """(W^T, b) of each layer in the compute dtype, W^T contiguous; batched biases get a row axis (N, 1, out)."""
    converted = []
    for weight, bias in params:
        weight_t, bias = transposed(weight.detach().to(dtype), bias.detach().to(dtype))
        converted.append((weight_t.contiguous(), bias))
    return converted


def _pad_columns(weight_t: th.Tensor, bias: th.Tensor, multiple: int = 16) -> LayerParams:
    """Zero output columns up to a multiple of ``multiple``: CPU GEMMs with N = 10 run ~3x slower than with N = 16."""
    extra = -weight_t.shape[-1] % multiple
    return F.pad(weight_t, (0, extra)), F.pad(bias, (0, extra))


def _mlp_tail(
    params: list[LayerParams], hidden: th.Tensor, activation: nn.Module, outputs: list[th.Tensor] | None = None
) -> th.Tensor:
    """Layers after the first: affine + activation, no activation after the output layer (into ``outputs``, if given)."""
    outputs = outputs or [None] * len(params)  # type: ignore[list-item]
    for (weight_t, bias), out in zip(params[:-1], outputs):
        hidden = activation(affine(hidden, weight_t, bias, out))
    return affine(hidden, *params[-1], outputs[-1])


def _layer_outputs(params: list[LayerParams], rows: tuple[int, ...], like: th.Tensor) -> list[th.Tensor] | None:
    """
    Preallocated outputs of the layers, reused at every step by the batched rollout: a fresh (N, B, width)
    tensor per layer and step costs page faults on the CPU. None for one model (its outputs are small).
    """
    if len(rows) < 2:
        return None
    return [th.empty((*rows, weight_t.shape[-1]), dtype=like.dtype, device=like.device) for weight_t, _ in params]


def fused_rollout(
    dynamics: list[LayerParams],
    reward: list[LayerParams],
    activation: nn.Module,
    obs: th.Tensor,
    actions: th.Tensor,
    state_bound: float,
    dtype: th.dtype = th.float32,
    discount: float = 1.0,
    final_state: th.Tensor | None = None,
) -> tuple[th.Tensor, th.Tensor]:
    """
    Roll the mean dynamics ``s + f(s, a)`` out from ``obs`` under each action sequence, summing ``r(s, a)``
    (``discount ** t * r(s_t, a_t)`` for a discount below 1).

    The first layers of both networks are split into their state and action parts. The action parts of
    all H steps come from one matrix multiply up front, and the state parts of both networks from one
    multiply per step, so the Python loop over H runs five multiplies per step (for two hidden layers),
    no concatenation, and no dynamics at the last step unless ``final_state`` asks for ``s_H``. States are accumulated
    in float32; with ``dtype=th.bfloat16`` the multiplies run on bfloat16 copies of the weights.

    :param dynamics: (weight, bias) of the dynamics layers, alone or batched over N agents
    :param reward: (weight, bias) of the reward layers, batched like ``dynamics``
    :param activation: hidden activation
    :param obs: start states (B, n), or (N, B, n) with batched layers
    :param actions: action sequences (B, H, m), or (N, B, H, m)
    :param state_bound: predicted states are clamped to [-state_bound, state_bound]
    :param dtype: compute dtype of the multiplies (float32 or bfloat16)
    :param discount: weight ``discount ** t`` of the reward of step t (1: a plain sum, as published)
    :param final_state: where to write the state ``s_H`` after the last action, (B, n) or (N, B, n) (None: not needed,
        and not computed)
    :return: summed rewards (B,) or (N, B), and the visited states s_0 .. s_{H-1}, (B, H, n) or (N, B, H, n)
    """
    *lead, n_batch, horizon, action_dim = actions.shape
    obs_dim = obs.shape[-1]
    dynamics, reward = _compute_params(dynamics, dtype), _compute_params(reward, dtype)
    dynamics[-1] = _pad_columns(*dynamics[-1])
    # first layers of both networks side by side: [s, a] @ [W_dyn | W_rew] + [b_dyn | b_rew]
    first_weight_t = th.cat([dynamics[0][0], reward[0][0]], dim=-1)
    first_bias = th.cat([dynamics[0][1], reward[0][1]], dim=-1)
    dynamics_width = dynamics[0][0].shape[-1]
    if not lead:
        # action part of the first layers, every step at once: (H, B, width); each step then adds its state part
        # in place (no new output), and the visited states are written step by step into ``visited`` (H, B, n)
        actions_by_step = actions.transpose(0, 1).reshape(horizon * n_batch, action_dim).to(dtype)
        action_part = th.addmm(first_bias, actions_by_step, first_weight_t[obs_dim:]).view(horizon, n_batch, -1)
        visited = th.empty((horizon, n_batch, obs_dim), dtype=obs.dtype, device=obs.device)

        def first_layer(step: int) -> th.Tensor:
            return action_part[step].addmm_(visited[step].to(dtype), first_weight_t[:obs_dim])

    else:
        # batched agents: step-major inputs [s_t, a_t] (H, N, B, n + m), one contiguous (N, B, n + m) block per
        # step for one batched multiply (a split into state and action parts would need strided batches, which
        # the CPU kernels copy); the states are written into the first n columns step by step
        inputs = th.empty((horizon, *lead, n_batch, obs_dim + action_dim), dtype=obs.dtype, device=obs.device)
        inputs[..., obs_dim:] = actions.permute(2, 0, 1, 3)
        visited = inputs[..., :obs_dim]
        # one output for every step: a fresh (N, B, width) tensor per step costs page faults on the CPU
        first_output = th.empty((*lead, n_batch, first_weight_t.shape[-1]), dtype=dtype, device=obs.device)

        def first_layer(step: int) -> th.Tensor:
            return th.baddbmm(first_bias, inputs[step].to(dtype), first_weight_t, out=first_output)

    # visited[t] is s_t; each step writes s_{t+1}, the last one s_H into final_state (if given)
    visited[0] = obs
    reward_outputs = _layer_outputs(reward[1:], (*lead, n_batch), obs.to(dtype))
    dynamics_outputs = _layer_outputs(dynamics[1:], (*lead, n_batch), obs.to(dtype))
    total_reward = th.zeros((*lead, n_batch, 1), dtype=obs.dtype, device=obs.device)
    for step in range(horizon):
        hidden = activation(first_layer(step))
        step_reward = _mlp_tail(reward[1:], hidden[..., dynamics_width:], activation, reward_outputs)
        if discount == 1.0:
            total_reward += step_reward
        else:
            total_reward.add_(step_reward, alpha=discount**step)
        next_state = visited[step + 1] if step + 1 < horizon else final_state
        if next_state is not None:
            delta = _mlp_tail(dynamics[1:], hidden[..., :dynamics_width], activation, dynamics_outputs)[..., :obs_dim]
            th.add(visited[step], delta, out=next_state).clamp_(-state_bound, state_bound)
    return total_reward.squeeze(-1), visited.movedim(0, -2)
