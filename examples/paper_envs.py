"""
The paper's environments: build each registered id, check its spaces and that the observation
starts with the body position, and run a short random rollout (a few seconds)::

    python examples/paper_envs.py
"""

import gymnasium as gym
import numpy as np
from gymnasium.spaces.utils import flatdim

import sb3_maxdiff  # noqa: F401  (registers the ids)
from sb3_maxdiff.envs import ANT, HALF_CHEETAH, SWIMMER_HEAVY, SWIMMER_LIGHT, point_mass_id

for env_id in [point_mass_id("0.01"), SWIMMER_HEAVY, SWIMMER_LIGHT, ANT, HALF_CHEETAH]:
    env = gym.make(env_id)
    obs, info = env.reset(seed=0)
    total = 0.0
    for _ in range(200):
        obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
        total += float(reward)
        if terminated or truncated:
            break
    x = info.get("x_position", obs[0])
    print(
        f"{env_id:40s} obs {flatdim(env.observation_space):2d} act {flatdim(env.action_space)} "
        f"| 200 random steps: return {total:9.2f}, x {x:+.3f} (obs[0] = {obs[0]:+.3f})"
    )
    if hasattr(env.unwrapped, "model"):
        masses = np.round(env.unwrapped.model.body_mass[1:], 2)
        print(f"{'':40s} body masses {masses.tolist()}")
