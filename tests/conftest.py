"""Shared test setup."""

import pytest


@pytest.fixture(autouse=True)
def _host_machine_is_a_preset(monkeypatch):
    # The host tools take the TLB geometry from a machine file or a probe run of the host
    # (tlblab.host.geometry); tests must not probe (timing is not tested), so they read zen3's.
    monkeypatch.setenv("TLBLAB_HOST_MACHINE", "zen3")
