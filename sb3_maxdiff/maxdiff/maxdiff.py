"""
MaxDiff RL with an MPPI planner: NN-MPPI whose sample scores carry the path-entropy term.

*Maximum diffusion reinforcement learning*, Berrueta, Pinosky and Murphey,
Nature Machine Intelligence 2024, https://doi.org/10.1038/s42256-024-00829-3
"""

import numbers
from typing import Any, TypeVar, cast

import numpy as np
import torch as th
from stable_baselines3.common.noise import ActionNoise
from stable_baselines3.common.preprocessing import get_flattened_obs_dim
from stable_baselines3.common.type_aliases import GymEnv, MaybeCallback, Schedule

from sb3_maxdiff.common.auto_alpha import (
    DEFAULT_RATE,
    DEFAULT_RATIO,
    AutoAlpha,
    check_auto_alpha_options,
    parse_auto_alpha,
    update_auto_alpha,
)
from sb3_maxdiff.common.buffers import NextActionReplayBuffer
from sb3_maxdiff.common.entropy import PathEntropySettings, make_path_entropy
from sb3_maxdiff.common.schedules import AlphaSchedule, alpha_value, as_alpha_schedule
from sb3_maxdiff.common.utils import check_flag, is_per_agent, saved_data_keys
from sb3_maxdiff.nnmppi.nnmppi import NNMPPI
from sb3_maxdiff.nnmppi.policies import MPPIPolicy

SelfMaxDiffMPPI = TypeVar("SelfMaxDiffMPPI", bound="MaxDiffMPPI")


