"""FHElium 0.10's real values with fhr's manager, through fhr.compat.fhelium.
Needs FHR_FHELIUM_PATH (the FHElium package with its native operators
built) and a GPU; skipped with the reason otherwise."""

from __future__ import annotations

import os
import sys

import pytest

path = os.environ.get("FHR_FHELIUM_PATH")
if not path:
    pytest.skip("FHR_FHELIUM_PATH is not set: FHElium integration skipped", allow_module_level=True)
sys.path.insert(0, path)
torch = pytest.importorskip("torch", reason="PyTorch is not installed")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device: FHElium integration skipped", allow_module_level=True)
fhelium = pytest.importorskip("fhelium", reason="FHElium does not import from FHR_FHELIUM_PATH")

from fhr.compat import fhelium as residency  # noqa: E402


def engine():
    return fhelium.CkksEngine(
        fhelium.CkksConfig.parse(fhelium.Preset.slots8192_scale40_levels7_int64), device="cuda:0"
    )


def test_fhelium_values_are_managed_by_fhr():
    e = engine()
    secret_key = e.create_secret_key()
    message = torch.linspace(-0.5, 0.5, e.num_slots, dtype=torch.float64)
    ciphertext = e.encrypt_message(message, e.create_public_key(secret_key))
    key = e.create_rotation_key(1, secret_key).cpu()
    cuda0 = residency.cuda_location(e.device)
    m = residency.ResidencyManager(backend="cuda")
    ct = m.adopt(ciphertext, replica_mode=residency.ReplicaMode.EXCLUSIVE)
    rk = m.adopt(key, replica_mode=residency.ReplicaMode.REPLICABLE)
    pointer = ciphertext.data.data_ptr()
    del ciphertext, key
    m.move(ct, residency.PINNED_HOST)
    plan = residency.ResidencyPlan(
        "rotate",
        enter=(residency.EnsureResident(rk, cuda0), residency.MoveResident(ct, cuda0)),
        exit=(residency.DropResident(rk, cuda0),),
    )
    assert m.explain(plan).feasible
    stream = torch.cuda.Stream()
    with m.scope(plan):
        with m.acquire([ct, rk], at=cuda0, consumer_stream=stream) as values, torch.cuda.stream(stream):
            assert type(values[ct]).__name__ == "Ciphertext" and values[ct].data.data_ptr() != pointer
            rotated = e.rotate_with_key(values[ct], values[rk])
        stream.synchronize()
    result = e.decrypt_message(rotated, secret_key, is_real=True)
    assert torch.allclose(result.cpu(), torch.roll(message, 1), atol=1e-3)
    m.discard(ct)
    m.discard(rk)
    m.close()
