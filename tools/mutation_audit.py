"""
Mutation audit: does the test suite catch a wrong implementation?

Each mutant below is one small, plausible mistake in the library (a factor, a sign, an index, a forgotten reset) or
in the statistics and readers that turn finished runs into published tables. For each, the script copies the
committed tree (``git archive HEAD``) into a temporary folder once, writes the mutant into the copy, runs the test
files that check what is computed (those of the mutant's part first) with ``-x`` and notes the first test that
fails. A mutant that no test catches ("SURVIVED") is a test to write. The pinned seeded digests
(``tests/algorithms/test_seeded_results.py``) are left out on purpose: they catch any change at all, not a wrong one.

    python tools/mutation_audit.py                      # every mutant, about 1 minute each on 2 cores
    python tools/mutation_audit.py --only cov_biased    # some of them
    python tools/mutation_audit.py --list

Exit status 1 when a mutant survives (or no longer applies to the code), 0 otherwise.
"""

import argparse
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from io import BytesIO
from pathlib import Path
from typing import Any, NamedTuple

ROOT = Path(__file__).resolve().parents[1]

ENTROPY = "sb3_maxdiff/common/entropy.py"
PLAN_MEMORY = "sb3_maxdiff/common/plan_memory.py"
MPPI = "sb3_maxdiff/common/mppi.py"
MODELS = "sb3_maxdiff/common/models.py"
BUFFERS = "sb3_maxdiff/common/buffers.py"
AUTO_ALPHA = "sb3_maxdiff/common/auto_alpha.py"
SCHEDULES = "sb3_maxdiff/common/schedules.py"
OPTIMIZERS = "sb3_maxdiff/common/optimizers.py"
ERGODICITY = "sb3_maxdiff/common/ergodicity.py"
NNMPPI = "sb3_maxdiff/nnmppi/nnmppi.py"
PLANNING_ALGORITHM = "sb3_maxdiff/common/planning_algorithm.py"
MODEL_TRAINING = "sb3_maxdiff/common/training.py"
FUSED_ROLLOUT = "sb3_maxdiff/common/fused_rollout.py"
WRAPPER = "sb3_maxdiff/wrappers/path_entropy_reward.py"
AGENTS = "sb3_maxdiff/common/agents.py"
SINGLE_SHOT = "sb3_maxdiff/experiments/run/single_shot.py"
EXECUTION = "sb3_maxdiff/experiments/run/execution.py"
TRAINING = "sb3_maxdiff/experiments/run/training.py"
POINT_MASS = "sb3_maxdiff/envs/point_mass.py"
MUJOCO = "sb3_maxdiff/envs/mujoco.py"
OPTIONS = "sb3_maxdiff/experiments/run/options.py"
STATS = "sb3_maxdiff/experiments/analyse/stats.py"
RESULTS = "sb3_maxdiff/experiments/analyse/results.py"
EPISODES = "sb3_maxdiff/experiments/analyse/episodes.py"
TABLES = "sb3_maxdiff/experiments/analyse/tables.py"
SYNTHESIS = "sb3_maxdiff/synthesis/controller.py"
SYSTEMS = "sb3_maxdiff/synthesis/systems.py"
VEC_ENV = "sb3_maxdiff/common/vec_env.py"
TRAINING_STATS = "sb3_maxdiff/common/training_stats.py"
MAXDIFF = "sb3_maxdiff/maxdiff/maxdiff.py"
BATCHING = "sb3_maxdiff/experiments/run/batching.py"
CHECKPOINTS = "sb3_maxdiff/experiments/run/checkpoints.py"
CALLBACKS = "sb3_maxdiff/common/callbacks.py"
PRECISION = "sb3_maxdiff/common/precision.py"
SINGLE_SHOT_COMMAND = "sb3_maxdiff/experiments/commands/single_shot_command.py"
ACTOR_CRITIC = "sb3_maxdiff/common/actor_critic.py"


class Mutant(NamedTuple):
    name: str
    path: str
    old: str  # must occur exactly once in the file
    new: str


