"""
NN-MPPI: model-based RL that learns a dynamics + reward model and acts with an MPPI planner.

Baseline of *Maximum diffusion reinforcement learning* (Berrueta, Pinosky and Murphey,
Nature Machine Intelligence 2024, https://doi.org/10.1038/s42256-024-00829-3).
Builds on :class:`~sb3_maxdiff.common.planning_algorithm.PlanningAlgorithm`, SB3's ``OffPolicyAlgorithm`` acting
with a planner: rollout collection, replay, logging, callbacks, progress bar and save/load are SB3's. This file
holds the settings, the model's setup and ``train`` (the model's updates, and SAC's with ``terminal_value="q"``).
"""

import warnings
from typing import Any, ClassVar, TypeVar

import numpy as np
import torch as th
from gymnasium import spaces
from stable_baselines3.common.noise import ActionNoise
from stable_baselines3.common.policies import BasePolicy
from stable_baselines3.common.type_aliases import GymEnv, MaybeCallback, Schedule
from stable_baselines3.common.utils import update_learning_rate

from sb3_maxdiff.common.actor_critic import check_terminal_value
from sb3_maxdiff.common.agents import AgentLayout, check_agent_env, make_agents
from sb3_maxdiff.common.buffers import NextActionReplayBuffer, check_replay_buffer
from sb3_maxdiff.common.entropy import PathEntropySettings
from sb3_maxdiff.common.models import reward_head_discount
from sb3_maxdiff.common.mppi import PlannerSettings
from sb3_maxdiff.common.plan_memory import PlanCarry
from sb3_maxdiff.common.planning_algorithm import PlanningAlgorithm
from sb3_maxdiff.common.precision import AUTO, PLANNER_DTYPE_CHOICES
from sb3_maxdiff.common.training import ModelUpdate, UpdatesAhead, check_overlap_updates, minibatch
from sb3_maxdiff.common.training_stats import TrainingStats
from sb3_maxdiff.common.utils import (
    check_choice,
    check_flag,
    check_fraction,
    check_positive,
    is_per_agent,
    split_policy_and_env,
)
from sb3_maxdiff.nnmppi.policies import MlpPolicy, MPPIPolicy

SelfNNMPPI = TypeVar("SelfNNMPPI", bound="NNMPPI")

ACTION_SEMANTICS = ("bounded", "authors")
WARMUP_ACTIONS = ("random", "planner")


