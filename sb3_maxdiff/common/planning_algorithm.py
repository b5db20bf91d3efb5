"""
The part of an SB3 off-policy algorithm that acts with a planner over a learned model: the planned (or warm-up)
actions of training and their statistics, the warm start carried between steps, ``predict``, the planner's dtype,
the device-side training logs and what ``save`` and ``load`` leave out. NN-MPPI and MaxDiff RL build on it; their
own files hold their settings, the model's setup and ``train``.
"""

from typing import Any, TypeVar

import numpy as np
import torch as th
from stable_baselines3.common.buffers import ReplayBuffer
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.noise import ActionNoise
from stable_baselines3.common.off_policy_algorithm import OffPolicyAlgorithm
from stable_baselines3.common.save_util import load_from_zip_file
from stable_baselines3.common.type_aliases import GymEnv, MaybeCallback
from stable_baselines3.common.vec_env import VecEnv

from sb3_maxdiff.common.agents import IndependentAgentsMixin
from sb3_maxdiff.common.buffers import NextActionReplayBuffer
from sb3_maxdiff.common.models import PUBLISHED_REWARD_DISCOUNT
from sb3_maxdiff.common.mppi import PlannerSettings
from sb3_maxdiff.common.plan_memory import PlanCarry
from sb3_maxdiff.common.precision import AUTO
from sb3_maxdiff.common.training import UpdatesAhead
from sb3_maxdiff.common.training_stats import TrainingStats
from sb3_maxdiff.common.utils import check_spaces, flushing_denormals, saved_data_keys

SelfPlanningAlgorithm = TypeVar("SelfPlanningAlgorithm", bound="PlanningAlgorithm")


