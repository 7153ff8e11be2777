"""Loads the example scripts as modules for tests."""
import importlib.util
import pathlib

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
