import importlib
import pathlib
import sys

import pytest
import torch as th
from helpers import cpu_platform


def pytest_report_header(config):
    # the seeded digests' module, beside its tests (imported by name, as pytest imports it there)
    sys.path.insert(0, str(pathlib.Path(__file__).parent / "algorithms"))
    PINNED = importlib.import_module("test_seeded_results").PINNED
    platform = cpu_platform()
    return f"seeded digests: {'pinned for ' + platform if platform in PINNED else 'none pinned for ' + platform + ', skipped'}"


@pytest.fixture(autouse=True)
def single_thread():
    """Tiny networks run fastest on one thread (and parallel test workers do not fight for cores)."""
    threads = th.get_num_threads()
    th.set_num_threads(1)
    yield
    th.set_num_threads(threads)


def pytest_collection_modifyitems(config, items):
    """
    Tests marked ``slow`` (20 s or more on a 2-core machine) run first, the others in their usual order: pytest-xdist
    hands the first tests out to its workers in turn, so the long ones start at once on every worker and no worker is
    left finishing a long test alone at the end.
    """
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)