MUTANTS = [
    # the path entropy
    Mutant("cov_biased", ENTROPY, "/ (paths.shape[-2] - 1)", "/ paths.shape[-2]"),
    Mutant("logdet_no_half", ENTROPY, "return 0.5 * th.linalg.slogdet(", "return th.linalg.slogdet("),
    Mutant("weights_squared", ENTROPY, "paths = paths * weights\n", "paths = paths * weights**2\n"),
    Mutant("stride_half", ENTROPY, "stride = max(window // 3, 1)", "stride = max(window // 2, 1)"),
    Mutant("top_eigs_smallest", ENTROPY, "eigvalsh(covariance)[..., dim - top_m :]", "eigvalsh(covariance)[..., :top_m]"),
    Mutant("bonus_half_alpha", ENTROPY, "th.where(alpha > 0, alpha * entropy,", "th.where(alpha > 0, 0.5 * alpha * entropy,"),
    Mutant("alpha_agents_reversed", ENTROPY, "else self.alpha[:, None]", "else self.alpha.flip(0)[:, None]"),
    Mutant("window_default_size", ENTROPY, "max(horizon // 4, 2 * n_dims)", "max(horizon // 4, n_dims)"),
    Mutant("history_after_path", ENTROPY, "paths = th.cat([past, paths], dim=-2)", "paths = th.cat([paths, past], dim=-2)"),
    Mutant("visited_min_age", PLAN_MEMORY, "self.size - int(self.ages.max()) :]", "self.size - int(self.ages.min()) :]"),
    Mutant("visited_no_episode_reset", PLAN_MEMORY, "            if starts.any():\n", "            if False:\n"),
    Mutant(
        "random_jitter_symmetric",
        ENTROPY,
        'covariances + JITTER_SCALE * noise, "logdet"',
        'covariances + JITTER_SCALE * (noise + noise.transpose(-1, -2)) / 2, "logdet"',
    ),
    # the planner
    Mutant("smoothing_gain", MPPI, "0.5 ** (lag + 1)", "0.5 ** lag"),
    Mutant(
        "smoothing_anticausal", MPPI, "self._smoothing(obs.device, obs.dtype) @", "self._smoothing(obs.device, obs.dtype).T @"
    ),
    Mutant(
        "warm_start_repeat_last",
        MPPI,
        "th.cat([nominal[:, 1:], th.zeros_like(nominal[:, :1])], dim=1)",
        "th.cat([nominal[:, 1:], nominal[:, -1:]], dim=1)",
    ),
    Mutant("warm_start_no_reset", MPPI, "return shifted * (~reset).to(shifted.dtype)[:, None, None]", "return shifted"),
    Mutant("weights_times_temperature", MPPI, "/ temperature) + 1e-5", "* temperature) + 1e-5"),
    Mutant("weights_no_floor", MPPI, "/ temperature) + 1e-5", "/ temperature)"),
    Mutant("control_std_not_squared", MPPI, "/ settings.noise_std**2", "/ settings.noise_std"),
    Mutant(
        "control_mask_inverted",
        MPPI,
        "control = settings.control_cost_mask(returns.device, scores.dtype) * control",
        "control = (1 - settings.control_cost_mask(returns.device, scores.dtype)) * control",
    ),
    Mutant(
        "nominal_from_samples",
        MPPI,
        'th.einsum("ek,ekhm->ehm", weights, noise)',
        'th.einsum("ek,ekhm->ehm", weights, samples)',
    ),
    Mutant("clip_keeps_noise", MPPI, "            noise = samples - nominal[:, None]\n", ""),
    Mutant("nonfinite_scores_kept", MPPI, "scores = th.where(finite, scores, th.full_like(scores, INVALID_SCORE))", "pass"),
    Mutant("nonfinite_nominal_kept", MPPI, "nominal = th.where(nominal_finite, nominal, th.zeros_like(nominal))", "pass"),
    Mutant("ess_wrong", MPPI, "1.0 / (weights**2).sum(dim=-1),", "1.0 / weights.sum(dim=-1),"),
    Mutant("spread_unbiased", MPPI, "/ count.clamp(min=1.0)).sqrt()", "/ (count - 1.0).clamp(min=1.0)).sqrt()"),
    # the model, its loss and its updates
    Mutant("rollout_no_clamp", FUSED_ROLLOUT, ".clamp_(-state_bound, state_bound)\n", "\n"),
    Mutant("rollout_absolute", FUSED_ROLLOUT, "th.add(visited[step], delta,", "th.add(visited[step] * 0, delta,"),
    # the fused rollout: every step reads the state it reached, each network its own half of the first layer's output
    Mutant(
        "rollout_frozen_state",
        FUSED_ROLLOUT,
        "action_part[step].addmm_(visited[step].to(dtype)",
        "action_part[step].addmm_(visited[0].to(dtype)",
    ),
    Mutant(
        "batched_rollout_frozen_state",
        FUSED_ROLLOUT,
        "th.baddbmm(first_bias, inputs[step].to(dtype)",
        "th.baddbmm(first_bias, inputs[0].to(dtype)",
    ),
    Mutant("rollout_reward_reads_dynamics", FUSED_ROLLOUT, "hidden[..., dynamics_width:]", "hidden[..., :dynamics_width]"),
    Mutant("rollout_delta_padding", FUSED_ROLLOUT, "dynamics_outputs)[..., :obs_dim]", "dynamics_outputs)[..., -obs_dim:]"),
    Mutant("model_forward_absolute", MODELS, "return obs + delta, run_mlp(", "return delta, run_mlp("),
    Mutant(
        "loss_target_current_action",
        MODELS,
        "self.predict_reward(next_obs, next_actions)",
        "self.predict_reward(next_obs, actions)",
    ),
    Mutant(
        "loss_mask_ignored",
        MODELS,
        "self.reward_discount * bootstrap_masks.squeeze(-1) * next_reward",
        "self.reward_discount * next_reward",
    ),
    Mutant(
        "loss_reward_full",
        MODELS,
        "ModelLosses(0.5 * reward_loss + dynamics_loss, dynamics_loss",
        "ModelLosses(reward_loss + dynamics_loss, dynamics_loss",
    ),
    Mutant("nll_no_log_std", MODELS, "+ log_std + HALF_LOG_2PI", "+ HALF_LOG_2PI"),
    Mutant(
        "minibatch_same_rows",
        MODEL_TRAINING,
        "tensor[..., step * batch_size : (step + 1) * batch_size, :]",
        "tensor[..., :batch_size, :]",
    ),
    Mutant(
        "nonfinite_loss_applied",
        MODEL_TRAINING,
        "finite = th.isfinite(losses.total)",
        "finite = th.ones_like(losses.total, dtype=th.bool)",
    ),
    Mutant("adam_no_bias_correction", OPTIMIZERS, "step_size = lr / (1.0 - beta1**step)", "step_size = lr"),
    Mutant("adam_inactive_counts", OPTIMIZERS, 'state["step"] += active.to(param.dtype)', 'state["step"] += 1.0'),
    # the replay buffer and the training loop
    Mutant("buffer_done_ignored", BUFFERS, "= 1.0 - np.asarray(done, dtype=np.float32)", "= 1.0"),
    Mutant("buffer_interrupt_noop", BUFFERS, "            self.bootstrap_masks[self._newest] = 0.0\n", "            pass\n"),
    Mutant(
        "next_action_same_row",
        BUFFERS,
        "self.next_actions[self._newest] =",
        "self.next_actions[self.pos % self.buffer_size] =",
    ),
    Mutant(
        "buffer_newest_sampled",
        BUFFERS,
        "return max((self.buffer_size if full else pos) - 1, 0)",
        "return max(self.buffer_size if full else pos, 0)",
    ),
    Mutant(
        "replay_cells_transposed",
        BUFFERS,
        "self.flat = (rows * n_envs + envs).reshape(-1)",
        "self.flat = (rows + envs * n_envs).reshape(-1)",
    ),
    Mutant(
        "agents_columns_shifted",
        BUFFERS,
        "env_inds=np.arange(self.n_envs)[:, None]",
        "env_inds=np.roll(np.arange(self.n_envs), 1)[:, None]",
    ),
    # independent agents: one agent taken out of a batch
    Mutant("agent_copy_first_alpha", AGENTS, "            value = value[index]", "            value = value[0]"),
    Mutant("agent_copy_first_row", AGENTS, "else slice(index, index + 1)", "else slice(0, 1)"),
    Mutant(
        "train_starts_ignored",
        PLANNING_ALGORITHM,
        "self._last_episode_starts = np.asarray(dones, dtype=bool).copy()",
        "self._last_episode_starts = np.zeros(len(dones), dtype=bool)",
    ),
    Mutant("learn_no_interrupt", PLANNING_ALGORITHM, "            self.replay_buffer.interrupt()\n", ""),
    # alpha: schedules and the automatic rule
    Mutant("schedule_strict", SCHEDULES, "num_timesteps >= boundary", "num_timesteps > boundary"),
    Mutant(
        "schedule_progress_reversed", SCHEDULES, "float(alpha(progress_remaining))", "float(alpha(1.0 - progress_remaining))"
    ),
    Mutant(
        "auto_alpha_rate_swapped",
        AUTO_ALPHA,
        "(1.0 - rate) * th.log(th.where(started, alpha, target)) + rate * th.log(target)",
        "rate * th.log(th.where(started, alpha, target)) + (1.0 - rate) * th.log(target)",
    ),
    Mutant("auto_alpha_no_ratio", AUTO_ALPHA, "target = ratio * return_spread", "target = return_spread"),
    # the model-free wrapper
    Mutant(
        "wrapper_partial_window", WRAPPER, "if len(self._states) == self.window else 0.0", "if len(self._states) >= 2 else 0.0"
    ),
    Mutant("wrapper_window_not_cleared", WRAPPER, "        self._states.clear()\n", ""),
    # the diagnostics REPRODUCTION.md reports
    Mutant("coverage_per_dim", ERGODICITY, "float(bins ** path.shape[1])", "float(bins * path.shape[1])"),
    Mutant("autocorrelation_lag_0", ERGODICITY, "2.0 * rho[1:last].sum()", "2.0 * rho[:last].sum()"),
    Mutant("msd_linear_lags", ERGODICITY, "np.polyfit(np.log(lags), np.log(msd), 1)", "np.polyfit(lags, np.log(msd), 1)"),
    # the single-shot window returns REPRODUCTION.md reports
    Mutant(
        "window_return_not_reset",
        SINGLE_SHOT,
        "self._accumulated, self._steps_in_window = 0.0, 0",
        "self._steps_in_window = 0",
    ),
    # the paper's environments
    Mutant("point_mass_beta_on_y", POINT_MASS, "self.beta * state[2], state[3]", "state[2], self.beta * state[3]"),
    Mutant("point_mass_rk4_weights", POINT_MASS, "k1 + 2 * k2 + 2 * k3 + k4", "k1 + 2 * k2 + 2 * k3 + 2 * k4"),
    Mutant("point_mass_reward_distance", POINT_MASS, "reward = -float(x**2 + y**2)", "reward = -float(x**2 + y**2) ** 0.5"),
    Mutant("light_tail_heavy", MUJOCO, "LIGHT_TAIL_DENSITY = 100.0", "LIGHT_TAIL_DENSITY = 1000.0"),
    # overlapped updates: the step's next action stored before the updates that sample it
    Mutant("overlap_next_action_unset", NNMPPI, "self.replay_buffer.set_next_action(buffer_actions)", "pass"),
    # the runner: the batched evaluation and the time limit
    Mutant("batch_eval_no_episode_start", EXECUTION, "totals[row], starts[row] = 0.0, True", "totals[row] = 0.0"),
    Mutant(
        "batch_eval_actions_reversed",
        EXECUTION,
        "stepper.step([envs[row] for row in rows], actions[rows])",
        "stepper.step([envs[row] for row in rows], actions[rows][::-1])",
    ),
    Mutant(
        "deadline_ignores_episode_length",
        OPTIONS,
        "return self.left() < 1.5 * self.longest_gap + self.reserve()",
        "return self.left() < self.reserve()",
    ),
    Mutant(
        "evaluation_clock_no_projection",
        OPTIONS,
        "if self.most_steps is None or measured < self.PROJECTION_SECONDS:",
        "if True:",
    ),
    Mutant("batch_eval_clock_unwatched", EXECUTION, "                clock.step()\n", ""),
    Mutant("late_pace_from_the_first_step", TRAINING,
           "if not self.clock and self.agent_steps - self.first_step >= self.timed_after:", "if not self.clock:"),
    # the controller over known dynamics and the synthesis examples' systems
    Mutant("controller_cost_not_negated", SYNTHESIS, "lambda state, action: -cost(state, action)",
           "lambda state, action: cost(state, action)"),
    Mutant("controller_action_unclipped", SYNTHESIS, "th.addcmul(middle, action.clamp(-1.0, 1.0), half_range)",
           "th.addcmul(middle, action, half_range)"),
    Mutant("controller_full_range", SYNTHESIS, "0.5 * (high - low))", "(high - low))"),
    Mutant("controller_samples_unmapped", SYNTHESIS, "            action = th.addcmul(middle, action, half_range)\n",
           "            pass\n"),
    Mutant("controller_no_warm_start", SYNTHESIS, "self.nominal = self.last.nominal", "self.nominal = self.nominal"),
    Mutant("controller_reset_keeps_visited", SYNTHESIS, "            self.visited.reset()\n", "            pass\n"),
    Mutant("controller_history_one_more", SYNTHESIS, "VisitedStates(self.history) if", "VisitedStates(self.history + 1) if"),
    Mutant("double_integrator_semi_implicit", SYSTEMS, "position + self.dt * velocity, velocity + self.dt * action",
           "position + self.dt * (velocity + self.dt * action), velocity + self.dt * action"),
    Mutant("differential_drive_cos_sin_swapped", SYSTEMS,
           "x + self.dt * speed * th.cos(heading), y + self.dt * speed * th.sin(heading)",
           "x + self.dt * speed * th.sin(heading), y + self.dt * speed * th.cos(heading)"),
    Mutant("bimodal_width_not_doubled", SYSTEMS, "/ (2.0 * width**2)", "/ width**2"),
    Mutant("reward_of_potential_not_negated", SYSTEMS, "lambda state, action: -potential(state)",
           "lambda state, action: potential(state)"),
    Mutant("quadratic_potential_not_squared", SYSTEMS, "scale * ((state[..., :2] - center_tensor.to(state)) ** 2).sum(dim=-1)",
           "scale * (state[..., :2] - center_tensor.to(state)).abs().sum(dim=-1)"),
    # the environments stepped in threads
    Mutant("threaded_truncation_of_a_termination", VEC_ENV, 'info["TimeLimit.truncated"] = truncated and not terminated',
           'info["TimeLimit.truncated"] = truncated'),
    Mutant("threaded_last_env_unstepped", VEC_ENV, "np.linspace(0, len(envs), n_threads + 1)",
           "np.linspace(0, len(envs) - 1, n_threads + 1)"),
    Mutant("threaded_terminal_obs_after_reset", VEC_ENV,
           'info["terminal_observation"] = obs\n                obs, self.reset_infos[env_idx] = self.envs[env_idx].reset()',
           'obs, self.reset_infos[env_idx] = self.envs[env_idx].reset()\n                info["terminal_observation"] = obs'),
    # what the training logs
    Mutant("logged_losses_over_attempts", TRAINING_STATS, 'sums["losses"] / np.maximum(applied, 1.0)',
           'sums["losses"] / max(attempted, 1)'),
    Mutant("logged_planner_stats_summed", TRAINING_STATS, 'sums["planner"] / self.planner_calls', 'sums["planner"]'),
    Mutant("updates_counted_by_the_luckiest_agent", TRAINING_STATS, "round(float(np.min(applied)))",
           "round(float(np.max(applied)))"),
    Mutant("skipped_update_losses_logged", TRAINING_STATS,
           "th.where(finite, losses, th.zeros((), device=losses.device))", "losses"),
    # MaxDiff's alpha as the planner reads it
    Mutant("per_agent_alpha_written_once", MAXDIFF, "elif values != self._alpha_shown:",
           "elif self._alpha_shown is None:"),
    Mutant("auto_alpha_overwritten_by_fixed", MAXDIFF, "th.where(auto.reshape(buffer.shape), buffer, fixed)", "fixed"),
    Mutant("auto_alpha_start_ignored", MAXDIFF, "alpha.start_value if isinstance(alpha, AutoAlpha) else value",
           "1.0 if isinstance(alpha, AutoAlpha) else value"),
    Mutant("loaded_alpha_not_rewritten", MAXDIFF, "        self._alpha_shown = None  # the loaded",
           "        pass  # the loaded"),
    Mutant("maxdiff_control_cost_on_by_default", MAXDIFF, "control_cost: bool | list[bool] = False,",
           "control_cost: bool | list[bool] = True,"),
    # the runner's batches and checkpoints
    Mutant("nnmppi_agent_with_alpha", BATCHING, "return parameters[name].default if name in parameters else 0.0",
           "return parameters[name].default if name in parameters else 1.0"),
    Mutant("mixed_batch_drops_nnmppi", BATCHING,
           "parts[first] = [spec for spec in group if spec in nnmppi or spec in parts[first]]",
           "parts[first] = parts[first]"),
    Mutant("mixed_batch_first_alpha_for_all", BATCHING,
           "kwargs[name] = values if any(value != values[0] for value in values) else values[0]",
           "kwargs[name] = values[0]"),
    Mutant("monitor_cut_one_short", CHECKPOINTS, "lines[: 2 + episodes]", "lines[: 1 + episodes]"),
    Mutant("resume_without_numpy_stream", CHECKPOINTS, 'np.random.set_state(state["numpy"])', "pass"),
    Mutant("checkpoint_without_warm_start", CHECKPOINTS,
           '"nominal": None if nominal is None else nominal.detach().cpu().clone(),', '"nominal": None,'),
    Mutant("resume_notes_of_later_tries_kept", CHECKPOINTS,
           'kept = [resume for resume in read_resumes(run_dir) if resume["agent_timesteps"] < agent_timesteps]',
           "kept = read_resumes(run_dir)"),
    # the paper's MuJoCo bodies
    Mutant("ant_tilt_of_the_wrong_axes", MUJOCO, "1.0 - 2.0 * (x * x + y * y)", "1.0 - 2.0 * (x * x + z * z)"),
    Mutant("ant_upside_down_clock_not_restarted", MUJOCO, "if self.torso_tilt > self.max_tilt else 0.0",
           "if self.torso_tilt > self.max_tilt else self._upside_down_for"),
    Mutant("ant_reset_keeps_the_clock", MUJOCO, "        self._upside_down_for = 0.0\n        return super().reset_model()",
           "        return super().reset_model()"),
    Mutant("ant_ends_at_the_first_upside_down_step", MUJOCO, "self._upside_down_for > self.upside_down_time + 1e-9",
           "self._upside_down_for > 0.0"),
    Mutant("mujoco_actions_unclipped", MUJOCO,
           "np.clip(np.asarray(action, dtype=np.float64), self.action_space.low, self.action_space.high)",
           "np.asarray(action, dtype=np.float64)"),
    Mutant("swimmer_without_x_y", MUJOCO,
           'kwargs.setdefault("exclude_current_positions_from_observation", False)\n        self.light_tail',
           'kwargs.setdefault("exclude_current_positions_from_observation", True)\n        self.light_tail'),
    # the ergodicity diagnostics of training paths
    Mutant("ergodicity_path_ends_at_the_reset", CALLBACKS, "obs if final is None else final", "obs"),
    Mutant("ergodicity_coverage_of_the_last_episode", CALLBACKS, "self.visited |= cells", "self.visited = set(cells)"),
    Mutant("ergodicity_shortest_episode_skipped", CALLBACKS, "if len(path) < self.min_length:",
           "if len(path) <= self.min_length:"),
    Mutant("ergodicity_next_path_without_its_start", CALLBACKS,
           "self._paths[index] = [obs.astype(np.float64)[self.dims]]", "self._paths[index] = []"),
    # planner_dtype="auto"
    Mutant("bfloat16_native_on_every_cpu", PRECISION,
           'return device.type == "cpu" and bool(cpu_flags() & BFLOAT16_CPU_FLAGS)', 'return device.type == "cpu"'),
    Mutant("bfloat16_kept_when_barely_faster", PRECISION,
           'faster = seconds["bfloat16"] < SPEED_MARGIN * seconds["float32"]',
           'faster = seconds["bfloat16"] < seconds["float32"]'),
    # the single-shot windows
    Mutant("window_steps_of_every_agent", SINGLE_SHOT, "steps = self.num_timesteps // self.training_env.num_envs",
           "steps = self.num_timesteps"),
    Mutant("resumed_window_file_keeps_later_rows", SINGLE_SHOT, "file.readlines()[: 1 + len(self.window_returns)]",
           "file.readlines()"),
    Mutant("window_one_step_longer", SINGLE_SHOT, "if self._steps_in_window == self.window:",
           "if self._steps_in_window == self.window + 1:"),
    # the standalone single-shot command's checkpoints
    Mutant("resumed_command_trains_the_whole_budget", SINGLE_SHOT_COMMAND, "learn_single_shot(model, args.steps - done,",
           "learn_single_shot(model, args.steps,"),
    Mutant("finished_command_keeps_its_checkpoint", SINGLE_SHOT_COMMAND,
           "    remove_checkpoints(directory)\n    return model, result", "    return model, result"),
    Mutant("resumed_command_kwargs_not_compared", SINGLE_SHOT_COMMAND,
           ', "kwargs": kwargs}))', "}))"),
    Mutant("resumed_command_steps_not_compared", SINGLE_SHOT_COMMAND, '"seed": args.seed, "steps": args.steps, "window"',
           '"seed": args.seed, "window"'),
    Mutant("resumed_command_csv_not_compared", SINGLE_SHOT_COMMAND,
           '"csv": args.csv and os.path.abspath(args.csv), "kwargs"', '"kwargs"'),
    # the statistics and the readers that turn finished runs into the published tables and p-values
    Mutant("welch_pooled_dof", STATS, "dof = (var_x + var_y) ** 2 / (var_x**2 / (x.size - 1) + var_y**2 / (y.size - 1))",
           "dof = x.size + y.size - 2"),
    Mutant("welch_one_sided", STATS, "pvalue = 2.0 * special.stdtr(", "pvalue = 1.0 * special.stdtr("),
    Mutant("mann_whitney_one_sided", STATS, 'stats.mannwhitneyu(x, y, alternative="two-sided")',
           'stats.mannwhitneyu(x, y, alternative="less")'),
    Mutant("summary_population_std", STATS, "array.std(ddof=STD_DDOF)", "array.std()"),
    Mutant("curve_mean_counts_missing_seeds", STATS, "np.nansum(values, axis=0) / count",
           "np.nansum(values, axis=0) / len(values)"),
    Mutant("comparison_keeps_nan", STATS, "[value for value in side if not math.isnan(value)] for side in (a, b)",
           "[value for value in side] for side in (a, b)"),
    Mutant("pvalue_threshold", STATS, '"<0.001" if pvalue < 1e-3', '"<0.001" if pvalue < 1e-2'),
    Mutant("value_at_excludes_the_step", RESULTS, 'np.searchsorted(steps, at, side="right") - 1',
           'np.searchsorted(steps, at, side="left") - 1'),
    Mutant("running_max_counts_short_episodes", RESULTS, "np.where(eligible, values, -np.inf)", "values.copy()"),
    Mutant("window_mean_one_more", RESULTS, "max(0, finished - window)", "max(0, finished - window - 1)"),
    Mutant("episode_ends_ignore_resumes", RESULTS, 'resume["agent_timesteps"] - (ends[kept - 1] if kept else 0)', "0"),
    Mutant("a_file_given_twice_counts_twice", TABLES, "    if repeated:\n", "    if False:\n"),
    Mutant("a_seed_in_two_files_is_mixed", TABLES, "if source.setdefault(key, path) != path:",
           "if source.setdefault(key, path) != path and False:"),
    Mutant("evaluation_median_not_mean", TABLES, "returns[EVALUATION_QUANTITIES[kind]] = float(np.mean(kind_returns))",
           "returns[EVALUATION_QUANTITIES[kind]] = float(np.median(kind_returns))"),
    Mutant("return_so_far_is_last_window", TABLES, '"return so far": np.cumsum(window_returns)',
           '"return so far": window_returns'),
    Mutant("merge_keeps_stale_rows", EPISODES, "if _run_key(row) not in exported]", "]"),
    Mutant("merge_unsorted", EPISODES, "return sorted(merged, key=_run_key)", "return merged"),
    Mutant("export_full_length_strict", EPISODES, "int(length >= episode_length(spec))", "int(length > episode_length(spec))"),
    Mutant("read_full_length_flags_ignored", TABLES, "if full_length is None and all(",
           "if full_length is None and False and all("),
    Mutant("export_transfer_as_own_eval", EPISODES, 'kind = name if env_id == spec.env_id else f"{name} {env_id}"',
           'kind = name'),
    Mutant("kept_model_never_rewritten", EPISODES, "if os.path.exists(path) and _same_saved_model(path, fresh):",
           "if os.path.exists(path):"),
    # the reward head with a terminal value, and the actor-critic's finite rows
    Mutant("reward_head_published_with_a_value", MODELS, "PUBLISHED_REWARD_DISCOUNT if terminal_value is None else 0.0",
           "PUBLISHED_REWARD_DISCOUNT"),
    Mutant("older_file_takes_the_new_default", PLANNING_ALGORITHM,
           'kwargs["reward_discount"] = PUBLISHED_REWARD_DISCOUNT', "pass"),
    Mutant("no_finite_row_gives_nan", ACTOR_CRITIC, "valid.sum().clamp(min=1)", "valid.sum()"),
    Mutant("critic_at_the_raw_action", ACTOR_CRITIC, "actions = actions.clamp(-1.0, 1.0)\n", "\n"),
]  # fmt: skip

