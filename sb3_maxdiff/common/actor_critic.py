"""
An actor and twin critics learned beside the model (SAC's, from Stable-Baselines3): the planner's terminal value
``Q(s_H, pi(s_H))`` and a prior that proposes some of its samples.
"""

from collections.abc import Sequence
from typing import Any, NamedTuple, cast

import numpy as np
import torch as th
from gymnasium import spaces
from stable_baselines3.common.torch_layers import FlattenExtractor
from stable_baselines3.common.type_aliases import Schedule
from stable_baselines3.common.utils import polyak_update
from stable_baselines3.sac.policies import Actor, ContinuousCritic
from torch import nn

from sb3_maxdiff.common.models import check_net_arch
from sb3_maxdiff.common.utils import check_fraction

# SAC's hidden layers for its actor and critics
CRITIC_NET_ARCH = [256, 256]
# what an algorithm's ``terminal_value`` takes: False (none), True or "v" (a value learned with the model), "q" (this)
TERMINAL_VALUE_CHOICES = (False, True, "v", "q")


def check_terminal_value(terminal_value: Any, actor_samples: Any, actor_bc_coef: Any) -> tuple[bool | str, float, float]:
    """``terminal_value``, ``actor_samples`` and ``actor_bc_coef`` of an algorithm, checked (errors name the parameter)."""
    if isinstance(terminal_value, (bool, np.bool_)):
        terminal_value = bool(terminal_value)
    elif terminal_value not in ("v", "q"):
        raise ValueError(f"terminal_value must be one of {list(TERMINAL_VALUE_CHOICES)}, got {terminal_value!r}")
    if not (isinstance(actor_samples, (int, float)) and 0.0 <= actor_samples < 1.0):
        raise ValueError(f"actor_samples must be a share in [0, 1), got {actor_samples!r}")
    if not (isinstance(actor_bc_coef, (int, float)) and actor_bc_coef >= 0.0):
        raise ValueError(f"actor_bc_coef must be a number >= 0, got {actor_bc_coef!r}")
    return terminal_value, float(actor_samples), float(actor_bc_coef)


class ActorCriticLosses(NamedTuple):
    """The losses of one update, and the entropy coefficient it used (scalars on the device)."""

    critic: th.Tensor
    actor: th.Tensor
    ent_coef: th.Tensor
    ent_coef_loss: th.Tensor


def _finite_rows(*parts: th.Tensor) -> tuple[list[th.Tensor], th.Tensor]:
    """The parts (B, d_i) with every row that has a non-finite entry zeroed, and each row's weight (B, 1) in a mean
    over the finite rows, without a host sync (all zero where no row is finite: the update's gradients are then zero,
    and its parameters stay finite)."""
    batch = th.cat(parts, dim=-1)
    valid = th.isfinite(batch).all(dim=-1, keepdim=True)
    batch = th.where(valid, batch, th.zeros((), dtype=batch.dtype, device=batch.device))
    weights = valid.to(batch.dtype) / valid.sum().clamp(min=1)
    return list(batch.split([part.shape[-1] for part in parts], dim=-1)), weights


