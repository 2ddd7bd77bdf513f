"""The repository's places the tests read."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"
DATA = TESTS / "data"
EXAMPLE = ROOT / "examples" / "rmsnorm.py"
STANDINS = TESTS / "standins"  # the Neuron vendor tools' stand-ins (standins/README.md)
# The extension's fixtures: among them the stored run of the analysis tests (`stored`)
FIXTURES = ROOT / "extension" / "test" / "fixtures"
