"""The MPPI policy: a learned dynamics + reward model and the planner that acts with it."""

import contextlib
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch as th
from gymnasium import spaces
from stable_baselines3.common.policies import BasePolicy
from stable_baselines3.common.type_aliases import PyTorchObs, Schedule
from torch import nn

from sb3_maxdiff.common.actor_critic import ActorCritic, AgentActorCritics
from sb3_maxdiff.common.cuda_graphs import GraphedPlanning, GraphedUpdates
from sb3_maxdiff.common.entropy import EntropyBonus, PathEntropySettings
from sb3_maxdiff.common.models import BatchedDynamicsRewardModel, check_net_arch, reward_head_discount
from sb3_maxdiff.common.mppi import MPPIPlanner, PlannerSettings, PlanResult
from sb3_maxdiff.common.optimizers import AgentAdam
from sb3_maxdiff.common.plan_memory import VisitedStates
from sb3_maxdiff.common.precision import choose_planner_dtype
from sb3_maxdiff.common.training import ModelUpdate, model_update
from sb3_maxdiff.common.utils import check_choice, check_flag, flushing_denormals

# the seed of the generator that deterministic planning draws its noise from, anew at every call
DETERMINISTIC_SEED = 0

# what scores the end of a planned path: a value V(s) learned with the model, or the critic Q(s, pi(s)) of an actor
TERMINAL_VALUES = ("v", "q")

# torch.optim.Adam options that AgentAdam does not take (it is always one fused-by-shape update)
_ADAM_IMPLEMENTATION_KWARGS = ("fused", "foreach", "capturable", "differentiable")


def agent_optimizer(optimizer_class: type[th.optim.Optimizer], optimizer_kwargs: dict[str, Any]) -> dict[str, Any]:
    """
    The keyword arguments of :class:`AgentAdam`, the model's optimizer, for the optimizer asked for (Adam only: each
    agent, one alone too, has its own step count and a skip of non-finite losses on the device).
    """
    if optimizer_class not in (th.optim.Adam, AgentAdam):
        raise ValueError(
            f"optimizer_class must be torch.optim.Adam (or AgentAdam): the model is updated by AgentAdam, got "
            f"{optimizer_class.__name__}"
        )
    if optimizer_kwargs.get("amsgrad", False) or optimizer_kwargs.get("maximize", False):
        raise ValueError("optimizer_kwargs: amsgrad and maximize are not supported (the model is updated by AgentAdam)")
    skipped = {*_ADAM_IMPLEMENTATION_KWARGS, "amsgrad", "maximize"}
    return {key: value for key, value in optimizer_kwargs.items() if key not in skipped}


