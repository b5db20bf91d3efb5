"""
NN-MPPI: model-based RL that learns a dynamics + reward model and acts with an MPPI planner.

Baseline of *Maximum diffusion reinforcement learning* (Berrueta, Pinosky and Murphey,
Nature Machine Intelligence 2024, https://doi.org/10.1038/s42256-024-00829-3).
Builds on SB3's ``OffPolicyAlgorithm``: rollout collection, replay, logging, callbacks, progress
bar and save/load are SB3's; what differs is the policy (a planner over a learned model), the
replay buffer (it stores the next action) and ``train`` (model updates instead of actor-critic).
"""

import warnings
from typing import Any, ClassVar, TypeVar

import numpy as np
import torch as th
from gymnasium import spaces
from stable_baselines3.common.base_class import maybe_make_env
from stable_baselines3.common.buffers import ReplayBuffer
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.noise import ActionNoise
from stable_baselines3.common.off_policy_algorithm import OffPolicyAlgorithm
from stable_baselines3.common.policies import BasePolicy
from stable_baselines3.common.preprocessing import get_flattened_obs_dim
from stable_baselines3.common.type_aliases import GymEnv, MaybeCallback, Schedule

from sb3_maxdiff.common.buffers import NextActionReplayBuffer
from sb3_maxdiff.common.entropy import PathEntropy
from sb3_maxdiff.common.mppi import STAT_NAMES, MPPIPlanner, check_planner_settings, check_positive
from sb3_maxdiff.nnmppi.policies import MlpPolicy, MPPIPolicy

SelfNNMPPI = TypeVar("SelfNNMPPI", bound="NNMPPI")


def split_policy_and_env(
    policy: str | type[BasePolicy] | GymEnv, env: GymEnv | str | None, aliases: dict[str, type[BasePolicy]]
) -> tuple[str | type[BasePolicy], GymEnv | str | None]:
    """Allow ``Algo(env)`` and ``Algo("Swimmer-v4")`` besides SB3's ``Algo("MlpPolicy", env)``."""
    is_policy = (isinstance(policy, str) and policy in aliases) or (
        isinstance(policy, type) and issubclass(policy, BasePolicy)
    )
    if is_policy:
        return policy, env  # type: ignore[return-value]
    if env is not None:
        raise ValueError(f"policy must be one of {sorted(aliases)} or a policy class when env is given, got {policy!r}")
    return "MlpPolicy", policy  # type: ignore[return-value]


def check_spaces(observation_space: spaces.Space, action_space: spaces.Space) -> None:
    """MPPI plans in normalised continuous actions over flat observations."""
    if not isinstance(action_space, spaces.Box):
        raise ValueError(f"action_space must be a gymnasium.spaces.Box (continuous actions), got {action_space}")
    if not (np.all(np.isfinite(action_space.low)) and np.all(np.isfinite(action_space.high))):
        raise ValueError("action_space must be a bounded Box (finite low and high): MPPI plans in normalised actions")
    if not isinstance(observation_space, spaces.Box):
        raise ValueError(f"observation_space must be a gymnasium.spaces.Box, got {observation_space}")
    if len(observation_space.shape) != 1:
        raise ValueError(
            f"observation_space must be a flat Box of shape (n,) (the model is an MLP over the state), got shape "
            f"{observation_space.shape}; flatten it first, e.g. with gymnasium.wrappers.FlattenObservation"
        )


ACTION_SEMANTICS = ("bounded", "authors")
WARMUP_ACTIONS = ("random", "planner")


def check_choice(name: str, value: object, choices: tuple[str, ...]) -> None:
    """Raise a ValueError naming the parameter and its accepted values."""
    if value not in choices:
        raise ValueError(f"{name} must be one of {list(choices)}, got {value!r}")


