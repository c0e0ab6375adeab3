"""Shared fixtures: managers on the host backend and on simulated devices."""

from __future__ import annotations

import numpy as np
import pytest

import fhr


@pytest.fixture
def sim():
    return fhr.SimulatedBackend(2)


@pytest.fixture
def manager(sim):
    m = fhr.ResidencyManager(backend=sim)
    m._sim = sim  # the tests' handle on its devices' streams
    yield m
    m.close(force=True)


CUDA0 = fhr.cuda_location("cuda:0")
CUDA1 = fhr.cuda_location("cuda:1")


def array(n: int = 1024, value: int = 7) -> np.ndarray:
    return np.full(n, value, dtype=np.uint8)
