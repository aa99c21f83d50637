from __future__ import annotations

import shutil
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
H200 = FIXTURES / "ncu-h200"
REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def h200() -> Path:
    """Real Nsight Compute exports captured on an H200 (see fixtures/ncu-h200/CAPTURE.md)."""
    return H200


def pytest_collection_modifyitems(config, items):
    """GPU tests run only where an NVIDIA GPU, nvcc and ncu are present (the device, not CI)."""
    have_gpu = all(shutil.which(t) for t in ("nvidia-smi", "nvcc", "ncu"))
    skip = pytest.mark.skip(reason="needs an NVIDIA GPU with nvcc and ncu")
    for item in items:
        if "gpu" in item.keywords and not have_gpu:
            item.add_marker(skip)
