from sb3_maxdiff.wrappers.path_entropy_reward import PathEntropyReward

__all__ = ["PathEntropyReward"]
