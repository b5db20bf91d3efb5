"""MaxDiff trajectory synthesis with known dynamics: the MPPI planner as a controller, and example systems."""

from sb3_maxdiff.synthesis.controller import KnownModel, MPPIController
from sb3_maxdiff.synthesis.systems import (
    DifferentialDrive,
    DoubleIntegrator,
    SingleIntegrator,
    bimodal_gaussian_potential,
    quadratic_potential,
    reward_of,
)

__all__ = [
    "DifferentialDrive",
    "DoubleIntegrator",
    "KnownModel",
    "MPPIController",
    "SingleIntegrator",
    "bimodal_gaussian_potential",
    "quadratic_potential",
    "reward_of",
]
