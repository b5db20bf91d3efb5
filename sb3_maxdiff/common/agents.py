"""
Who learns from which environment: one model for every environment of the VecEnv (SB3's usual
multi-environment training), or one independent agent per environment, batched in one model. The
algorithm asks this object wherever the two differ: how steps are counted, how minibatches are drawn,
what is logged, and how one agent is taken out of a batched model.
"""

import abc
import copy
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np
import torch as th
from stable_baselines3.common.vec_env import VecEnv, VecNormalize, unwrap_vec_normalize

from sb3_maxdiff.common.buffers import NextActionReplayBuffer, NextActionReplayBufferSamples
from sb3_maxdiff.common.utils import check_per_agent, is_integer

Record = Callable[..., None]
SelfAgents = TypeVar("SelfAgents", bound="IndependentAgentsMixin")


class AgentLayout(abc.ABC):
    """
    Who learns from which environment, asked by the algorithm wherever the two layouts differ.

    :attr independent: whether each environment has an agent of its own
    :attr n_agents: the agents of the model (one per environment), None for one model shared by all
    """

    independent: bool
    n_agents: int | None

    @property
    @abc.abstractmethod
    def batched(self) -> int | None:
        """Agents batched in one model (the policy's ``n_agents``): None for one plain model."""

    @abc.abstractmethod
    def agent_steps(self, num_timesteps: int) -> int:
        """Environment steps taken by each agent, from SB3's count of every environment's steps."""

    @abc.abstractmethod
    def env_steps(self, agent_steps: int) -> int:
        """SB3's step count (every environment's steps) when each agent has taken ``agent_steps``."""

    @abc.abstractmethod
    def gradient_steps(self, gradient_steps: int) -> int:
        """Updates per agent when ``gradient_steps=-1`` asks for one per environment step collected."""

    @abc.abstractmethod
    def make_buffer(self, algorithm: Any) -> NextActionReplayBuffer | None:
        """The replay buffer of ``algorithm``, or None where SB3's own setup makes it."""

    @abc.abstractmethod
    def sample(
        self, buffer: NextActionReplayBuffer, n_rows: int, env: VecNormalize | None, ahead: bool = False
    ) -> NextActionReplayBufferSamples:
        """
        Minibatch rows for the model: tensors of shape (B, ...), or (N, B, ...) for batched agents; ``ahead``: drawn
        as they will be once the next transitions are stored (see :meth:`NextActionReplayBuffer.sample`).
        """

    @abc.abstractmethod
    def collect_returns(self, infos: list[dict[str, Any]]) -> None:
        """Keep each agent's last episode return (independent agents only)."""

    @abc.abstractmethod
    def skipped_where(self, skipped: np.ndarray) -> str:
        """Which agents skipped updates, for the warning."""

    @abc.abstractmethod
    def record(self, record: Record, model_loss: np.ndarray | None) -> None:
        """Log what is logged per agent: the model loss and the last episode return."""

    @abc.abstractmethod
    def check_agent_index(self, index: int) -> None:
        """Refuse an ``index`` that names no agent of the model (every one, for a shared model)."""


class SharedModel(AgentLayout):
    """One model plans for and learns from every environment (``independent_agents=False``)."""

    independent = False
    n_agents = None

    @property
    def batched(self) -> int | None:
        return None

    def agent_steps(self, num_timesteps: int) -> int:
        return num_timesteps

    def env_steps(self, agent_steps: int) -> int:
        return agent_steps

    def gradient_steps(self, gradient_steps: int) -> int:
        return gradient_steps

    def make_buffer(self, algorithm: Any) -> NextActionReplayBuffer | None:
        return None

    def sample(
        self, buffer: NextActionReplayBuffer, n_rows: int, env: VecNormalize | None, ahead: bool = False
    ) -> NextActionReplayBufferSamples:
        return buffer.sample(n_rows, env=env, ahead=ahead)

    def collect_returns(self, infos: list[dict[str, Any]]) -> None:
        pass

    def skipped_where(self, skipped: np.ndarray) -> str:
        return ""

    def record(self, record: Record, model_loss: np.ndarray | None) -> None:
        pass

    def check_agent_index(self, index: int) -> None:
        raise ValueError("agent(index) needs a model created with independent_agents=True")


