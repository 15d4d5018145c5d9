"""Shared test setup."""

import pytest


@pytest.fixture(autouse=True)
def _host_machine_is_a_preset(monkeypatch):
    # The host tools take the TLB geometry from a machine file or a probe run of the host
    # (tlblab.host.geometry); tests must not probe (timing is not tested), so they read zen3's.
    monkeypatch.setenv("TLBLAB_HOST_MACHINE", "zen3")


@pytest.fixture(scope="session")
def _user_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("xdg-cache")


@pytest.fixture(autouse=True)
def _outputs_stay_in_the_test_run(monkeypatch, _user_cache):
    # A command run outside the checkout writes its default outputs under the user's cache
    # (tlblab.paths): a test's commands write under this run's temporary directory instead.
    monkeypatch.setenv("XDG_CACHE_HOME", str(_user_cache))


@pytest.fixture(scope="module")
def cluster():
    """One real Dask LocalCluster of 2 worker processes for a test module (starting one costs
    seconds): its scheduler address (tests/test_sweep.py, tests/test_intervals.py)."""
    import logging

    from distributed import LocalCluster

    c = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                     silence_logs=logging.ERROR)
    yield c.scheduler_address
    c.close()
