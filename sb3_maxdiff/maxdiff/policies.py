"""MaxDiff acts with the same policy as NN-MPPI; its planner carries the path-entropy term."""

from sb3_maxdiff.nnmppi.policies import MlpPolicy, MPPIPolicy

__all__ = ["MPPIPolicy", "MlpPolicy"]
