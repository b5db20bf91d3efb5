"""
Reading the results: finished runs read back (``results``), the tests and mean +/- std (``stats``), REPORT.md and
figures (``report``), the per-episode CSV export (``episodes``), the ``tabulate`` tables from those files
(``tables``).
"""
