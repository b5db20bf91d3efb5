"""Ten-line MaxDiff RL: train on the point mass (beta = 0.01), save, reload and evaluate."""

import gymnasium as gym
from stable_baselines3.common.evaluation import evaluate_policy

import sb3_maxdiff  # noqa: F401  (registers the sb3_maxdiff/... environment ids)
from sb3_maxdiff import MaxDiffMPPI, StepSchedule

env_id = "sb3_maxdiff/PointMass-beta0_01-v0"
model = MaxDiffMPPI(
    env_id,
    horizon=30,
    alpha=StepSchedule([0.5, 5.0], [1000]),  # the paper's point-mass alpha schedule
    explr_weights=[1.0, 1.0, 0.01, 0.01],
    learning_rate=5e-4,
    policy_kwargs=dict(net_arch=[128, 128]),
    verbose=1,
)
model.learn(total_timesteps=3_000, progress_bar=True)
model.save("maxdiff_point_mass")

model = MaxDiffMPPI.load("maxdiff_point_mass")
mean_return, std_return = evaluate_policy(model, gym.make(env_id), n_eval_episodes=2)
print(f"episode return {mean_return:.1f} +/- {std_return:.1f}")
