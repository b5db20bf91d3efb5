import pytest
import torch as th


@pytest.fixture(autouse=True)
def single_thread():
    """Tiny networks run fastest on one thread (and parallel test workers do not fight for cores)."""
    threads = th.get_num_threads()
    th.set_num_threads(1)
    yield
    th.set_num_threads(threads)