class ActorCritic(nn.Module):
    """
    A squashed-Gaussian actor ``pi(a|s)`` and twin critics ``Q_1, Q_2`` with target critics, trained off-policy with
    SAC's losses on replay minibatches (critic target ``r + gamma (1 - done) (min_j Q'_j(s', a') - ent_coef log pi(a'|s'))``
    at ``a' ~ pi(s')``; actor loss ``ent_coef log pi(a|s) - min_j Q_j(s, a)``; automatic entropy coefficient with
    target entropy ``-dim(A)``), SB3's :class:`~stable_baselines3.sac.policies.Actor` and
    :class:`~stable_baselines3.common.policies.ContinuousCritic` as SB3's SAC builds them. Actions are normalised to
    [-1, 1], as the planner's are.

    For the planner it gives the terminal value ``(Q_1 + Q_2)(s, mu(s)) / 2`` at the actor's mean action (the mean:
    the critic's target already takes the minimum against overestimation) and proposes actions (:meth:`act`).

    :param observation_space: a Box observation space
    :param action_space: a Box action space
    :param lr_schedule: learning rate schedule of the three optimizers
    :param net_arch: hidden layers of the actor and of each critic
    :param activation_fn: hidden activation
    :param gamma: discount of the critic's target
    :param tau: Polyak step of the target critics after each update
    :param bc_coef: weight of ``mean((mu(s) - a)^2)``, pulling the actor's mean action toward the executed (planned)
        action ``a`` of the replay buffer, against the mismatch between the planner and the actor (0: SAC's actor)
    :param optimizer_class: optimizer of the actor, the critics and the entropy coefficient
    :param optimizer_kwargs: its keyword arguments
    """

    def __init__(
        self,
        observation_space: spaces.Box,
        action_space: spaces.Box,
        lr_schedule: Schedule,
        net_arch: list[int] | None = None,
        activation_fn: type[nn.Module] = nn.ReLU,
        gamma: float = 0.99,
        tau: float = 0.005,
        bc_coef: float = 0.0,
        optimizer_class: type[th.optim.Optimizer] = th.optim.Adam,
        optimizer_kwargs: dict[str, Any] | None = None,
    ):
        super().__init__()
        self.net_arch = check_net_arch(CRITIC_NET_ARCH if net_arch is None else net_arch, "critic_net_arch")
        self.gamma, self.tau = check_fraction("gamma", gamma), check_fraction("tau", tau)
        if not (isinstance(bc_coef, (int, float)) and bc_coef >= 0.0):
            raise ValueError(f"actor_bc_coef must be a number >= 0, got {bc_coef!r}")
        self.bc_coef = float(bc_coef)
        features_dim = int(np.prod(observation_space.shape))  # type: ignore[arg-type]
        parts: dict[str, Any] = dict(net_arch=self.net_arch, features_dim=features_dim, activation_fn=activation_fn)
        self.actor = Actor(observation_space, action_space, features_extractor=FlattenExtractor(observation_space), **parts)
        critic_parts = dict(parts, n_critics=2, share_features_extractor=False)
        self.critic = ContinuousCritic(
            observation_space, action_space, features_extractor=FlattenExtractor(observation_space), **critic_parts
        )  # type: ignore[arg-type]
        self.critic_target = ContinuousCritic(
            observation_space, action_space, features_extractor=FlattenExtractor(observation_space), **critic_parts
        )  # type: ignore[arg-type]
        self.critic_target.load_state_dict(self.critic.state_dict())
        self.critic_target.set_training_mode(False)
        self.critic_target.requires_grad_(False)
        self.log_ent_coef = nn.Parameter(th.zeros(1))  # SAC's "auto" coefficient, from 1.0
        self.target_entropy = -float(np.prod(action_space.shape))  # type: ignore[arg-type]
        kwargs, lr = optimizer_kwargs or {}, lr_schedule(1)
        self.actor_optimizer = optimizer_class(self.actor.parameters(), lr=lr, **kwargs)  # type: ignore[call-arg]
        self.critic_optimizer = optimizer_class(self.critic.parameters(), lr=lr, **kwargs)  # type: ignore[call-arg]
        self.ent_coef_optimizer = optimizer_class([self.log_ent_coef], lr=lr, **kwargs)  # type: ignore[call-arg]

    @property
    def optimizers(self) -> list[th.optim.Optimizer]:
        return [self.actor_optimizer, self.critic_optimizer, self.ent_coef_optimizer]

    # ----- for the planner ----------------------------------------------------------------------
    def value(self, obs: th.Tensor) -> th.Tensor:
        """The terminal value ``(Q_1 + Q_2)(s, mu(s)) / 2`` of states, shape (..., n) -> (...)."""
        rows = obs.reshape(-1, obs.shape[-1]).float()
        # the mean action as SB3's deterministic actor gives it, without a distribution object (which checks its
        # arguments on the host, and so cannot be captured in a CUDA graph)
        mean_action = th.tanh(self.actor.get_action_dist_params(rows)[0])
        q_values = th.cat(self.critic(rows, mean_action), dim=-1)
        return q_values.mean(dim=-1).view(obs.shape[:-1]).to(obs.dtype)

    def act(self, obs: th.Tensor, generator: th.Generator | None = None) -> tuple[th.Tensor, th.Tensor]:
        """
        The actor's mean action ``tanh(mean)`` and an action drawn from it, ``tanh(mean + std * eps)`` with ``eps``
        from ``generator`` (None: torch's global stream), for states (..., n); both (..., m), in [-1, 1].
        """
        mean, log_std, _ = self.actor.get_action_dist_params(obs.reshape(-1, obs.shape[-1]))
        eps = th.randn(mean.shape, dtype=mean.dtype, device=mean.device, generator=generator)
        shape = (*obs.shape[:-1], mean.shape[-1])
        return th.tanh(mean).view(shape), th.tanh(mean + log_std.exp() * eps).view(shape)

    def actions(self, obs: th.Tensor, deterministic: bool = False) -> th.Tensor:
        """The actor's actions for states (B, n) as SB3's actor gives them (its mean where ``deterministic``), (B, m)."""
        return self.actor(obs, deterministic=deterministic)

    @property
    def optimizer_names(self) -> list[str]:
        """The attribute paths of the optimizers, from this module (what ``save`` stores beside the weights)."""
        return ["actor_optimizer", "critic_optimizer", "ent_coef_optimizer"]

    # ----- learning ---------------------------------------------------------------------------------
    def loss_step(
        self, obs: th.Tensor, actions: th.Tensor, next_obs: th.Tensor, rewards: th.Tensor, dones: th.Tensor
    ) -> ActorCriticLosses:
        """
        One SAC update on a minibatch (B rows; rewards and dones (B, 1)): the entropy coefficient, the critics, the
        actor (each with its own optimizer, in SB3's order), then the target critics' Polyak step. Rows with a
        non-finite entry are left out of the means. The stored actions (scaled to [-1, 1]) are clamped to the bounds,
        where the actor's lie: with ``action_semantics="authors"`` the buffer holds the raw planner action, which an
        environment that clips (every MuJoCo body here, the bounded point mass) executed as the clamped one.
        """
        (obs, actions, next_obs, rewards, dones), weights = _finite_rows(obs, actions, next_obs, rewards, dones)
        actions = actions.clamp(-1.0, 1.0)
        actions_pi, log_prob = self.actor.action_log_prob(obs)
        log_prob = log_prob.reshape(-1, 1)
        ent_coef = self.log_ent_coef.detach().exp()  # this update's, taken before its own step (as SB3's SAC)
        ent_coef_loss = -(self.log_ent_coef * (log_prob + self.target_entropy).detach() * weights).sum()
        self.ent_coef_optimizer.zero_grad()
        ent_coef_loss.backward()
        self.ent_coef_optimizer.step()
        target_q = self.td_target(next_obs, rewards, dones, ent_coef)
        current_q = self.critic(obs, actions)
        critic_loss = 0.5 * sum(((q - target_q) ** 2 * weights).sum() for q in current_q)
        self.critic_optimizer.zero_grad()
        critic_loss.backward()  # type: ignore[union-attr]
        self.critic_optimizer.step()
        min_q_pi = th.cat(self.critic(obs, actions_pi), dim=-1).min(dim=-1, keepdim=True).values
        actor_loss = ((ent_coef * log_prob - min_q_pi) * weights).sum()
        if self.bc_coef > 0.0:
            mean_action = th.tanh(self.actor.get_action_dist_params(obs)[0])
            bc = ((mean_action - actions) ** 2).mean(dim=-1, keepdim=True)
            actor_loss = actor_loss + self.bc_coef * (bc * weights).sum()
        self.actor_optimizer.zero_grad()
        actor_loss.backward()
        self.actor_optimizer.step()
        polyak_update(self.critic.parameters(), self.critic_target.parameters(), self.tau)
        return ActorCriticLosses(critic_loss.detach(), actor_loss.detach(), ent_coef[0], ent_coef_loss.detach())  # type: ignore[union-attr]

    @th.no_grad()
    def td_target(self, next_obs: th.Tensor, rewards: th.Tensor, dones: th.Tensor, ent_coef: th.Tensor) -> th.Tensor:
        """
        The critics' target ``r + gamma (1 - done) (min_j Q'_j(s', a') - ent_coef log pi(a'|s'))`` with ``a' ~ pi(s')``
        drawn now (not the buffer's next action) and the target critics ``Q'``; rows (B, n), (B, 1), (B, 1) -> (B, 1).
        """
        next_actions, next_log_prob = self.actor.action_log_prob(next_obs)
        next_q = th.cat(self.critic_target(next_obs, next_actions), dim=-1).min(dim=-1, keepdim=True).values
        return rewards + (1.0 - dones) * self.gamma * (next_q - ent_coef * next_log_prob.reshape(-1, 1))

    def update(self, batch: Sequence[th.Tensor]) -> ActorCriticLosses:
        """
        :meth:`loss_step` on a minibatch of the model's replay draw (the fields of
        :class:`~sb3_maxdiff.common.buffers.NextActionReplayBufferSamples`: the model's rows, the same ones).
        """
        obs, actions, next_obs, _, rewards, _, dones = batch
        parts = (obs, actions, next_obs, rewards.reshape(-1, 1), dones.reshape(-1, 1))
        return self.loss_step(*(part.float().flatten(start_dim=1) for part in parts))