class MPPIPolicy(BasePolicy):
    """
    Policy of NN-MPPI and MaxDiff: the planner is the policy. ``predict`` threads the planner's
    warm start through ``state`` (one nominal action sequence per environment, shape (E, H, m))
    and zeroes it where ``episode_start`` is True, like SB3's recurrent policies do with their
    hidden states; it never touches the warm start the algorithm keeps for training. Where the path entropy
    looks back at visited states (``history`` > 0), ``state`` is the tuple (warm start, visited states (E, W, n),
    their ages (E,)).

    Planning samples action sequences. ``deterministic=False`` draws them from torch's global stream, as in the
    authors' evaluation (seed torch for reproducible actions). ``deterministic=True`` draws them from a generator
    seeded with :data:`DETERMINISTIC_SEED` at every call: the action is then a function of the observation, the warm
    start and the model alone, whatever was called before, while the planner weighs its samples as it always
    does; torch's global stream is left as it was.

    :param observation_space: a Box observation space
    :param action_space: a bounded Box action space
    :param lr_schedule: learning rate schedule of the model optimizer
    :param planner_settings: the planner's settings (the algorithm forwards its own; default: PlannerSettings())
    :param path_entropy: the MaxDiff path entropy, weighted by ``alpha`` (a buffer of the policy's
        :class:`EntropyBonus`, set by the algorithm's schedule, one per agent for batched agents); None for NN-MPPI
    :param net_arch: hidden layers of the dynamics and reward networks
    :param activation_fn: activation of the hidden layers
    :param optimizer_class: model optimizer
    :param optimizer_kwargs: its keyword arguments (default: ``weight_decay=1e-4``); the model is updated by
        :class:`AgentAdam` with them (Adam's arithmetic, a skip of a non-finite loss on the device), one agent too
    :param reward_discount: discount of the TD-like reward target ``r + reward_discount * r_hat(s', a')``. Default:
        0.95 without a terminal value (the paper's); 0 with one (the one-step reward, on the value's scale; see
        :func:`~sb3_maxdiff.common.models.reward_head_discount`)
    :param value_net_arch: hidden layers of the terminal value net, made where the planner scores with a terminal
        value ``"v"`` (default: ``net_arch``)
    :param value_tau: step of the value's (or the critics') target network after each update
    :param terminal_value: what scores the end of a planned path where ``planner_settings.value_discount`` is set:
        ``"v"``, a value ``V(s)`` learned with the model (the default there); ``"q"``, the critic ``Q(s, pi(s))`` of an
        actor trained with SAC's losses (:class:`~sb3_maxdiff.common.actor_critic.ActorCritic`), which is also the
        planner's prior and can act alone (``predict(..., planner=False)``); with ``n_agents``, one per agent
        (:class:`~sb3_maxdiff.common.actor_critic.AgentActorCritics`)
    :param critic_net_arch: hidden layers of that actor and of each of its twin critics (default: SAC's [256, 256])
    :param actor_bc_coef: weight of the actor's pull toward the executed (planned) actions (0: SAC's actor)
    :param n_agents: None: one model for every environment. An int N: N independent agents, environment i
        planned for and trained by agent i only (:class:`BatchedDynamicsRewardModel`, trained with
        :class:`AgentAdam`, which takes the Adam settings of ``optimizer_kwargs``)
    :param cuda_graph: on a CUDA device, capture each planning call as a CUDA graph on first use and replay
        it (:class:`~sb3_maxdiff.common.cuda_graphs.GraphedPlanning`); elsewhere it has no effect
    :param normalize_images: kept for SB3 compatibility (observations are used as they are)
    """

    def __init__(
        self,
        observation_space: spaces.Space,
        action_space: spaces.Box,
        lr_schedule: Schedule,
        planner_settings: PlannerSettings | None = None,
        path_entropy: PathEntropySettings | None = None,
        net_arch: list[int] | None = None,
        activation_fn: type[nn.Module] = nn.ReLU,
        optimizer_class: type[th.optim.Optimizer] = th.optim.Adam,
        optimizer_kwargs: dict[str, Any] | None = None,
        reward_discount: float | None = None,
        value_net_arch: list[int] | None = None,
        value_tau: float = 0.005,
        terminal_value: str | None = None,
        critic_net_arch: list[int] | None = None,
        actor_bc_coef: float = 0.0,
        n_agents: int | None = None,
        cuda_graph: bool = False,
        normalize_images: bool = True,
    ):
        if optimizer_kwargs is None:
            optimizer_kwargs = {"weight_decay": 1e-4}  # the paper's weight decay
        super().__init__(
            observation_space,
            action_space,
            normalize_images=normalize_images,
            optimizer_class=optimizer_class,
            optimizer_kwargs=optimizer_kwargs,
        )
        self.planner_settings = PlannerSettings() if planner_settings is None else planner_settings
        self.path_entropy = path_entropy
        self.net_arch = check_net_arch(net_arch)
        self.activation_fn = activation_fn
        self.value_net_arch = None if value_net_arch is None else check_net_arch(value_net_arch, "value_net_arch")
        self.value_tau = value_tau
        value_discount = self.planner_settings.value_discount
        if terminal_value is not None:
            check_choice("terminal_value", terminal_value, TERMINAL_VALUES)
            if value_discount is None:
                raise ValueError(f"terminal_value={terminal_value!r} needs planner_settings.value_discount (the discount)")
        elif value_discount is not None:
            terminal_value = "v"  # files of earlier versions: a discount meant the model's value net
        self.terminal_value = terminal_value
        self.reward_discount = reward_head_discount(reward_discount, terminal_value)
        self.critic_net_arch = critic_net_arch
        self.actor_bc_coef = actor_bc_coef
        self.n_agents = n_agents
        self.cuda_graph = check_flag("cuda_graph", cuda_graph)
        self._graphs = GraphedPlanning()
        self._graphed_updates = GraphedUpdates()
        obs_dim, action_dim = int(np.prod(observation_space.shape)), int(action_space.shape[0])  # type: ignore[arg-type,index]
        # the weight of the path entropy lives with it, a buffer of this policy (moved and saved with it)
        self.entropy_bonus = None if path_entropy is None else EntropyBonus(path_entropy, n_agents=n_agents)
        model_args: dict[str, Any] = dict(
            net_arch=self.net_arch, activation_fn=activation_fn, reward_discount=self.reward_discount
        )
        if terminal_value == "v":  # the planner scores with a terminal value: the model learns one
            value_net_arch = self.net_arch if self.value_net_arch is None else self.value_net_arch
            model_args.update(value_net_arch=value_net_arch, value_discount=value_discount, value_tau=value_tau)
        # a single agent is a batch of one: one model class, one optimizer and one update for 1 and N agents
        self.model = BatchedDynamicsRewardModel(
            1 if n_agents is None else n_agents, obs_dim, action_dim, agent_axis=n_agents is not None, **model_args
        )
        kwargs = agent_optimizer(self.optimizer_class, self.optimizer_kwargs)
        self.optimizer = AgentAdam(self.model.parameters(), lr=lr_schedule(1), **kwargs)
        # made after the model's optimizer, which takes the model's parameters alone
        self.actor_critic: ActorCritic | AgentActorCritics | None = None
        if terminal_value == "q":
            assert value_discount is not None and isinstance(observation_space, spaces.Box)
            parts = (observation_space, action_space, lr_schedule, critic_net_arch, activation_fn, value_discount)
            if n_agents is None:
                self.actor_critic = ActorCritic(*parts, value_tau, actor_bc_coef)
            else:  # each agent's own, made one after the other
                self.actor_critic = AgentActorCritics(n_agents, *parts, value_tau, actor_bc_coef)
        self.planner = MPPIPlanner(action_dim, self.planner_settings, self.entropy_bonus, self.actor_critic)
        self._warned_nonfinite = False

    def _get_constructor_parameters(self) -> dict[str, Any]:
        data = super()._get_constructor_parameters()
        data.update(
            planner_settings=self.planner_settings,
            path_entropy=self.path_entropy,
            net_arch=self.net_arch,
            activation_fn=self.activation_fn,
            optimizer_class=self.optimizer_class,
            optimizer_kwargs=self.optimizer_kwargs,
            reward_discount=self.reward_discount,
            value_net_arch=self.value_net_arch,
            value_tau=self.value_tau,
            terminal_value=self.terminal_value,
            critic_net_arch=self.critic_net_arch,
            actor_bc_coef=self.actor_bc_coef,
            n_agents=self.n_agents,
            cuda_graph=self.cuda_graph,
            lr_schedule=self._dummy_schedule,  # type: ignore[attr-defined]
        )
        return data

    def use_planner_settings(self, settings: PlannerSettings) -> None:
        """Plan with ``settings`` from now on (e.g. another compute dtype); graphs of the old ones are dropped."""
        self.planner_settings = settings
        self.planner = MPPIPlanner(self.planner.action_dim, settings, self.entropy_bonus, self.actor_critic)
        self._graphs = GraphedPlanning()

    def plan(
        self,
        obs: PyTorchObs,
        nominal: th.Tensor | None = None,
        episode_start: th.Tensor | None = None,
        deterministic: bool = False,
        history: th.Tensor | None = None,
    ) -> PlanResult:
        """
        Plan for a batch of environments.

        :param obs: observations, shape ``(E, *obs_shape)``
        :param nominal: warm start from the previous call, shape (E, H, m); None means episode start
        :param episode_start: bool (E,), True where an episode starts
        :param deterministic: draw the sampling noise from a generator seeded with :data:`DETERMINISTIC_SEED` (the
            same draws at every call; planned eagerly, not as a CUDA graph), not from torch's global stream
        :param history: the visited states (E, W, n) the path entropy puts ahead of each planned path
            (:class:`VisitedStates`); planned eagerly, not as a CUDA graph (W changes while episodes are young)
        :return: normalised actions (E, m), the new warm start, planner statistics (E, 6), all on the
            policy's device (nothing is copied to the host)
        """
        assert isinstance(obs, th.Tensor)
        obs = self._agent_rows(obs)
        if nominal is None:
            nominal = self.planner.initial_nominal(obs.shape[0], obs.device)
        if deterministic:
            generator = th.Generator(device=obs.device).manual_seed(DETERMINISTIC_SEED)
            return self.planner.plan(self.model, obs, nominal, episode_start, generator, history)
        if self.cuda_graph and history is None:
            return self._graphs.plan(self.planner, self.model, obs, nominal, episode_start)
        return self.planner.plan(self.model, obs, nominal, episode_start, history=history)

    def _agent_rows(self, obs: th.Tensor) -> th.Tensor:
        """Observations as float rows (E, n), one per independent agent where the model has agents (else refused)."""
        obs = obs.float().flatten(start_dim=1)
        if self.n_agents is not None and obs.shape[0] != self.n_agents:
            raise ValueError(
                f"observation must hold one row per independent agent ({self.n_agents}), got {obs.shape[0]} rows; "
                "use model.agent(i) to act with one agent on its own"
            )
        return obs

    def update_model(self, batch: Sequence[th.Tensor]) -> ModelUpdate:
        """
        One update of the model on a minibatch (:func:`~sb3_maxdiff.common.training.model_update`); with
        ``cuda_graph``, replayed from a captured graph where that is possible
        (:class:`~sb3_maxdiff.common.cuda_graphs.GraphedUpdates`), with the same arithmetic.
        """
        if self.cuda_graph:
            return self._graphed_updates.run(self.model, self.optimizer, batch, batch[0].shape[-2], 1)[0]
        return model_update(self.model, self.optimizer, batch)

    def fastest_planner_dtype(self, n_rows: int) -> tuple[str, dict[str, float]]:
        """
        The planner dtype that ``planner_dtype="auto"`` takes for ``n_rows`` planned environments: bfloat16 where this
        device has it in hardware and it plans this model faster, else float32; with the timings it was chosen on.
        """
        obs_dim = int(np.prod(self.observation_space.shape))  # type: ignore[arg-type]
        return choose_planner_dtype(self.planner, self.model, obs_dim, n_rows)

    @property
    def history(self) -> int:
        """How many visited states the path entropy puts ahead of each planned path (0: none, and for NN-MPPI)."""
        return 0 if self.path_entropy is None else self.path_entropy.history

    def visited_states(self) -> VisitedStates | None:
        """A fresh record of visited states for the path entropy, None where it does not look back."""
        return VisitedStates(self.history) if self.history > 0 else None

    @property
    def alpha(self) -> th.Tensor | None:
        """The current weight of the path entropy (MaxDiff; shape (N,) for N batched agents), None for NN-MPPI."""
        return None if self.entropy_bonus is None else self.entropy_bonus.alpha

    def __getstate__(self) -> dict:
        # captured graphs are neither copied nor pickled: a copy captures its own on first use
        return {**super().__getstate__(), "_graphs": GraphedPlanning(), "_graphed_updates": GraphedUpdates()}

    def _load_from_state_dict(self, state_dict: dict[str, Any], prefix: str, *args: Any, **kwargs: Any) -> None:
        # earlier versions kept alpha as a buffer of the policy (NN-MPPI's unused)
        alpha = state_dict.pop(prefix + "alpha", None)
        if alpha is not None and self.entropy_bonus is not None:
            state_dict[prefix + "entropy_bonus.alpha"] = alpha
        # batched agents of earlier versions shared one alpha (shape ()); each agent now has its own
        key = prefix + "entropy_bonus.alpha"
        if self.entropy_bonus is not None and key in state_dict and state_dict[key].dim() < self.entropy_bonus.alpha.dim():
            state_dict[key] = state_dict[key].expand_as(self.entropy_bonus.alpha).clone()
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)

    def warn_nonfinite(self, n_nonfinite: float) -> None:
        """Warn once that the model predicted non-finite values (``n_nonfinite`` > 0), read from the planner stats."""
        if n_nonfinite > 0 and not self._warned_nonfinite:
            self._warned_nonfinite = True
            warnings.warn(
                "The learned model predicted non-finite values: the affected samples got no weight and non-finite "
                "planned actions were replaced by 0. Training continues; this warning is shown once."
            )

    def env_actions(self, scaled: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """
        The actions sent to the environment and the normalised actions stored for them, from planned
        normalised actions: clipped to [-1, 1] where the planner clips its samples (``"bounded"`` semantics),
        left raw otherwise (the environment applies or clips them itself).

        :param scaled: normalised actions, shape (E, m)
        :return: actions in the environment's units, and the normalised actions they come from
        """
        if self.planner.settings.clip_samples:
            scaled = np.clip(scaled, -1.0, 1.0)
        return self.unscale_action(scaled), scaled

    def _predict(self, observation: PyTorchObs, deterministic: bool = False) -> th.Tensor:
        return self.plan(observation, deterministic=deterministic).actions

    def forward(self, obs: PyTorchObs, deterministic: bool = False) -> th.Tensor:
        """
        Normalised planned actions for a batch of observations, each planned from a zero warm start
        (``predict`` threads the warm start through ``state`` and returns actions in the env's bounds).

        :param obs: observations, shape (E, *obs_shape)
        :param deterministic: the same sampling noise at every call (see the class docstring)
        :return: actions of shape (E, m)
        """
        return self._predict(obs, deterministic)

    def predict(  # type: ignore[override]  # the state returned is the warm start (an array), never None
        self,
        observation: np.ndarray | dict[str, np.ndarray],
        state: tuple[np.ndarray, ...] | np.ndarray | None = None,
        episode_start: np.ndarray | None = None,
        deterministic: bool = False,
        planner: bool = True,
    ) -> tuple[np.ndarray, np.ndarray | tuple[np.ndarray, ...] | None]:
        """
        Plan actions for observations, threading the warm start through ``state``. On a CPU it flushes denormal
        floats to zero while it plans, as ``learn`` does (``torch.set_flush_denormal`` is put back afterwards).
        ``planner=False``: the actor's actions alone (``terminal_value="q"``), its mean where ``deterministic``, and
        ``state`` returned as it came.

        :param observation: one observation or a batch (one per environment)
        :param state: the warm start returned by the previous call (None at the first call)
        :param episode_start: True for environments whose episode just started
        :param deterministic: plan with the same sampling noise at every call, so that the action depends on the
            observation, state and model alone (see the class docstring); False: noise from torch's global stream
        :param planner: plan (True), or act with the actor alone (False)
        :return: actions in the environment's bounds, and the new state
        """
        self.set_training_mode(False)
        obs_tensor, vectorized_env = self.obs_to_tensor(observation)
        assert isinstance(obs_tensor, th.Tensor)
        if not check_flag("planner", planner):
            return self._actor_actions(obs_tensor, deterministic, vectorized_env), state
        n_envs = obs_tensor.shape[0]
        nominal, visited = self._unpack_state(state, n_envs)
        start_flags = None if episode_start is None else np.asarray(episode_start, dtype=bool).reshape(n_envs)
        starts = None if start_flags is None else th.as_tensor(start_flags, device=self.device)
        history = None if visited is None else visited.update(obs_tensor.float().flatten(start_dim=1), start_flags)
        # a CPU plans as in training, flushing denormal floats: with a trained model they make a plan several times slower
        with flushing_denormals() if self.device.type == "cpu" else contextlib.nullcontext():
            result = self.plan(obs_tensor, nominal, starts, deterministic, history)
        scaled, n_nonfinite = result.actions.cpu().numpy(), result.stat("nonfinite").sum().item()
        self.warn_nonfinite(n_nonfinite)
        actions, _ = self.env_actions(scaled)
        if not vectorized_env:
            actions = actions.squeeze(axis=0)
        if visited is None:
            return actions, result.nominal.cpu().numpy()
        return actions, (result.nominal.cpu().numpy(), *visited.as_arrays())

    def _actor_actions(self, obs: th.Tensor, deterministic: bool, vectorized_env: bool) -> np.ndarray:
        """The actor's actions in the environment's bounds (``predict(..., planner=False)``)."""
        if self.actor_critic is None:
            raise ValueError(
                f"planner=False acts with the actor, which only terminal_value='q' has (got {self.terminal_value!r})"
            )
        with th.no_grad():
            scaled = self.actor_critic.actions(self._agent_rows(obs), deterministic).cpu().numpy()
        actions = self.unscale_action(scaled)
        return actions if vectorized_env else actions.squeeze(axis=0)

    def _unpack_state(self, state: Any, n_envs: int) -> tuple[th.Tensor | None, VisitedStates | None]:
        """The warm start and the visited states a ``predict`` state holds (fresh visited states at the first call)."""
        looks_back = self.history > 0
        if state is None:
            return None, self.visited_states()
        warm_start, visited = (state[0], state[1:]) if looks_back and isinstance(state, tuple) else (state, ())
        expected = (n_envs, self.planner.settings.horizon, self.planner.action_dim)
        nominal = th.as_tensor(np.asarray(warm_start), dtype=th.float32, device=self.device)
        if tuple(nominal.shape) != expected or (looks_back and len(visited) != 2):
            what = "(warm start, visited states, ages)" if looks_back else "the warm start"
            raise ValueError(
                f"state must be {what} returned by predict, with a warm start of shape {expected}; got "
                f"{type(state).__name__} with a warm start of shape {tuple(nominal.shape)}"
            )
        return nominal, (VisitedStates.from_arrays(visited[0], visited[1], self.device) if looks_back else None)


MlpPolicy = MPPIPolicy