class MaxDiffMPPI(NNMPPI):
    """
    MaxDiff RL, model-based. Same as :class:`NNMPPI` except that each sampled
    path ``k`` is scored ``R_k + alpha * S_k`` with ``S_k = 0.5 * log det(W cov(X_k) W)`` over the
    predicted states ``X_k`` restricted to ``explr_dims``, and that, as in the published runs, the
    control term is off by default. The parameters after ``entropy_jitter`` are NN-MPPI's, keyword-only.

    :param policy: "MlpPolicy", a policy class, or directly the environment (instance or id)
    :param env: the environment (instance or registered id)
    :param alpha: weight of the path entropy: a float >= 0, a :class:`~sb3_maxdiff.StepSchedule`
        over environment steps (e.g. ``StepSchedule([0.5, 5.0], [1000])`` as in the point-mass runs),
        an SB3 schedule of the remaining progress, or ``{"values": [...], "boundaries": [...]}`` (a
        StepSchedule written in YAML), or ``"auto"`` / ``"auto_<start>"``: set during training so that the spread of
        ``alpha * S`` over the planner's samples is ``alpha_target_ratio`` times that of the predicted return (see
        :mod:`sb3_maxdiff.common.auto_alpha`; its value is saved with the model and resumes). With
        ``independent_agents=True``, a list of these gives each agent its own (one per environment): a sweep over
        alpha trains as one batch, and each automatic alpha follows its own agent's plans. An agent with alpha 0 and
        ``control_cost=True`` plans exactly as an NN-MPPI agent (see :meth:`agent`)
    :param alpha_target_ratio: for ``alpha="auto"``: the target of ``std_k(alpha * S_k) / std_k(R_k)``
    :param alpha_rate: for ``alpha="auto"``: the step of ``log alpha`` toward its target at each training plan, in
        (0, 1] (its time constant is about ``1 / alpha_rate`` plans)
    :param explr_dims: observation indices of the exploration dims (None: all)
    :param explr_weights: weight of each exploration dim (None: ones)
    :param window: False: one covariance over the horizon; True: mean over windows of
        ``max(H // 4, 2 * d)`` steps with stride a third of that; int: that window length
    :param entropy_method: "logdet" (the paper), "top_eigs" (sum of the logs of the ``entropy_top_m``
        leading eigenvalues) or "log_trace"
    :param entropy_top_m: number of eigenvalues for "top_eigs" (default: all exploration dims)
    :param entropy_jitter: how each covariance is kept invertible before its log-determinant. "random" adds a draw of
        N(0, (1e-8)^2) to every entry, new for every sample, window and plan, as the authors' implementation does (drawn
        after the sampling noise, from the same stream); "logdet" only. "diagonal" adds ``1e-8 * I``. None (default):
        "random" with ``entropy_method="logdet"``, "diagonal" with the other methods. The two entropies differ by
        about 1e-8 over the covariance's smallest eigenvalue: by little unless it is near or below 1e-8, as while the
        model still predicts almost no motion; there the authors' draw measurably helps single-shot runs start
        swimming. Models saved before this option existed load with "diagonal", the jitter they were trained with
    :param control_cost: add the NN-MPPI control term to the scores (off in the published MaxDiff runs); a list
        of bools gives each independent agent its own
    :param history: not in the paper: put the last ``history`` observations of the environment (the current one
        included) ahead of each planned path before taking its entropy, so that moving away from where the agent
        has just been pays (the look back in time of the paper's model-free variant, here inside the planner);
        0 (default): the planned path alone, as published. Planned eagerly where ``cuda_graph=True``
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

    def __init__(
        self,
        policy: str | type[MPPIPolicy] | GymEnv = "MlpPolicy",
        env: GymEnv | str | None = None,
        alpha: AlphaSchedule | list[AlphaSchedule] = 5.0,
        explr_dims: list[int] | None = None,
        explr_weights: list[float] | None = None,
        window: bool | int = False,
        entropy_method: str = "logdet",
        entropy_top_m: int | None = None,
        control_cost: bool | list[bool] = False,
        alpha_target_ratio: float = DEFAULT_RATIO,
        alpha_rate: float = DEFAULT_RATE,
        history: int = 0,
        entropy_jitter: str | None = None,
        *,
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
        if is_per_agent(alpha):
            if len(alpha) == 0:
                raise ValueError("alpha as a list must hold one value per independent agent, got []")
            alpha = [_as_alpha(value) for value in alpha]
        else:
            alpha = _as_alpha(alpha)
        check_auto_alpha_options(alpha_target_ratio, alpha_rate)
        self.alpha = alpha
        self.alpha_target_ratio = alpha_target_ratio
        self.alpha_rate = alpha_rate
        self._alpha_shown: list[float | None] | None = None
        self._auto_alpha: th.Tensor | None = None
        self.explr_dims = None if explr_dims is None else list(explr_dims)
        self.explr_weights = None if explr_weights is None else list(explr_weights)
        self.window = window
        self.entropy_method = entropy_method
        self.entropy_top_m = entropy_top_m
        self.entropy_jitter = entropy_jitter
        self.history = history
        super().__init__(
            policy,
            env,
            learning_rate=learning_rate,
            buffer_size=buffer_size,
            learning_starts=learning_starts,
            batch_size=batch_size,
            train_freq=train_freq,
            gradient_steps=gradient_steps,
            horizon=horizon,
            n_samples=n_samples,
            temperature=temperature,
            control_cost=control_cost,
            noise_std=noise_std,
            terminal_value=terminal_value,
            gamma=gamma,
            tau=tau,
            actor_samples=actor_samples,
            actor_bc_coef=actor_bc_coef,
            action_semantics=action_semantics,
            warmup_actions=warmup_actions,
            independent_agents=independent_agents,
            planner_dtype=planner_dtype,
            cuda_graph=cuda_graph,
            overlap_updates=overlap_updates,
            action_noise=action_noise,
            replay_buffer_class=replay_buffer_class,
            optimize_memory_usage=optimize_memory_usage,
            replay_buffer_kwargs=replay_buffer_kwargs,
            policy_kwargs=policy_kwargs,
            stats_window_size=stats_window_size,
            tensorboard_log=tensorboard_log,
            verbose=verbose,
            seed=seed,
            device=device,
            _init_setup_model=False,
        )
        if _init_setup_model:
            self._setup_model()

    def _make_path_entropy(self) -> PathEntropySettings:
        return make_path_entropy(
            get_flattened_obs_dim(self.observation_space),
            self.horizon,
            dims=self.explr_dims,
            weights=self.explr_weights,
            window=self.window,
            method=self.entropy_method,
            top_m=self.entropy_top_m,
            history=self.history,
            jitter=self._entropy_jitter_in_use,
        )

    @property
    def _entropy_jitter_in_use(self) -> str:
        """The jitter asked for, or by default the authors' random draw where the entropy is a log-determinant."""
        if self.entropy_jitter is not None:
            return self.entropy_jitter
        return "random" if self.entropy_method == "logdet" else "diagonal"

    # the parameters MaxDiff adds to NN-MPPI's (the one list of them): an agent taken out as an NNMPPI leaves them
    # behind, and the experiment runner batches MaxDiff agents that share them (but alpha) with NN-MPPI agents
    ENTROPY_PARAMETERS = (
        "alpha",
        "alpha_target_ratio",
        "alpha_rate",
        "explr_dims",
        "explr_weights",
        "window",
        "entropy_method",
        "entropy_top_m",
        "entropy_jitter",
        "history",
    )

    def _per_agent_settings(self) -> dict[str, list | tuple]:
        return {**super()._per_agent_settings(), **({"alpha": self.alpha} if is_per_agent(self.alpha) else {})}

    @property
    def _alpha_buffer(self) -> th.Tensor:
        """The weight of the path entropy as the planner reads it (the policy's buffer, on its device)."""
        bonus = self.policy.entropy_bonus
        assert bonus is not None  # MaxDiff's policy always plans with the path entropy
        return bonus.alpha

    def _alphas(self) -> list:
        """The alpha of each agent (one entry unless the agents have their own)."""
        return self.alpha if is_per_agent(self.alpha) else [self.alpha]

    def _current_alpha(self) -> list[float | None]:
        """The weight of the path entropy now, one per agent where each has its own (a StepSchedule counts each
        agent's own steps); None for an automatic alpha (its value lives on the device)."""
        steps, progress = self.agent_timesteps, self._current_progress_remaining
        return [None if isinstance(alpha, AutoAlpha) else alpha_value(alpha, steps, progress) for alpha in self._alphas()]

    def _set_alpha(self, start: bool = False) -> None:
        """
        Write the current alpha into the policy's buffer: one value by ``fill_`` (no host-device copy); one per agent
        copied to the device only when they changed (a copy from the host waits for the device). An automatic alpha
        is written only at ``start`` (its starting value); afterwards the rule moves it on the device.
        """
        values, buffer = self._current_alpha(), self._alpha_buffer
        if start:
            alphas = self._alphas()
            # an automatic alpha starts from its start value; any other has its value now
            starts = cast(
                list[float],
                [alpha.start_value if isinstance(alpha, AutoAlpha) else value for alpha, value in zip(alphas, values)],
            )
            if len(starts) == 1:  # one alpha, for all agents where the model batches several
                buffer.fill_(starts[0])
            else:
                buffer.copy_(th.tensor(starts, dtype=buffer.dtype).reshape(buffer.shape))
        elif not is_per_agent(self.alpha):
            if values[0] is not None:
                buffer.fill_(values[0])
        elif values != self._alpha_shown:
            fixed = th.tensor([0.0 if value is None else value for value in values], dtype=buffer.dtype)
            fixed = fixed.to(buffer.device).reshape(buffer.shape)
            auto = self._auto_alpha
            buffer.copy_(fixed if auto is None else th.where(auto.reshape(buffer.shape), buffer, fixed))
        self._alpha_shown = values

    def set_parameters(self, *args: Any, **kwargs: Any) -> None:
        super().set_parameters(*args, **kwargs)
        self._alpha_shown = None  # the loaded buffer may hold other values than those last written

    def _setup_model(self) -> None:
        super()._setup_model()
        auto = [isinstance(schedule, AutoAlpha) for schedule in self._alphas()]
        # which agents follow the rule (a bool per agent, on the device), None where none does
        self._auto_alpha = th.tensor(auto, device=self.device) if any(auto) else None
        self._set_alpha(start=True)

    def _update_planner_parameters(self) -> None:
        self._set_alpha()

    def _planned(self, stats: th.Tensor) -> None:
        super()._planned(stats)
        if self._auto_alpha is not None:
            alpha = self._alpha_buffer
            auto = self._auto_alpha.expand(alpha.shape) if alpha.dim() > 0 else None
            update_auto_alpha(alpha, stats, self.alpha_target_ratio, self.alpha_rate, auto)

    def _record_device_stats(self) -> None:
        super()._record_device_stats()
        if not hasattr(self, "_logger"):  # learn() can fail before SB3 configured the logger
            return
        values = self._alpha_buffer.detach().cpu().flatten().tolist()  # one host copy per log dump
        self.logger.record("train/alpha", float(np.mean(values)))
        if len(values) > 1:
            for index, value in enumerate(values):
                self.logger.record(f"train/alpha_agent_{index}", value)

    def agent(self, index: int, as_nnmppi: bool = False) -> Any:
        """
        Agent ``index`` of an ``independent_agents=True`` model as a model of its own (see :meth:`NNMPPI.agent`),
        with its own alpha and control-cost flag.

        :param as_nnmppi: return it as an :class:`NNMPPI` (for an agent of a mixed batch with alpha 0 and the
            control term on, which plans exactly as NN-MPPI), so that it saves and loads as one
        """
        if not check_flag("as_nnmppi", as_nnmppi):
            return super().agent(index)
        settings = {"alpha": 0.0, "control_cost": self.control_cost, **self._agent_settings(index)}
        alpha = settings["alpha"]
        if not (isinstance(alpha, numbers.Real) and alpha == 0.0 and settings["control_cost"] is True):
            raise ValueError(
                f"as_nnmppi=True takes an agent that plans as NN-MPPI (alpha 0, control_cost True); agent {index} has "
                f"alpha {alpha!r} and control_cost {settings['control_cost']!r}"
            )
        return self._extract_agent(index, NNMPPI, drop=self.ENTROPY_PARAMETERS)

    def learn(
        self: SelfMaxDiffMPPI,
        total_timesteps: int,
        callback: MaybeCallback = None,
        log_interval: int = 4,
        tb_log_name: str = "MaxDiffMPPI",
        reset_num_timesteps: bool = True,
        progress_bar: bool = False,
    ) -> SelfMaxDiffMPPI:
        return super().learn(total_timesteps, callback, log_interval, tb_log_name, reset_num_timesteps, progress_bar)

    def _excluded_save_params(self) -> list[str]:
        return [*super()._excluded_save_params(), "_alpha_shown", "_auto_alpha"]

    @classmethod
    def load(cls: type[SelfMaxDiffMPPI], path: Any, *args: Any, **kwargs: Any) -> SelfMaxDiffMPPI:  # type: ignore[override]
        """SB3's ``load`` (see :meth:`NNMPPI.load`); a file saved before ``entropy_jitter`` existed plans with "diagonal"."""
        if "entropy_jitter" not in kwargs and "entropy_jitter" not in saved_data_keys(path):
            kwargs["entropy_jitter"] = "diagonal"  # the jitter every MaxDiff used before the option
        return super().load(path, *args, **kwargs)


def _as_alpha(alpha: Any) -> Any:
    """One agent's alpha checked: a schedule (see :func:`as_alpha_schedule`) or ``"auto"`` / ``"auto_<start>"``."""
    if isinstance(alpha, AutoAlpha):
        return alpha
    if isinstance(alpha, str):
        return parse_auto_alpha(alpha)
    alpha = as_alpha_schedule(alpha)
    alpha_value(alpha, 0, 1.0)  # raises on a negative alpha
    return alpha
