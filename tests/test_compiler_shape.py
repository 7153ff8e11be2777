"""The compiler stays a house a contributor can read: no function in s2sgrad/compiler/
over 80 lines, and every module, public function and class says what it is for (a
pass's module docstring says what it takes and gives)."""
import ast
import pathlib

import pytest

COMPILER = pathlib.Path(__file__).resolve().parent.parent / "s2sgrad" / "compiler"
MODULES = sorted(COMPILER.rglob("*.py"))
#: the longest function (its whole text, decorators aside) the compiler may hold
LONGEST = 80


def _functions(tree):
    return [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.name)
def test_no_function_is_longer_than_80_lines(path):
    tree = ast.parse(path.read_text())
    long = [f"{path.name}:{f.lineno} {f.name} ({f.end_lineno - f.lineno + 1} lines)"
            for f in _functions(tree) if f.end_lineno - f.lineno + 1 > LONGEST]
    assert not long, "split these functions: " + "; ".join(long)


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.name)
def test_modules_and_public_definitions_have_docstrings(path):
    tree = ast.parse(path.read_text())
    assert ast.get_docstring(tree), f"{path.name} has no module docstring"
    missing = [n.name for n in tree.body
               if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and not n.name.startswith("_")
               and not ast.get_docstring(n)]
    assert not missing, f"{path.name}: no docstring for {', '.join(missing)}"


def test_the_length_check_can_fail():
    body = "\n".join(f"    x{i} = {i}" for i in range(LONGEST))
    tree = ast.parse(f"def long():\n{body}\n")
    (f,) = _functions(tree)
    assert f.end_lineno - f.lineno + 1 > LONGEST


def _own_bases(package):
    """{class: its bases defined in s2sgrad} for every class of ``s2sgrad.compiler.<package>``."""
    import importlib
    import inspect
    import pkgutil
    root = importlib.import_module(f"s2sgrad.compiler.{package}")
    found = {}
    for info in pkgutil.iter_modules(root.__path__):
        module = importlib.import_module(f"{root.__name__}.{info.name}")
        for name, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ == module.__name__:
                found[f"{module.__name__}.{name}"] = [
                    b.__qualname__ for b in cls.__bases__
                    if (b.__module__ or "").split(".")[0] == "s2sgrad"]
    return found


@pytest.mark.parametrize("package", ["front", "analysis"])
def test_lowering_is_composed_not_mixed_in(package):
    """The lowering's pieces hold their collaborators (front/lower.py composes them): no
    class of front/ or analysis/ inherits from a class of s2sgrad (a mixin reads state
    another file declares)."""
    classes = _own_bases(package)
    assert any(name.endswith("lower.Lowerer") for name in classes) or package != "front"
    inherited = {name: bases for name, bases in classes.items() if bases}
    assert not inherited, f"classes built from s2sgrad classes: {inherited}"