class IndependentAgents(AgentLayout):
    """
    One agent per environment (``independent_agents=True``), each with its own model, optimizer state,
    replay column, warm start and schedules, as separate runs would have; more than one agent are batched
    in one model (one rollout and one update for all). Step counts (``learning_starts``, schedules) and
    ``buffer_size`` are per agent.

    :param n_agents: agents, one per environment of the VecEnv
    """

    independent = True
    n_agents: int

    def __init__(self, n_agents: int):
        self.n_agents = n_agents
        self.returns: np.ndarray | None = None

    @property
    def batched(self) -> int | None:
        return self.n_agents if self.n_agents > 1 else None  # one agent alone: a batch of one, as a shared model's

    def agent_steps(self, num_timesteps: int) -> int:
        return num_timesteps // self.n_agents

    def env_steps(self, agent_steps: int) -> int:
        return agent_steps * self.n_agents

    def gradient_steps(self, gradient_steps: int) -> int:
        # SB3 passes the steps collected by all environments; each agent collected one N-th of them
        return max(gradient_steps // self.n_agents, 1)

    def make_buffer(self, algorithm: Any) -> NextActionReplayBuffer | None:
        # SB3's buffers split their size over the environments; independent agents each get all of it
        return algorithm.replay_buffer_class(
            algorithm.buffer_size * self.n_agents,
            algorithm.observation_space,
            algorithm.action_space,
            device=algorithm.device,
            n_envs=algorithm.n_envs,
            **algorithm.replay_buffer_kwargs,
        )

    def sample(
        self, buffer: NextActionReplayBuffer, n_rows: int, env: VecNormalize | None, ahead: bool = False
    ) -> NextActionReplayBufferSamples:
        if self.batched is None:
            return buffer.sample(n_rows, env=env, ahead=ahead)
        return buffer.sample_per_env(n_rows, env=env, ahead=ahead)

    def collect_returns(self, infos: list[dict[str, Any]]) -> None:
        for index, info in enumerate(infos):
            if "episode" in info:
                if self.returns is None:
                    self.returns = np.full(self.n_agents, np.nan)
                self.returns[index] = info["episode"]["r"]

    def skipped_where(self, skipped: np.ndarray) -> str:
        return f" (agents {np.flatnonzero(skipped).tolist()})"

    def record(self, record: Record, model_loss: np.ndarray | None) -> None:
        if model_loss is not None:
            for index, value in enumerate(np.atleast_1d(model_loss)):
                record(f"train/model_loss_agent_{index}", float(value))
        if self.returns is not None:
            for index, value in enumerate(self.returns):
                record(f"rollout/ep_rew_agent_{index}", float(value))

    def check_agent_index(self, index: int) -> None:
        if not (is_integer(index) and 0 <= index < self.n_agents):
            raise ValueError(f"index must be an integer in [0, {self.n_agents - 1}], got {index!r}")


def make_agents(n_agents: int | None) -> AgentLayout:
    """``n_agents`` independent agents, one per environment, or (None) one model shared by all environments."""
    return SharedModel() if n_agents is None else IndependentAgents(n_agents)


def check_agent_env(independent_agents: bool, n_agents: int | None, n_envs: int, vec_normalize: object) -> None:
    """
    Independent agents need one environment each (``n_envs == n_agents`` once the model has agents), and no
    statistics shared between environments (no VecNormalize).
    """
    if independent_agents and vec_normalize is not None:
        raise ValueError(
            "independent_agents=True cannot train on a VecNormalize env: its running statistics are shared by "
            "all environments, so the agents would not be independent; normalise each environment on its own"
        )
    if independent_agents and n_agents is not None and n_envs != n_agents:
        raise ValueError(
            f"env must have {n_agents} environments, one per independent agent of this model, got {n_envs}; "
            "use model.agent(i) to run one agent on its own"
        )


def agent_parameters(source: Any, index: int, names: list[str], policy_keys: set[str]) -> dict[str, dict]:
    """
    What ``save`` would write of agent ``index`` of the policy ``source`` as a policy of its own: SB3's parameter
    dict (``names``: the objects the agent's algorithm saves, e.g. "policy", "policy.optimizer"), for
    ``set_parameters``. The agent's row of the model's flat tensors and of their Adam state, its path-entropy weight,
    and its actor and critics with their optimizers' state where it has them; of the policy's state, the
    ``policy_keys`` the agent's policy has (an NN-MPPI agent of a MaxDiff batch has no path entropy).
    """
    rows = slice(None) if source.n_agents is None else slice(index, index + 1)  # one agent: a batch of one already
    own_critic = f"actor_critic.agents.{index}."
    policy = {}
    for key, value in source.state_dict().items():
        if key.startswith("actor_critic.agents."):  # each agent's actor and critics
            if not key.startswith(own_critic):
                continue
            key = "actor_critic." + key[len(own_critic) :]
        elif key in ("model.flat", "model.flat_buffers"):
            value = value[rows]
        elif key == "entropy_bonus.alpha" and value.dim() > 0:
            value = value[index]
        if key in policy_keys:
            policy[key] = value.detach().clone()
    optimizer = source.optimizer.state_dict()
    moments = {
        param: {key: value[rows].clone() for key, value in state.items()} for param, state in optimizer["state"].items()
    }
    params: dict[str, dict] = {"policy": policy, "policy.optimizer": {**optimizer, "state": moments}}
    actor_critic = source.actor_critic
    if actor_critic is not None and source.n_agents is not None:
        actor_critic = actor_critic.agent(index)
    for name in names:
        if name.startswith("policy.actor_critic."):
            params[name] = copy.deepcopy(getattr(actor_critic, name.rsplit(".", 1)[1]).state_dict())
    return params


def extract_agent(algorithm: Any, index: int, algo_class: type, skipped: tuple[str, ...], own_settings: dict[str, Any]) -> Any:
    """
    Agent ``index`` of an algorithm with independent agents as an algorithm of its own for one environment, made the
    way SB3's ``load`` makes a model: a bare instance of ``algo_class``, the algorithm's attributes (deep copies) with
    the agent's ``own_settings`` on top, but ``skipped``, put in its ``__dict__``, then the model set up and the
    agent's saved parameters (:func:`agent_parameters`) set as ``load`` sets a file's. Its step count is the agent's;
    its settings of how to run (CUDA graphs, overlapped updates) are the batch's; no random stream is touched.
    """
    data = copy.deepcopy({key: value for key, value in algorithm.__dict__.items() if key not in skipped})
    # on the model's device: "auto" would put an agent of a CPU model on a GPU where one is present
    single = algo_class(algorithm.policy_class, env=None, device=algorithm.device, _init_setup_model=False)
    single.__dict__.update({key: value for key, value in {**data, **own_settings}.items() if key not in skipped})
    single.independent_agents, single.n_envs, single.seed = False, 1, None  # no reseeding of the global RNGs
    single.cuda_graph, single.overlap_updates = algorithm.cuda_graph, algorithm.overlap_updates
    single.num_timesteps = algorithm.agent_timesteps
    with th.random.fork_rng(devices=[]):  # the throw-away initial weights leave the torch stream as it was
        single._setup_model()
    single.seed = algorithm.seed
    names = single._get_torch_save_params()[0]
    params = agent_parameters(algorithm.policy, index, names, set(single.policy.state_dict()))
    single.set_parameters(params, exact_match=True, device=algorithm.device)
    return single


class IndependentAgentsMixin:
    """
    What NN-MPPI and MaxDiff add to an SB3 algorithm for ``independent_agents=True``: the settings given per agent
    (a list, one entry per environment), each agent's step count, the check of a new environment, and :meth:`agent`,
    which takes one agent out as a model of its own. Mixed in before ``OffPolicyAlgorithm``.
    """

    independent_agents: bool
    n_agents: int | None
    agents: AgentLayout | None
    num_timesteps: int
    n_envs: int
    _vec_normalize_env: VecNormalize | None

    def _per_agent_settings(self) -> dict[str, list | tuple]:
        """The settings given per agent (lists, one entry per independent agent), by name."""
        return {}

    def _check_per_agent_settings(self) -> None:
        for name, values in self._per_agent_settings().items():
            check_per_agent(name, values, self.independent_agents, self.n_envs)

    def _agent_settings(self, index: int) -> dict[str, Any]:
        """Agent ``index``'s own value of each per-agent setting, for :meth:`agent`."""
        return {name: values[index] for name, values in self._per_agent_settings().items()}

    @property
    def agent_timesteps(self) -> int:
        """Environment steps taken by each agent (``num_timesteps`` unless the agents are independent)."""
        return self.num_timesteps if self.agents is None else self.agents.agent_steps(self.num_timesteps)

    @property
    def _agents(self) -> AgentLayout:
        """The agent layout of a set-up model."""
        assert self.agents is not None, "the model is not set up (_setup_model)"
        return self.agents

    def set_env(self, env: Any, force_reset: bool = True) -> None:
        vec_normalize = (unwrap_vec_normalize(env) if isinstance(env, VecEnv) else None) or self._vec_normalize_env
        n_envs = env.num_envs if isinstance(env, VecEnv) else 1
        check_agent_env(self.independent_agents, self.n_agents, n_envs, vec_normalize)
        super().set_env(env, force_reset)  # type: ignore[misc]  # OffPolicyAlgorithm's, after this class

    def agent(self: SelfAgents, index: int) -> SelfAgents:
        """
        Agent ``index`` in [0, n_agents) of an ``independent_agents=True`` model as a model of its own for one
        env: its settings, step count, weights and optimizer state, not its replay data (for ``save``, the Hub).
        """
        return self._extract_agent(index)

    def _extract_agent(self, index: int, algo_class: type | None = None, drop: tuple[str, ...] = ()) -> Any:
        """Agent ``index`` as an algorithm of ``algo_class`` (default: this one's), see :func:`extract_agent`."""
        self._agents.check_agent_index(index)
        skipped = (*self._excluded_save_params(), "_last_obs", "_last_original_obs", "_last_episode_starts")  # type: ignore[attr-defined]
        return extract_agent(self, index, algo_class or type(self), (*skipped, *drop), self._agent_settings(index))
