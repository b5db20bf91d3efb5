from sb3_maxdiff.maxdiff.maxdiff import MaxDiffMPPI
from sb3_maxdiff.maxdiff.policies import MlpPolicy

__all__ = ["MaxDiffMPPI", "MlpPolicy"]
