"""Derivative rules: the registry and the tables that fill it (numpy, math, operators, ops)."""
from .registry import Rule, all_rules, d, lookup, nondifferentiable, vjp
from . import operators, numpy_rules  # noqa: F401  (registering the tables)
from . import numpy_more, linalg_rules, scipy_rules  # noqa: F401,E402

nondifferentiable("stop_gradient", "boolop", "not_in", "opaque", "copy", "effect", *("attr." + a for a in (
    "shape", "ndim", "size", "dtype", "itemsize", "nbytes")), *(
    "method." + m for m in ("nonzero", "argsort")))

__all__ = ["Rule", "all_rules", "d", "lookup", "nondifferentiable", "vjp"]
