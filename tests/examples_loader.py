"""Loads the example scripts as modules for tests."""
import importlib.util
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent


def load_example(name):
    """examples/<name>.py imported as the module <name>_example."""
    spec = importlib.util.spec_from_file_location(f"{name}_example",
                                                  ROOT / "examples" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load_functional_autodiff():
    return load_example("functional_autodiff")


def load_bench_workloads():
    """benchmarks/bench_workloads.py imported as a module (its recurrence is in README)."""
    path = ROOT / "benchmarks"
    spec = importlib.util.spec_from_file_location("bench_workloads", path / "bench_workloads.py")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(path))   # it imports its neighbour harness.py
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(path))
    return module