class NNMPPI(OffPolicyAlgorithm):
    """
    Neural-network MPPI (NN-MPPI), the model-based baseline of the MaxDiff RL paper.

    Every environment step the planner samples ``n_samples`` smoothed action sequences of length
    ``horizon`` around a warm-started nominal sequence, rolls them out through the learned model,
    and executes the first action of the exponentially weighted update. ``gradient_steps`` model
    updates follow each (vectorised) environment step.

    ``learn`` turns on flushing of denormal floats to zero (``torch.set_flush_denormal(True)``, a
    process-wide setting): model rollouts produce them and they slow CPU math down markedly.

    :param policy: "MlpPolicy", a policy class, or directly the environment (instance or id)
    :param env: the environment (instance or registered id); None when ``policy`` is the environment
    :param learning_rate: model learning rate (float or schedule)
    :param buffer_size: replay buffer size
    :param learning_starts: no model updates for this many steps (and, with ``warmup_actions="random"``,
        uniformly random actions)
    :param batch_size: model minibatch size
    :param train_freq: update the model every ``train_freq`` steps (int or (int, unit))
    :param gradient_steps: model updates after each rollout (SB3 convention; -1: as many as env steps)
    :param horizon: planning horizon H
    :param n_samples: sampled action sequences K per environment
    :param temperature: MPPI temperature lambda (> 0)
    :param noise_std: std sigma of the sampling noise (> 0); 0.3 in every published run
    :param control_cost: add ``lambda * sum_t log N(eta_t; 0, sigma^2)`` to the sample scores (as published)
    :param action_semantics: how planned actions relate to the action bounds; the action the model is
        queried with, the one the env receives and the one the replay buffer stores always agree.
        ``"bounded"``: sampled actions are clipped to the bounds before the rollout, so the model is only
        asked about executable actions. ``"authors"``: as in the published runs, nothing is clipped by the
        algorithm: the raw planner action is stored and sent to the env, which applies it as it is (the
        ``PointMassUnbounded`` ids) or clips it itself (the paper's MuJoCo ids)
    :param warmup_actions: ``"random"``: uniformly random actions for the first ``learning_starts`` steps;
        ``"planner"``: plan with the (untrained) model from the first step, as the authors did
    :param planner_dtype: compute dtype of the planner's model rollouts, "float32" or "bfloat16" (the model
        is trained in float32 either way). bfloat16 only pays off on hardware with bfloat16 matrix units; on
        AVX2-only CPUs it is about 40x slower (BENCHMARKS.md)
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
        control_cost: bool = True,
        action_semantics: str = "bounded",
        warmup_actions: str = "random",
        planner_dtype: str = "float32",
        replay_buffer_kwargs: dict[str, Any] | None = None,
        policy_kwargs: dict[str, Any] | None = None,
        stats_window_size: int = 100,
        tensorboard_log: str | None = None,
        verbose: int = 0,
        seed: int | None = None,
        device: th.device | str = "auto",
        _init_setup_model: bool = True,
    ):
        policy, env = split_policy_and_env(policy, env, self.policy_aliases)
        if isinstance(env, str):
            env = maybe_make_env(env, verbose)
        if env is not None:  # before SB3's own checks, for a clear error
            check_spaces(env.observation_space, env.action_space)
        # the planner's own checks, before SB3's setup, so that the error comes first and names the parameter
        check_planner_settings(horizon, n_samples, temperature, noise_std, planner_dtype)
        check_positive("batch_size", batch_size, integer=True)
        if isinstance(buffer_size, bool) or not isinstance(buffer_size, (int, np.integer)) or buffer_size < 2:
            # the newest transition waits for its next action, so one row alone is never sampled
            raise ValueError(f"buffer_size must be an integer >= 2, got {buffer_size!r}")
        check_choice("action_semantics", action_semantics, ACTION_SEMANTICS)
        check_choice("warmup_actions", warmup_actions, WARMUP_ACTIONS)
        super().__init__(
            policy,
            env,  # type: ignore[arg-type]
            learning_rate,
            buffer_size=buffer_size,
            learning_starts=learning_starts,
            batch_size=batch_size,
            train_freq=train_freq,
            gradient_steps=gradient_steps,
            replay_buffer_class=NextActionReplayBuffer,
            replay_buffer_kwargs=replay_buffer_kwargs,
            policy_kwargs=policy_kwargs,
            stats_window_size=stats_window_size,
            tensorboard_log=tensorboard_log,
            verbose=verbose,
            device=device,
            support_multi_env=True,
            seed=seed,
            sde_support=False,
        )
        self.horizon = horizon
        self.n_samples = n_samples
        self.temperature = temperature
        self.noise_std = noise_std
        self.control_cost = control_cost
        self.action_semantics = action_semantics
        self.warmup_actions = warmup_actions
        self.planner_dtype = planner_dtype
        self._train_nominal: th.Tensor | None = None
        if _init_setup_model:
            self._setup_model()

    # ----- setup -----------------------------------------------------------------------------
    def _make_path_entropy(self) -> PathEntropy | None:
        """The MaxDiff term; NN-MPPI has none."""
        return None

    def _make_planner(self) -> MPPIPlanner:
        return MPPIPlanner(
            action_dim=int(self.action_space.shape[0]),  # type: ignore[index]
            horizon=self.horizon,
            n_samples=self.n_samples,
            temperature=self.temperature,
            noise_std=self.noise_std,
            control_cost=self.control_cost,
            clip_samples=self.action_semantics == "bounded",
            path_entropy=self._make_path_entropy(),
            dtype=self.planner_dtype,
        )

    @property
    def obs_dim(self) -> int:
        return get_flattened_obs_dim(self.observation_space)

    def _setup_model(self) -> None:
        check_spaces(self.observation_space, self.action_space)
        self._setup_lr_schedule()
        self.set_random_seed(self.seed)
        if self.replay_buffer is None:
            self.replay_buffer = NextActionReplayBuffer(
                self.buffer_size,
                self.observation_space,
                self.action_space,
                device=self.device,
                n_envs=self.n_envs,
                **self.replay_buffer_kwargs,
            )
        self.policy = self.policy_class(  # type: ignore[assignment]
            self.observation_space, self.action_space, self.lr_schedule, planner=self._make_planner(), **self.policy_kwargs
        ).to(self.device)
        self._convert_train_freq()
        self._train_nominal = None

    def _setup_learn(
        self,
        total_timesteps: int,
        callback: MaybeCallback = None,
        reset_num_timesteps: bool = True,
        tb_log_name: str = "run",
        progress_bar: bool = False,
    ) -> tuple[int, BaseCallback]:
        # ReLU model rollouts produce denormal floats that slow CPU math down by ~25%: flush them to zero
        th.set_flush_denormal(True)
        if reset_num_timesteps or self._last_obs is None:
            # the environments will be reset: the newest transitions have no next action
            self.replay_buffer.interrupt()
            self._train_nominal = None
        return super()._setup_learn(total_timesteps, callback, reset_num_timesteps, tb_log_name, progress_bar)

    # ----- acting ----------------------------------------------------------------------------
    def _update_planner_parameters(self) -> None:
        """Hook called before each planning step during training (MaxDiff updates alpha)."""

    def _sample_action(
        self, learning_starts: int, action_noise: ActionNoise | None = None, n_envs: int = 1
    ) -> tuple[np.ndarray, np.ndarray]:
        if self.warmup_actions == "random" and self.num_timesteps < learning_starts:
            return super()._sample_action(learning_starts, action_noise, n_envs)
        self._update_planner_parameters()
        obs, _ = self.policy.obs_to_tensor(self._last_obs)  # type: ignore[arg-type]
        starts = th.as_tensor(np.asarray(self._last_episode_starts, dtype=bool), device=self.device)
        with th.no_grad():
            result = self.policy.plan(obs, self._train_nominal, starts)
        self._train_nominal = result.nominal
        for name, value in zip(STAT_NAMES, result.stats.mean(dim=0).tolist()):
            self.logger.record_mean(f"planner/{name}", value)
        scaled_action = result.actions.cpu().numpy()
        if action_noise is not None:
            scaled_action = scaled_action + action_noise()
        if self.action_semantics == "bounded":
            scaled_action = np.clip(scaled_action, -1.0, 1.0)
        # "authors": the raw planner action is executed (the env applies or clips it) and stored as it is
        return self.policy.unscale_action(scaled_action), scaled_action

    def _store_transition(
        self,
        replay_buffer: ReplayBuffer,
        buffer_action: np.ndarray,
        new_obs: np.ndarray | dict[str, np.ndarray],
        reward: np.ndarray,
        dones: np.ndarray,
        infos: list[dict[str, Any]],
    ) -> None:
        super()._store_transition(replay_buffer, buffer_action, new_obs, reward, dones, infos)
        # the planner's warm start is reset where an episode starts
        self._last_episode_starts = np.asarray(dones, dtype=bool).copy()

    # ----- learning --------------------------------------------------------------------------
    def train(self, gradient_steps: int, batch_size: int = 128) -> None:
        if self.replay_buffer.size() < 1:
            return
        self.policy.set_training_mode(True)
        self._update_learning_rate(self.policy.optimizer)
        # one draw for all gradient steps: a single host-to-device copy
        data = self.replay_buffer.sample(batch_size * gradient_steps, env=self._vec_normalize_env)
        losses = []
        applied = 0
        for step in range(gradient_steps):
            batch = (tensor[step * batch_size : (step + 1) * batch_size] for tensor in data)
            loss = self.policy.model.loss(*batch)
            if not th.isfinite(loss.total):
                warnings.warn("Non-finite model loss: this gradient step was skipped (the model keeps its parameters)")
                continue
            self.policy.optimizer.zero_grad()
            loss.total.backward()
            self.policy.optimizer.step()
            applied += 1
            losses.append(th.stack([loss.total, loss.dynamics, loss.reward]).detach())
        self._n_updates += applied
        self.logger.record("train/n_updates", self._n_updates, exclude="tensorboard")
        if losses:
            total, dynamics, reward = th.stack(losses).mean(dim=0).tolist()
            self.logger.record("train/model_loss", total)
            self.logger.record("train/dynamics_loss", dynamics)
            self.logger.record("train/reward_loss", reward)
            self.logger.record("train/model_log_std", self.policy.model.log_std.mean().item())

    def learn(
        self: SelfNNMPPI,
        total_timesteps: int,
        callback: MaybeCallback = None,
        log_interval: int = 4,
        tb_log_name: str = "NNMPPI",
        reset_num_timesteps: bool = True,
        progress_bar: bool = False,
    ) -> SelfNNMPPI:
        return super().learn(
            total_timesteps=total_timesteps,
            callback=callback,
            log_interval=log_interval,
            tb_log_name=tb_log_name,
            reset_num_timesteps=reset_num_timesteps,
            progress_bar=progress_bar,
        )

    # ----- save / load -----------------------------------------------------------------------
    def _excluded_save_params(self) -> list[str]:
        return [*super()._excluded_save_params(), "_train_nominal"]

    def _get_torch_save_params(self) -> tuple[list[str], list[str]]:
        return ["policy", "policy.optimizer"], []
