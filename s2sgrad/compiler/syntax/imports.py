"""How generated code names a callable of another module, and the imports that makes.

Generated modules always import ``math``, ``numpy as np`` and s2sgrad's
runtime as ``rt``.  A callable from any other importable module (a rule
template's ``special.digamma``, the user's ``scipy.special.gammaln``) is read
through that module, imported under a name the function's ``NameAllocator``
hands out (``names.module('scipy.special')`` -> ``special``, or ``special_1``
when the function already uses ``special``).  ``import_lines(modules)``
writes the import statements, sorted, so the module text is deterministic.
"""
import builtins
import importlib
import math
import types

import numpy as np

from .nodes import attribute, name_node

#: the modules every generated module imports, and the names it reads them by
FIXED = (("np", np), ("np.linalg", np.linalg), ("math", math))

#: modules searched for a callable that does not say where it lives (numpy ufuncs of
#: other libraries have no ``__module__``); rule tables add theirs with ``search_module``
_SEARCHED = []


def search_module(path):
    """Look for ``__module__``-less callables (ufuncs) in module ``path`` as well."""
    if path not in _SEARCHED:
        _SEARCHED.append(path)


def _public_parents(path):
    """``'scipy.special._basic'`` -> ``['scipy.special', 'scipy.special._basic']``: the
    public prefix first, then the module itself."""
    parts = path.split(".")
    public = []
    for part in parts:
        if part.startswith("_"):
            break
        public.append(part)
    out = [".".join(public)] if public else []
    return out + ([path] if path not in out else [])


def _module(path):
    try:
        return importlib.import_module(path)
    except Exception:  # noqa: BLE001 - not importable: not a place to name it from
        return None


def fixed_path(obj):
    """('np', 'linalg', 'inv') style path of a numpy/math/builtin callable, or None."""
    name = getattr(obj, "__name__", None)
    if not isinstance(name, str):
        return None
    for base, module in FIXED:
        if getattr(module, name, None) is obj:
            return tuple(base.split(".")) + (name,)
    if getattr(builtins, name, None) is obj:
        return (name,)
    return None


def module_and_name(obj):
    """(module path, attribute) such that ``import module; module.attribute is obj``, or
    None.  Modules are returned as (path, None)."""
    if isinstance(obj, types.ModuleType):
        return obj.__name__, None
    name = getattr(obj, "__name__", None)
    if not isinstance(name, str) or not name.isidentifier():
        return None
    own = getattr(obj, "__module__", None)
    candidates = (_public_parents(own) if isinstance(own, str) else []) + _SEARCHED
    for path in candidates:
        if path in ("__main__", "builtins"):
            continue
        module = _module(path)
        if module is not None and getattr(module, name, None) is obj:
            return path, name
    return None


def reference(obj, names):
    """The expression that reads ``obj`` (a module or callable) in generated code, or None
    when it cannot be imported by name.  Registers the import with ``names``."""
    path = fixed_path(obj)
    if path is not None:
        return attribute(*path) if len(path) > 1 else name_node(path[0])
    if obj is np:
        return name_node("np")
    if obj is math:
        return name_node("math")
    found = module_and_name(obj)
    if found is None:
        return None
    module, attr = found
    if module == "numpy":
        alias = "np"
    elif module == "s2sgrad.runtime":
        alias = "rt"
    else:
        alias = names.module(module)
    return attribute(alias, attr) if attr is not None else name_node(alias)


def import_lines(modules):
    """The import statements of ``{module path: name}``, sorted by path."""
    lines = []
    for path in sorted(modules):
        alias = modules[path]
        parent, _, last = path.rpartition(".")
        if alias == last and parent:
            lines.append(f"from {parent} import {last}")
        elif alias == path:
            lines.append(f"import {path}")
        else:
            lines.append(f"import {path} as {alias}")
    return lines
