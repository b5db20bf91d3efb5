"""
MaxDiff RL with an MPPI planner: NN-MPPI whose sample scores carry the path-entropy term.

*Maximum diffusion reinforcement learning*, Berrueta, Pinosky and Murphey,
Nature Machine Intelligence 2024, https://doi.org/10.1038/s42256-024-00829-3
"""

from typing import Any, TypeVar

from stable_baselines3.common.preprocessing import get_flattened_obs_dim
from stable_baselines3.common.type_aliases import MaybeCallback

from sb3_maxdiff.common.entropy import PathEntropy, make_path_entropy
from sb3_maxdiff.common.schedules import AlphaSchedule, alpha_value, as_alpha_schedule
from sb3_maxdiff.nnmppi.nnmppi import NNMPPI

SelfMaxDiffMPPI = TypeVar("SelfMaxDiffMPPI", bound="MaxDiffMPPI")


class MaxDiffMPPI(NNMPPI):
    """
    MaxDiff RL, model-based. Same as :class:`NNMPPI` except that each sampled
    path ``k`` is scored ``R_k + alpha * S_k`` with ``S_k = 0.5 * log det(W cov(X_k) W)`` over the
    predicted states ``X_k`` restricted to ``explr_dims``, and that, as in the published runs, the
    control term is off by default.

    :param policy: "MlpPolicy", a policy class, or directly the environment (instance or id)
    :param env: the environment (instance or registered id)
    :param alpha: weight of the path entropy: a float >= 0, a :class:`~sb3_maxdiff.StepSchedule`
        over environment steps (e.g. ``StepSchedule([0.5, 5.0], [1000])`` as in the point-mass runs),
        an SB3 schedule of the remaining progress, or ``{"values": [...], "boundaries": [...]}`` (a
        StepSchedule written in YAML)
    :param explr_dims: observation indices of the exploration dims (None: all)
    :param explr_weights: weight of each exploration dim (None: ones)
    :param window: False: one covariance over the horizon; True: mean over windows of
        ``max(H // 4, 2 * d)`` steps with stride a third of that; int: that window length
    :param entropy_method: "logdet" (the paper), "top_eigs" (sum of the logs of the ``entropy_top_m``
        leading eigenvalues) or "log_trace"
    :param entropy_top_m: number of eigenvalues for "top_eigs" (default: all exploration dims)
    :param control_cost: add the NN-MPPI control term to the scores (off in the published MaxDiff runs)
    :param kwargs: every other parameter of :class:`NNMPPI` (horizon, n_samples, temperature, ...)
    """

    def __init__(
        self,
        policy: Any = "MlpPolicy",
        env: Any = None,
        alpha: AlphaSchedule = 5.0,
        explr_dims: list[int] | None = None,
        explr_weights: list[float] | None = None,
        window: bool | int = False,
        entropy_method: str = "logdet",
        entropy_top_m: int | None = None,
        control_cost: bool = False,
        _init_setup_model: bool = True,
        **kwargs: Any,
    ):
        alpha = as_alpha_schedule(alpha)
        alpha_value(alpha, 0, 1.0)  # raises on a negative alpha
        self.alpha = alpha
        self.explr_dims = None if explr_dims is None else list(explr_dims)
        self.explr_weights = None if explr_weights is None else list(explr_weights)
        self.window = window
        self.entropy_method = entropy_method
        self.entropy_top_m = entropy_top_m
        super().__init__(policy, env, control_cost=control_cost, _init_setup_model=False, **kwargs)
        if _init_setup_model:
            self._setup_model()

    def _make_path_entropy(self) -> PathEntropy:
        return make_path_entropy(
            get_flattened_obs_dim(self.observation_space),
            self.horizon,
            dims=self.explr_dims,
            weights=self.explr_weights,
            window=self.window,
            method=self.entropy_method,
            top_m=self.entropy_top_m,
        )

    def _setup_model(self) -> None:
        super()._setup_model()
        self.policy.entropy_bonus.alpha.fill_(alpha_value(self.alpha, self.agent_timesteps, self._current_progress_remaining))

    def _update_planner_parameters(self) -> None:
        # a StepSchedule counts each agent's own steps
        value = alpha_value(self.alpha, self.agent_timesteps, self._current_progress_remaining)
        self.policy.entropy_bonus.alpha.fill_(value)
        self.logger.record("train/alpha", value)

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
