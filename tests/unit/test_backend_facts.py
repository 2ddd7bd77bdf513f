"""Backend facts are declared once, on the backend (`backends/facts.py`), and read everywhere else:
no code outside `backends/` compares a backend's name, device label or device kind with a literal."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from oplens.backends import registry
from oplens.backends.facts import BackendFacts

SERVER = Path(__file__).resolve().parents[2] / "server" / "oplens"
BACKEND_WORDS = {word for spec in registry.SPECS.values() for word in (spec.name, spec.device_label)}
BACKEND_WORDS |= {"privateuse1", "PrivateUse1", "PRIVATEUSE1"}


def literal_comparisons(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, word) for each `x == "cuda"`, `x != "CPU"`, `x in ("cpu", ...)` and the like."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare):
            continue
        for side in [node.left, *node.comparators]:
            values = side.elts if isinstance(side, (ast.Tuple, ast.List, ast.Set)) else [side]
            for v in values:
                if isinstance(v, ast.Constant) and v.value in BACKEND_WORDS:
                    found.append((node.lineno, str(v.value)))
    return found


def test_no_backend_name_or_kind_is_compared_outside_backends() -> None:
    offenders = []
    for path in sorted(SERVER.rglob("*.py")):
        if SERVER / "backends" in path.parents:
            continue
        for line, word in literal_comparisons(ast.parse(path.read_text(encoding="utf-8"))):
            offenders.append(f"{path.relative_to(SERVER.parent)}:{line} compares with {word!r}")
    assert not offenders, "read the backend's facts (backends/facts.py) instead:\n" + "\n".join(offenders)


def test_the_check_finds_a_comparison() -> None:
    assert literal_comparisons(ast.parse('if backend.name == "neuron" or label != "CPU": pass')) == [(1, "neuron"), (1, "CPU")]
    assert literal_comparisons(ast.parse('ok = kind in ("cuda", "x")')) == [(1, "cuda")]


@pytest.mark.parametrize("name", list(registry.SPECS))
def test_a_spec_and_its_worker_class_share_one_facts_record(name: str) -> None:
    """The worker-side class reads the very record its parent-side spec declares."""
    import importlib

    spec = registry.get(name)
    module, _, cls = spec.device_class.partition(":")
    worker_class = getattr(importlib.import_module(module), cls)
    assert isinstance(spec.facts, BackendFacts) and worker_class.facts is spec.facts
    assert (spec.name, spec.device_label) == (spec.facts.name, spec.facts.device_label) == (name, spec.facts.device_label)


def test_a_stored_run_of_an_unknown_backend_reads_as_a_device() -> None:
    facts = registry.facts_of("tpu")
    assert facts.on_device and facts.device_time == "linked" and facts.device_label == "TPU"
    assert registry.facts_of("cpu") is registry.get("cpu").facts