class AgentActorCritics(nn.Module):
    """
    One :class:`ActorCritic` per independent agent, with the same calls batched over a leading agent axis: agent i's
    terminal values, actions and updates come from agent i's actor and critics, trained on agent i's replay rows only
    (one call for all agents, which loops over them: SB3's actor and critic classes hold one agent each).

    :param n_agents: number of agents N
    :param actor_critic_args: the arguments of each agent's :class:`ActorCritic`, which are made one after the other
        from the torch random stream
    """

    def __init__(self, n_agents: int, *actor_critic_args: Any, **actor_critic_kwargs: Any):
        super().__init__()
        self.agents = nn.ModuleList(ActorCritic(*actor_critic_args, **actor_critic_kwargs) for _ in range(n_agents))

    @property
    def members(self) -> list[ActorCritic]:
        """Each agent's actor and critics, in agent order."""
        return cast(list[ActorCritic], list(self.agents))

    @property
    def optimizers(self) -> list[th.optim.Optimizer]:
        return [optimizer for agent in self.members for optimizer in agent.optimizers]

    @property
    def optimizer_names(self) -> list[str]:
        return [f"agents.{index}.{name}" for index, agent in enumerate(self.members) for name in agent.optimizer_names]

    def agent(self, index: int) -> ActorCritic:
        """Agent ``index``'s actor and critics."""
        return self.members[index]

    def value(self, obs: th.Tensor) -> th.Tensor:
        """Each agent's terminal value of its states, (N, ..., n) -> (N, ...)."""
        return th.stack([agent.value(rows) for agent, rows in zip(self.members, obs, strict=True)])

    def act(self, obs: th.Tensor, generator: th.Generator | None = None) -> tuple[th.Tensor, th.Tensor]:
        """
        Each agent's mean action and an action drawn from it for its states (N, B, n), both (N, B, m), the noise of
        every agent in one draw (``eps`` of shape (N, B, m), from ``generator``; None: torch's global stream).
        """
        params = [agent.actor.get_action_dist_params(rows) for agent, rows in zip(self.members, obs, strict=True)]
        mean, log_std = th.stack([mean for mean, _, _ in params]), th.stack([log_std for _, log_std, _ in params])
        eps = th.randn(mean.shape, dtype=mean.dtype, device=mean.device, generator=generator)
        return th.tanh(mean), th.tanh(mean + log_std.exp() * eps)

    def actions(self, obs: th.Tensor, deterministic: bool = False) -> th.Tensor:
        """Agent i's action for state i, (N, n) -> (N, m) (see :meth:`ActorCritic.actions`)."""
        return th.cat([agent.actions(row[None], deterministic) for agent, row in zip(self.members, obs, strict=True)])

    def update(self, batch: Sequence[th.Tensor]) -> ActorCriticLosses:
        """
        Each agent's SAC update on its rows of the minibatch (tensors (N, B, ...)); the losses and entropy coefficients
        averaged over the agents, for the logs.
        """
        losses = [agent.update([part[index] for part in batch]) for index, agent in enumerate(self.members)]
        return ActorCriticLosses(*(th.stack(values).mean() for values in zip(*losses)))