# the tests that check what is computed, fastest first (the library's about 6 minutes on 2 cores when no mutant is
# caught), then the environments (stepped in threads too), the overlapped updates, the single-shot windows and the
# runner's batches and time limit
TESTS = [
    "tests/common/test_known_answers.py",
    "tests/common/test_entropy.py",
    "tests/common/test_mppi.py",
    "tests/common/test_model.py",
    "tests/common/test_buffers.py",
    "tests/algorithms/test_terminal_value.py",
    "tests/algorithms/test_actor_critic.py",
    "tests/algorithms/test_training_stats.py",
    "tests/algorithms/test_per_agent_settings.py",
    "tests/algorithms/test_auto_alpha.py",
    "tests/algorithms/test_precision.py",
    "tests/algorithms/test_wrappers.py",
    "tests/algorithms/test_history.py",
    "tests/common/test_ergodicity.py",
    "tests/algorithms/test_independent_agents.py",
    "tests/algorithms/test_synthesis.py",
    "tests/algorithms/test_run.py",
    "tests/algorithms/test_learning.py",
    "tests/envs/test_envs.py",
    "tests/envs/test_mujoco_envs.py",
    "tests/algorithms/test_action_semantics.py",
    "tests/common/test_vec_env.py",
    "tests/algorithms/test_overlap_updates.py",
    "tests/experiments/test_single_shot.py",
    "tests/experiments/test_batches_and_time_limit.py",
]
# the tests of the statistics and readers; they run first for a mutant of these files (and last for the others)
ANALYSIS_FILES = (STATS, RESULTS, EPISODES, TABLES)
ANALYSIS_TESTS = [
    "tests/experiments/test_experiment_stats.py",
    "tests/experiments/test_reproduction_tables.py",
]


