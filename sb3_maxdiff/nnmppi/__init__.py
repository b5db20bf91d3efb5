from sb3_maxdiff.nnmppi.nnmppi import NNMPPI
from sb3_maxdiff.nnmppi.policies import MlpPolicy, MPPIPolicy

__all__ = ["NNMPPI", "MPPIPolicy", "MlpPolicy"]
