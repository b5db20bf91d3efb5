"""
Running it: the runs of a sweep in local processes or on Ray (``runner``), a group trained and each run evaluated
(``execution``), how to run (``options``), batches of independent agents (``batching``), building or resuming and
learning (``training``), checkpoints (``checkpoints``), each run's environment (``environments``), single-shot
learning (``single_shot``), transfer evaluation (``transfer``).
"""
