"""
The argparse mains of ``python -m sb3_maxdiff.experiments``: ``run`` (``run_command``), ``single-shot``
(``single_shot_command``), ``export`` and ``tabulate`` (``episode_commands``), and the options they share
(``arguments``); ``report`` and ``transfer`` keep their few-line main beside them.
"""
