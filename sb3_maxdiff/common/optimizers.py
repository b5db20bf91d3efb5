"""Adam for parameters batched over independent agents, with a per-agent, device-side skip; the optimizer step."""

from collections.abc import Callable, Iterable

import torch as th


class AgentAdam(th.optim.Optimizer):
    """
    Adam (with L2 weight decay added to the gradient, as :class:`torch.optim.Adam` does) over parameters
    whose first axis indexes independent agents. Each agent has its own step count, so
    ``step(active=mask)`` updates only the agents where ``mask`` is True and leaves the others' parameters
    and moments untouched, without reading ``mask`` on the host: the skip of a non-finite loss stays on
    the device. With every agent active it is the same arithmetic as ``torch.optim.Adam``.

    :param params: parameters of shape (N, ...), N the number of agents
    :param lr: learning rate
    :param betas: decay rates of the first and second moments
    :param eps: term added to the denominator
    :param weight_decay: L2 penalty added to the gradient
    """

    def __init__(
        self,
        params: Iterable[th.Tensor],
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
    ):
        if not lr >= 0.0:
            raise ValueError(f"lr must be >= 0, got {lr}")
        if not (0.0 <= betas[0] < 1.0 and 0.0 <= betas[1] < 1.0):
            raise ValueError(f"betas must be two numbers in [0, 1), got {betas}")
        if not eps >= 0.0:
            raise ValueError(f"eps must be >= 0, got {eps}")
        if not weight_decay >= 0.0:
            raise ValueError(f"weight_decay must be >= 0, got {weight_decay}")
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay))

    @th.no_grad()
    def step(self, closure: Callable[[], float] | None = None, active: th.Tensor | None = None) -> float | None:  # type: ignore[override]
        """
        One Adam step for the active agents.

        :param closure: re-evaluates the loss (as in torch optimizers)
        :param active: bool tensor of shape (N,) on the parameters' device; None: every agent
        """
        loss = None
        if closure is not None:
            with th.enable_grad():
                loss = closure()
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            for param in group["params"]:
                if param.grad is None:
                    continue
                state = self.state[param]
                if not state:
                    state["step"] = th.zeros(param.shape[0], dtype=param.dtype, device=param.device)
                    state["exp_avg"] = th.zeros_like(param)
                    state["exp_avg_sq"] = th.zeros_like(param)
                self._update(param, state, group["lr"], beta1, beta2, group["eps"], group["weight_decay"], active)
        return loss

    @staticmethod
    def _update(
        param: th.Tensor,
        state: dict,
        lr: float,
        beta1: float,
        beta2: float,
        eps: float,
        weight_decay: float,
        active: th.Tensor | None,
    ) -> None:
        grad = param.grad
        assert grad is not None  # step() skips parameters without a gradient
        if weight_decay != 0.0:
            grad = grad.add(param, alpha=weight_decay)
        per_agent = (param.shape[0],) + (1,) * (param.dim() - 1)
        if active is None:
            state["step"] += 1.0
        else:
            state["step"] += active.to(param.dtype)
        step = state["step"].view(per_agent)
        exp_avg = state["exp_avg"].lerp(grad, 1.0 - beta1)
        exp_avg_sq = state["exp_avg_sq"].mul(beta2).addcmul_(grad, grad, value=1.0 - beta2)
        step_size = lr / (1.0 - beta1**step)
        denom = (exp_avg_sq.sqrt() / (1.0 - beta2**step).sqrt()).add_(eps)
        new_param = param.addcdiv(exp_avg * step_size, denom, value=-1.0)
        if active is None:
            param.copy_(new_param)
            state["exp_avg"].copy_(exp_avg)
            state["exp_avg_sq"].copy_(exp_avg_sq)
            return
        # the inactive agents keep everything; where() also drops the NaN of an agent that never stepped
        mask = active.view(per_agent)
        param.copy_(th.where(mask, new_param, param))
        state["exp_avg"].copy_(th.where(mask, exp_avg, state["exp_avg"]))
        state["exp_avg_sq"].copy_(th.where(mask, exp_avg_sq, state["exp_avg_sq"]))


def apply_update(optimizer: th.optim.Optimizer, loss: th.Tensor, finite: th.Tensor) -> bool:
    """
    Backward pass and optimizer step, skipped where the loss is not finite (the parameters stay as they are).

    On the device, without reading the loss on the host, for :class:`AgentAdam` (a skip per agent; the model's
    optimizer, one agent's too); another optimizer reads the finiteness on the host.

    :param optimizer: the model's optimizer
    :param loss: the loss (one per agent for N agents)
    :param finite: whether the loss is finite (per agent for N agents)
    :return: False when the step was skipped on the host
    """
    optimizer.zero_grad()
    if isinstance(optimizer, AgentAdam):
        loss.sum().backward()
        optimizer.step(active=finite)
        return True
    if not bool(finite):
        return False
    loss.backward()
    optimizer.step()
    return True