class PlanningAlgorithm(IndependentAgentsMixin, OffPolicyAlgorithm):
    """
    An SB3 off-policy algorithm whose policy plans over a learned model (an
    :class:`~sb3_maxdiff.nnmppi.policies.MPPIPolicy`): SB3's rollout collection, replay, logging, callbacks and
    save/load, with the training actions planned and the planner's statistics logged from the device. A subclass
    sets ``planner_settings``, ``warmup_actions`` and ``planner_dtype``, makes ``_plans``, ``_stats`` and ``_ahead``
    in its constructor, and writes ``train``.
    """

    policy: Any  # an MPPIPolicy (nnmppi/, above common/)
    replay_buffer: NextActionReplayBuffer
    planner_dtype: str
    planner_dtype_timings: dict[str, float]
    warmup_actions: str
    _planner_dtype_in_use: str
    _plans: PlanCarry
    _stats: TrainingStats
    _ahead: UpdatesAhead

    @property
    def planner_settings(self) -> PlannerSettings:
        """The planner's settings, made (and so checked) from the algorithm's arguments."""
        raise NotImplementedError

    @staticmethod
    def _wrap_env(env: GymEnv, verbose: int = 0, monitor_wrapper: bool = True) -> VecEnv:
        """SB3's, after the spaces are checked (as the env gives them, before SB3's wrappers; at ``load`` and
        ``set_env`` too), so that an unsupported space is refused with the reason."""
        check_spaces(env.observation_space, env.action_space)
        return OffPolicyAlgorithm._wrap_env(env, verbose, monitor_wrapper)

    def _reset_planner_dtype(self) -> None:
        """The dtype the planner runs in: the one asked for; "auto" is decided with the model (float32 until then)."""
        self._planner_dtype_in_use = "float32" if self.planner_dtype == AUTO else self.planner_dtype

    def _choose_planner_dtype(self) -> None:
        """``planner_dtype="auto"``: the policy's fastest (:meth:`MPPIPolicy.fastest_planner_dtype`) from now on."""
        self._planner_dtype_in_use, self.planner_dtype_timings = self.policy.fastest_planner_dtype(self.n_agents or 1)
        self.policy.use_planner_settings(self.planner_settings)
        if self.verbose >= 1:
            chosen = self._planner_dtype_in_use
            timings = ", ".join(f"{name} {1e3 * seconds:.1f} ms" for name, seconds in self.planner_dtype_timings.items())
            print(f"planner_dtype='auto': planning in {chosen}" + (f" (a plan: {timings})" if timings else ""))

    def _setup_learn(
        self,
        total_timesteps: int,
        callback: MaybeCallback = None,
        reset_num_timesteps: bool = True,
        tb_log_name: str = "run",
        progress_bar: bool = False,
    ) -> tuple[int, BaseCallback]:
        if reset_num_timesteps or self._last_obs is None:
            # the environments will be reset: the newest transitions have no next action
            self.replay_buffer.interrupt()
            self._plans.reset()
        return super()._setup_learn(total_timesteps, callback, reset_num_timesteps, tb_log_name, progress_bar)

    # ----- acting ----------------------------------------------------------------------------
    def _update_planner_parameters(self) -> None:
        """Hook called before each planning step during training (MaxDiff updates alpha)."""

    def _planned(self, stats: th.Tensor) -> None:
        """Hook called with the statistics (``STAT_NAMES``, shape (E, 6), on the device) of each training plan."""
        self._stats.add_plan(stats)  # on the device until the logs are written

    def _training_actions(
        self, learning_starts: int, action_noise: ActionNoise | None, n_envs: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """The actions the environments take (planned, or random in the warm-up) and as the buffer stores them."""
        if self.warmup_actions == "random" and self.agent_timesteps < learning_starts:
            # SB3 compares num_timesteps, which counts every agent's steps
            return super()._sample_action(self._agents.env_steps(learning_starts), action_noise, n_envs)
        self._update_planner_parameters()
        obs, _ = self.policy.obs_to_tensor(self._last_obs)  # type: ignore[arg-type]
        assert isinstance(obs, th.Tensor)  # the spaces are Boxes (checked at setup)
        result = self._plans.plan(self.policy, obs, self._last_episode_starts)
        self._planned(result.stats)
        scaled_action = result.actions.cpu().numpy()
        if action_noise is not None:
            scaled_action = scaled_action + action_noise()
        # "authors": the raw planner action is executed (the env applies or clips it) and stored as it is
        return self.policy.env_actions(scaled_action)

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
        self._agents.collect_returns(infos)

    def predict(
        self,
        observation: np.ndarray | dict[str, np.ndarray],
        state: tuple[np.ndarray, ...] | None = None,
        episode_start: np.ndarray | None = None,
        deterministic: bool = False,
        planner: bool = True,
    ) -> tuple[np.ndarray, tuple[np.ndarray, ...] | None]:
        """
        SB3's ``predict``: the planner's actions, the warm start threaded through ``state`` (see
        :meth:`MPPIPolicy.predict`); ``planner=False`` acts with the actor alone (``terminal_value="q"``).
        """
        if planner:  # SB3's call, as any policy takes it
            return self.policy.predict(observation, state, episode_start, deterministic)  # type: ignore[return-value]
        return self.policy.predict(observation, state, episode_start, deterministic, planner=False)  # type: ignore[return-value]

    # ----- logs, learn, save / load ----------------------------------------------------------
    def _record_device_stats(self) -> None:
        """Log the device-side statistics since the last dump, count the updates, warn about skips."""
        # learn() can fail before SB3 configured the logger
        record = self.logger.record if hasattr(self, "_logger") else lambda *args, **kwargs: None
        log_std = self._ahead.logged_log_std(self.policy.model.log_std)  # overlap_updates: before this step's updates
        self._n_updates = self._stats.flush(record, self._agents, self._n_updates, log_std, self.policy.warn_nonfinite)

    def dump_logs(self) -> None:
        self._record_device_stats()
        super().dump_logs()

    def learn(
        self: SelfPlanningAlgorithm,
        total_timesteps: int,
        callback: MaybeCallback = None,
        log_interval: int = 4,
        tb_log_name: str = "run",
        reset_num_timesteps: bool = True,
        progress_bar: bool = False,
    ) -> SelfPlanningAlgorithm:
        try:
            with flushing_denormals():
                return super().learn(total_timesteps, callback, log_interval, tb_log_name, reset_num_timesteps, progress_bar)
        finally:  # the update count and any warning are up to date when learn returns (or fails)
            self._stats.add_updates(self._ahead.take())  # overlap_updates: for a step at which a callback stopped training
            self._record_device_stats()

    @classmethod
    def load(  # type: ignore[override]
        cls: type[SelfPlanningAlgorithm],
        path: Any,
        env: GymEnv | None = None,
        device: th.device | str = "auto",
        *args: Any,
        cuda_graph: bool = False,
        overlap_updates: bool = False,
        **kwargs: Any,
    ) -> SelfPlanningAlgorithm:
        """SB3's ``load``; ``cuda_graph`` and ``overlap_updates``, like ``device``, are chosen here (checked with the
        model's setup, as at creation). A file saved before the reward head's discount was saved learned with the
        paper's 0.95 (unless its ``policy_kwargs`` say otherwise), and keeps it."""
        kwargs.update(cuda_graph=cuda_graph, overlap_updates=overlap_updates)
        if "reward_discount" not in kwargs and "reward_discount" not in saved_data_keys(path):
            kwargs["reward_discount"] = PUBLISHED_REWARD_DISCOUNT
        return super().load(path, env, device, *args, **kwargs)  # type: ignore[return-value]

    def set_parameters(
        self, load_path_or_dict: str | dict[str, Any], exact_match: bool = True, device: th.device | str = "auto"
    ) -> None:
        """SB3's; the optimizer state of a file saved before a single agent was a batch of one is put in its layout."""
        if isinstance(load_path_or_dict, dict):
            params: dict[str, Any] = load_path_or_dict
        else:
            _, params, _ = load_from_zip_file(load_path_or_dict, device=device, load_data=False)  # type: ignore[assignment]
        saved: Any = params.get("policy.optimizer")
        if saved is not None and len(saved["param_groups"][0]["params"]) != len(
            self.policy.optimizer.param_groups[0]["params"]
        ):
            params = {**params, "policy.optimizer": self.policy.model.single_model_adam_state(saved, self.policy.optimizer)}
        super().set_parameters(params, exact_match, device)  # type: ignore[arg-type]

    def _excluded_save_params(self) -> list[str]:
        # how to run (cuda_graph, overlap_updates) is chosen again at load, like the device, and planner_dtype="auto"
        # decided again there; the agents are set up again with the model (_agent_returns: files of earlier versions)
        excluded = ["_plans", "_stats", "cuda_graph", "agents", "_agent_returns", "overlap_updates", "_ahead"]
        excluded += ["_planner_dtype_in_use", "planner_dtype_timings"]
        return [*super()._excluded_save_params(), *excluded]
