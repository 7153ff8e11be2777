"""Loads the example scripts as modules for tests."""
import importlib.util
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent


def load_functional_autodiff():
    spec = importlib.util.spec_from_file_location("functional_autodiff_example",
                                                  ROOT / "examples" / "functional_autodiff.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
