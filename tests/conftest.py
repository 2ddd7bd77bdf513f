from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).resolve().parent / "data"
EXAMPLE = ROOT / "examples" / "rmsnorm.py"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return tmp_path