def tests_for(mutant: Mutant) -> list[str]:
    """The default test files for ``mutant``: those of its part first, so that a caught mutant costs little."""
    return ANALYSIS_TESTS + TESTS if mutant.path in ANALYSIS_FILES else TESTS + ANALYSIS_TESTS


def committed_tree(destination: Path) -> None:
    """Unpack the tree of HEAD (tracked files only) into ``destination``."""
    archive = subprocess.run(["git", "archive", "HEAD"], cwd=ROOT, check=True, capture_output=True).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        safe: dict[str, Any] = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}  # Python >= 3.10.12, 3.11.4
        tar.extractall(destination, **safe)


def audit(mutant: Mutant, tree: Path, tests: list[str], timeout: float) -> tuple[str, str]:
    """Write ``mutant`` into ``tree``, run ``tests`` and put the file back; returns (outcome, the first failure)."""
    path = tree / mutant.path
    original = path.read_text()
    if original.count(mutant.old) != 1:
        return "NOT APPLIED", f"the text to change occurs {original.count(mutant.old)} times in {mutant.path}"
    path.write_text(original.replace(mutant.old, mutant.new))
    try:
        command = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *tests]
        environment = {**os.environ, "PYTHONPATH": str(tree), "OMP_NUM_THREADS": "1"}
        try:
            printed = subprocess.run(command, cwd=tree, env=environment, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return "TIMEOUT", f"no result in {timeout:.0f} s"
        failures = [line for line in printed.stdout.splitlines() if line.startswith(("FAILED", "ERROR"))]
        if printed.returncode == 0:
            return "SURVIVED", ""
        return "caught", failures[0].split(" - ")[0] if failures else f"pytest exit status {printed.returncode}"
    finally:
        path.write_text(original)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", nargs="+", default=None, help="these mutants (by name) rather than all")
    parser.add_argument(
        "--tests",
        nargs="+",
        default=None,
        help="test files to run on each mutant (default: all the files of what is computed, those of the mutant's part first)",
    )
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds for one mutant's tests")
    parser.add_argument("--list", action="store_true", help="print the mutants and stop")
    args = parser.parse_args(argv)
    names = [mutant.name for mutant in MUTANTS]
    unknown = sorted(set(args.only or []) - set(names))
    if unknown:
        parser.error(f"--only: unknown mutants {unknown}; choose from {names}")
    chosen = [mutant for mutant in MUTANTS if args.only is None or mutant.name in args.only]
    if args.list:
        for mutant in chosen:
            print(f"{mutant.name}: {mutant.path}: {mutant.old.strip()!r} -> {mutant.new.strip()!r}")
        return 0
    outcomes = []
    with tempfile.TemporaryDirectory() as folder:
        tree = Path(folder)
        committed_tree(tree)
        for mutant in chosen:
            start = time.perf_counter()
            outcome, detail = audit(mutant, tree, args.tests or tests_for(mutant), args.timeout)
            outcomes.append(outcome)
            print(f"{mutant.name}: {outcome} ({time.perf_counter() - start:.0f} s) {detail}", flush=True)
    caught = outcomes.count("caught")
    print(f"{caught} of {len(chosen)} mutants caught")
    return 0 if caught == len(chosen) else 1


if __name__ == "__main__":
    sys.exit(main())
