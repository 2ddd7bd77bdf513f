"""A real program for the loader tests (`oplens run`): it loads modeling_gate.py by path, one way
per `--how`, never under the name `modeling_gate`, and calls its `gated` once a step (with `twice`,
once a step through each of two copies). It prints whether a trace or profile hook is set between
the steps (before the first, after the last)."""

import argparse
import importlib.machinery
import importlib.util
import runpy
import sys
import types
from pathlib import Path
from typing import Any, Callable

import torch

HERE = Path(__file__).resolve().parent
FILE = HERE / "modeling_gate.py"


def by_spec(name: str, path: Path) -> types.ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def by_loader(how: str, name: str, path: Path) -> Any:
    loader = importlib.machinery.SourceFileLoader(name, str(path))
    if how == "load_module":
        return loader.load_module()
    if how == "exec_module":
        spec = importlib.util.spec_from_loader(name, loader)
        assert spec is not None
        module = importlib.util.module_from_spec(spec)
        loader.exec_module(module)
        return module
    namespace: dict[str, Any] = {"__name__": name}
    exec(loader.get_code(name), namespace)  # how == "get_code"
    return types.SimpleNamespace(**namespace)


def hooks() -> str:
    monitoring = getattr(sys, "monitoring", None)
    tools = [monitoring.get_tool(i) for i in range(6)] if monitoring else []
    return f"hooks {sys.gettrace()} {sys.getprofile()} {[t for t in tools if t]}"


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--how", required=True,
                   choices=["spec", "runpy", "load_module", "exec_module", "get_code", "twice"])
    p.add_argument("--alias", type=Path, default=FILE, help="with twice: the second copy's path (a symlink)")
    p.add_argument("--steps", type=int, default=10)
    args = p.parse_args()
    fns: list[Callable[[torch.Tensor], torch.Tensor]]
    if args.how == "spec":
        fns = [by_spec("transformers_modules.abc123.modeling_gate_remote", FILE).gated]
    elif args.how == "runpy":
        fns = [runpy.run_path(str(FILE))["gated"]]
    elif args.how == "twice":
        fns = [by_spec("plugins.gate_a", FILE).gated, by_spec("plugins.gate_b", args.alias).gated]
    else:
        fns = [by_loader(args.how, f"hand_made_{args.how}", FILE).gated]
    torch.manual_seed(0)
    x = torch.randn(16, 64)
    print(hooks())
    total = 0.0
    for step in range(args.steps):
        for fn in fns:
            total += float(fn(x).sum())
        print(f"step {step} {total:.4f}")
    print(hooks())
    print("finished")


if __name__ == "__main__":
    main()