class NNMPPI(PlanningAlgorithm):
    """
    Neural-network MPPI (NN-MPPI), the model-based baseline of the MaxDiff RL paper.

    Every environment step the planner samples ``n_samples`` smoothed action sequences of length ``horizon`` around a
    warm-started nominal sequence, rolls them out through the learned model, and executes the first action of the
    exponentially weighted update; ``gradient_steps`` model updates follow. ``learn`` flushes denormal floats to zero
    while it runs (model rollouts make them, and they slow CPU math). The guide "Your own environment"
    says more about each parameter.

    :param policy: "MlpPolicy", a policy class, or directly the environment (instance or id)
    :param env: the environment (instance or registered id); None when ``policy`` is the environment
    :param learning_rate: model learning rate (float or schedule)
    :param buffer_size: replay buffer size
    :param learning_starts: no model updates for this many steps (and random actions with ``warmup_actions="random"``)
    :param batch_size: model minibatch size
    :param train_freq: update the model every ``train_freq`` steps (int or (int, unit))
    :param gradient_steps: model updates after each rollout (-1: as many as env steps)
    :param horizon: planning horizon H
    :param n_samples: sampled action sequences K per environment
    :param temperature: MPPI temperature lambda (> 0)
    :param noise_std: std sigma of the sampling noise (> 0); 0.3 in every published run
    :param control_cost: add ``lambda * sum_t log N(eta_t; 0, sigma^2)`` to the sample scores (as published); a list
        of bools gives each independent agent its own
    :param terminal_value: not in the paper: score each sampled path by ``sum_t gamma^t r_t + gamma^H V(s_H)``, so that
        the planner sees past its horizon. ``True`` or ``"v"``: ``V`` is a value of the replay buffer's behaviour,
        learned by TD with the model (hidden layers ``policy_kwargs["value_net_arch"]``, default ``net_arch``).
        ``"q"``: ``V(s) = Q(s, pi(s))``, twin critics of an actor trained with SAC's losses on the same minibatches
        (hidden layers ``policy_kwargs["critic_net_arch"]``, default [256, 256]), as TD-MPC2 and LOOP do; the actor
        also proposes ``actor_samples`` of the samples and acts alone with ``predict(..., planner=False)``; each
        independent agent has its own.
        False: the published planner
    :param gamma: discount of the planned rewards and of the value's (or critics') TD target (with ``terminal_value``)
    :param tau: Polyak step of the value's (or critics') target network after each update (with ``terminal_value``)
    :param actor_samples: with ``terminal_value="q"``, the share of the ``n_samples`` sequences that are the actor's
        rollouts through the model (rounded; 0: none)
    :param actor_bc_coef: with ``terminal_value="q"``, the weight of ``mean((mu(s) - a)^2)`` in the actor's loss,
        pulling its mean action toward the planner's executed action (0: SAC's actor)
    :param action_semantics: ``"bounded"``: sampled actions are clipped to the bounds before the rollout.
        ``"authors"``: as published, the raw planner action is stored and sent to the env, which applies or clips it
    :param warmup_actions: ``"random"``: uniformly random actions for the first ``learning_starts`` steps;
        ``"planner"``: plan with the untrained model from the first step, as the authors did
    :param independent_agents: True: each environment gets an agent of its own (model, optimizer state, replay
        column, warm start, schedules), as separate runs would, planned and trained in one batched call;
        ``learning_starts`` and ``buffer_size`` are then per agent, ``total_timesteps`` counts every agent's steps (as
        in SB3), and :meth:`agent` extracts one agent. False: one model learns from every environment
    :param planner_dtype: dtype of the planner's rollouts: "float32", "bfloat16" (only where the hardware has bfloat16
        matrix units) or "auto" (bfloat16 where the device has them and it plans this model faster, decided at setup
        and at load; ``planner_dtype_timings`` holds the timings); training is float32
    :param cuda_graph: on CUDA, replay the planning step and the model's updates (one agent's too) as captured CUDA
        graphs (the same random draws as eager); how to run, not saved: pass it to ``load`` too, like ``device``
    :param overlap_updates: make a step's model updates as soon as its actions are planned, before the environments
        step (on a GPU they then run while the host steps the environments); the same results, and a callback's
        ``on_step`` sees the model after them; needs ``train_freq=1``; how to run, not saved
    :param action_noise: SB3's exploration noise, added to the planner's (normalised) action during training
    :param replay_buffer_class: :class:`NextActionReplayBuffer` or a subclass (the reward target needs the next action)
    :param optimize_memory_usage: only False (the buffer keeps the next action, and where an episode broke off)
    :param replay_buffer_kwargs: keyword arguments of :class:`NextActionReplayBuffer`
    :param policy_kwargs: policy keyword arguments (``net_arch``, ``activation_fn``, ``optimizer_kwargs``, ...)
    :param stats_window_size: window of the rollout logging averages
    :param tensorboard_log: tensorboard log folder (None: no logging)
    :param verbose: 0 none, 1 info, 2 debug
    :param seed: random seed
    :param device: "auto", "cpu" or "cuda"
    :param _init_setup_model: whether to build the networks at creation
    """

    policy_aliases: ClassVar[dict[str, type[BasePolicy]]] = {"MlpPolicy": MlpPolicy}
    policy: MPPIPolicy
    replay_buffer: NextActionReplayBuffer

    def __init__(
        self,
        policy: str | type[MPPIPolicy] | GymEnv = "MlpPolicy",
        env: GymEnv | str | None = None,
        learning_rate: float | Schedule = 3e-4,
        buffer_size: int = 1_000_000,
        learning_starts: int = 256,
        batch_size: int = 128,
        train_freq: int | tuple[int, str] = 1,
        gradient_steps: int = 5,
        horizon: int = 40,
        n_samples: int = 500,
        temperature: float = 0.5,
        noise_std: float = 0.3,
        control_cost: bool | list[bool] = True,
        terminal_value: bool | str = False,
        gamma: float = 0.99,
        tau: float = 0.005,
        actor_samples: float = 0.05,
        actor_bc_coef: float = 0.0,
        action_semantics: str = "bounded",
        warmup_actions: str = "random",
        independent_agents: bool = False,
        planner_dtype: str = "float32",
        cuda_graph: bool = False,
        overlap_updates: bool = False,
        action_noise: ActionNoise | None = None,
        replay_buffer_class: type[NextActionReplayBuffer] | None = None,
        optimize_memory_usage: bool = False,
        replay_buffer_kwargs: dict[str, Any] | None = None,
        policy_kwargs: dict[str, Any] | None = None,
        stats_window_size: int = 100,
        tensorboard_log: str | None = None,
        verbose: int = 0,
        seed: int | None = None,
        device: th.device | str = "auto",
        _init_setup_model: bool = True,
    ):
        policy_name, env = split_policy_and_env(policy, env, self.policy_aliases)
        self.horizon = horizon
        self.n_samples = n_samples
        self.temperature = temperature
        self.noise_std = noise_std
        self.control_cost = list(control_cost) if is_per_agent(control_cost) else control_cost
        self.action_semantics = action_semantics
        self.terminal_value, self.actor_samples, self.actor_bc_coef = check_terminal_value(
            terminal_value, actor_samples, actor_bc_coef
        )
        self.gamma = check_fraction("gamma", gamma)
        self.tau = check_fraction("tau", tau)
        check_choice("planner_dtype", planner_dtype, PLANNER_DTYPE_CHOICES)
        self.planner_dtype = planner_dtype
        self._reset_planner_dtype()
        self.planner_dtype_timings: dict[str, float] = {}
        _ = self.planner_settings  # made, and so checked, before SB3's setup: a bad planner argument's error comes first
        check_positive("batch_size", batch_size, integer=True)
        check_choice("action_semantics", action_semantics, ACTION_SEMANTICS)
        check_choice("warmup_actions", warmup_actions, WARMUP_ACTIONS)
        self.independent_agents = check_flag("independent_agents", independent_agents)
        self.cuda_graph, self.overlap_updates = cuda_graph, overlap_updates  # checked at setup (and so at load too)
        replay_buffer_class = check_replay_buffer(buffer_size, replay_buffer_class, optimize_memory_usage)
        super().__init__(
            policy_name,
            env,  # type: ignore[arg-type]
            learning_rate,
            buffer_size=buffer_size,
            learning_starts=learning_starts,
            batch_size=batch_size,
            tau=tau,
            gamma=gamma,
            train_freq=train_freq,
            gradient_steps=gradient_steps,
            action_noise=action_noise,
            replay_buffer_class=replay_buffer_class,
            replay_buffer_kwargs=replay_buffer_kwargs,
            policy_kwargs=policy_kwargs,
            stats_window_size=stats_window_size,
            tensorboard_log=tensorboard_log,
            verbose=verbose,
            device=device,
            support_multi_env=True,
            seed=seed,
            sde_support=False,
            supported_action_spaces=(spaces.Box,),
        )
        self.warmup_actions = warmup_actions
        self._ahead = UpdatesAhead()  # overlap_updates: a step's updates, made before the environments step
        self.n_agents: int | None = None  # one agent per env (independent agents), or None: one shared model
        self.agents: AgentLayout | None = None  # what differs between the two, set up with the model
        self._plans = PlanCarry()  # the warm start and visited states, from one training plan to the next
        self._stats = TrainingStats()
        # the reward head's discount, resolved at setup (see _setup_model) and saved with the model
        self.reward_discount: float | None = None
        if _init_setup_model:
            self._setup_model()

    # ----- setup -----------------------------------------------------------------------------
    @property
    def value_kind(self) -> str | None:
        """What scores the end of a planned path: "v" (a value learned with the model), "q" (an actor's critic), None."""
        if self.terminal_value is False:
            return None
        return "v" if self.terminal_value is True else str(self.terminal_value)

    def _make_path_entropy(self) -> PathEntropySettings | None:
        """The MaxDiff term; NN-MPPI has none."""
        return None

    @property
    def planner_settings(self) -> PlannerSettings:
        """The planner's settings, made (and so checked) from this algorithm's arguments."""
        return PlannerSettings(
            horizon=self.horizon,
            n_samples=self.n_samples,
            temperature=self.temperature,
            noise_std=self.noise_std,
            control_cost=tuple(self.control_cost) if is_per_agent(self.control_cost) else self.control_cost,
            clip_samples=self.action_semantics == "bounded",
            dtype=self._planner_dtype_in_use,
            value_discount=self.gamma if self.value_kind else None,
            prior_samples=round(self.actor_samples * self.n_samples) if self.value_kind == "q" else 0,
        )

    def _per_agent_settings(self) -> dict[str, list | tuple]:
        return {"control_cost": self.control_cost} if is_per_agent(self.control_cost) else {}

    def _setup_model(self) -> None:
        self._reset_planner_dtype()  # at load too: planner_dtype comes from the saved file or the caller
        check_agent_env(self.independent_agents, self.n_agents, self.n_envs, self._vec_normalize_env)
        self._check_per_agent_settings()
        self.n_agents = self.n_envs if self.independent_agents else None
        self.agents = make_agents(self.n_agents)
        self._stats = TrainingStats()
        self._plans = PlanCarry()
        if self.replay_buffer is None:
            self.replay_buffer = self.agents.make_buffer(self)  # None: SB3's setup below makes it
        # planner settings and agent count reach the policy as SB3 forwards use_sde; the saved kwargs stay the user's
        user_policy_kwargs = self.policy_kwargs
        # the reward head's discount: the user's policy_kwargs, else the loaded file's, else the default for this value
        given = user_policy_kwargs.get("reward_discount", self.reward_discount)
        self.reward_discount = reward_head_discount(given, self.value_kind)
        self.policy_kwargs = {
            **user_policy_kwargs,
            "planner_settings": self.planner_settings,
            "path_entropy": self._make_path_entropy(),
            "n_agents": self.agents.batched,
            "cuda_graph": self.cuda_graph,
            "value_tau": self.tau,
            "terminal_value": self.value_kind,
            "actor_bc_coef": self.actor_bc_coef,
            "reward_discount": self.reward_discount,
        }
        try:
            super()._setup_model()
        finally:
            self.policy_kwargs = user_policy_kwargs
        self.cuda_graph = self.policy.cuda_graph  # checked by the policy, which captures the graphs
        if self.cuda_graph and self.device.type != "cuda":
            warnings.warn(f"cuda_graph=True has no effect on device {self.device}: the planner runs eagerly")
        self.overlap_updates = check_overlap_updates(self.overlap_updates, self.train_freq)
        if self.planner_dtype == AUTO:
            self._choose_planner_dtype()

    # ----- acting ----------------------------------------------------------------------------
    def _sample_action(
        self, learning_starts: int, action_noise: ActionNoise | None = None, n_envs: int = 1
    ) -> tuple[np.ndarray, np.ndarray]:
        actions, buffer_actions = self._training_actions(learning_starts, action_noise, n_envs)
        if self.overlap_updates:
            self._train_ahead(buffer_actions, n_envs)
        return actions, buffer_actions

    def _train_ahead(self, buffer_actions: np.ndarray, n_envs: int) -> None:
        """
        ``overlap_updates``: the ``train`` call that SB3 makes once the environments have taken ``buffer_actions`` and
        the step is stored, made now. This is the last hook before the environments step, and on a GPU the updates
        then run while the host steps them. They are made as they will be then: the step counted, the learning rate
        of that point, the step's next action stored, the same replay draw; SB3's call then only takes them.
        """
        self._stats.add_updates(self._ahead.take())  # made for a step whose train() call did not come
        steps_after = self.num_timesteps + n_envs
        gradient_steps = self.gradient_steps if self.gradient_steps >= 0 else n_envs
        if steps_after <= self.learning_starts or gradient_steps <= 0:
            return
        progress = self._current_progress_remaining
        self._update_current_progress_remaining(steps_after, self._total_timesteps)  # the rate after the step
        try:
            self.replay_buffer.set_next_action(buffer_actions)
            self.train(gradient_steps, self.batch_size, ahead=True)
        finally:
            self._current_progress_remaining = progress  # SB3 moves it on after the step, as before
            self.policy.set_training_mode(False)  # as SB3 left it for collecting the step

    # ----- learning --------------------------------------------------------------------------
    def train(self, gradient_steps: int, batch_size: int = 128, ahead: bool = False) -> None:
        """
        The updates after an environment step: one replay draw for all ``gradient_steps``, then on each minibatch the
        model's update (its loss, an Adam step skipped where the loss is not finite, the Polyak step of a value's
        target) and, with ``terminal_value="q"``, SAC's update of the actor and critics on the same rows. The losses
        are summed on the device and logged at the next dump. ``ahead``: made before the environments step (see
        :meth:`_train_ahead`), so the step and its transition count as taken.
        """
        if self._ahead.held and not ahead:  # overlap_updates: made before the environments stepped
            updates_ahead = self._ahead.take()
            self._stats.add_updates(updates_ahead)
            if updates_ahead:  # their learning rate is logged here, as SB3 does
                self.logger.record("train/learning_rate", self.lr_schedule(self._current_progress_remaining))
            return
        updates: list[ModelUpdate] = []
        if ahead:  # what a log written during the step shows: the model's log std before these updates
            self._ahead.hold(updates, self.policy.model.log_std.detach().mean())
        steps = self.num_timesteps + (self.n_envs if ahead else 0)
        if self.replay_buffer.size(ahead) < 1 or self._agents.agent_steps(steps) <= self.learning_starts:
            return
        if self.gradient_steps < 0:  # SB3 passes the environment steps; each agent makes one update per own step
            gradient_steps = self._agents.gradient_steps(gradient_steps)
        self.policy.set_training_mode(True)
        actor_critic = self.policy.actor_critic
        optimizers = [self.policy.optimizer, *(actor_critic.optimizers if actor_critic is not None else [])]
        if ahead:  # logged by SB3's call after the step
            for optimizer in optimizers:
                update_learning_rate(optimizer, self.lr_schedule(self._current_progress_remaining))
        else:
            self._update_learning_rate(optimizers)
        # one draw for all gradient steps: a single host-to-device copy
        data = self._agents.sample(self.replay_buffer, batch_size * gradient_steps, self._vec_normalize_env, ahead)
        for step in range(gradient_steps):
            batch = minibatch(data, step, batch_size)
            updates.append(self.policy.update_model(batch))  # eager, or replayed from a CUDA graph
            if actor_critic is not None:
                self._stats.add_critic(actor_critic.update(batch))
        if not ahead:
            self._stats.add_updates(updates)

    def learn(
        self: SelfNNMPPI,
        total_timesteps: int,
        callback: MaybeCallback = None,
        log_interval: int = 4,
        tb_log_name: str = "NNMPPI",
        reset_num_timesteps: bool = True,
        progress_bar: bool = False,
    ) -> SelfNNMPPI:
        return super().learn(total_timesteps, callback, log_interval, tb_log_name, reset_num_timesteps, progress_bar)

    # ----- save / load -----------------------------------------------------------------------
    def _get_torch_save_params(self) -> tuple[list[str], list[str]]:
        actor_critic = self.policy.actor_critic
        critic = [] if actor_critic is None else actor_critic.optimizer_names
        return ["policy", "policy.optimizer", *(f"policy.actor_critic.{name}" for name in critic)], []
