"""
What runs: the paper's experiments (``presets``), RL Zoo's own hyperparameter files (``zoo_files``), a run's plain
spec, folder and files (``specs``), method name to algorithm (``algos``).
"""
