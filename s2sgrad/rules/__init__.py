"""Derivative rules: the registry and the tables that fill it (numpy, math, operators, ops),
and the one list of calls that carry no gradient (``no_gradient.TABLE``)."""
from .registry import Rule, all_rules, d, lookup, nondifferentiable, vjp
from . import operators, numpy_rules, no_gradient  # noqa: F401  (registering the tables)
from . import numpy_more, linalg_rules, scipy_rules, numpy_surface, scipy_more  # noqa: F401,E402
from . import jvp_rules, jvp_arrays, jvp_linalg  # noqa: F401,E402  (forward mode: after the VJP tables)
from . import runtime_jvp, second_rules  # noqa: F401,E402  (forward mode of gradient code)
from . import runtime_vjp  # noqa: F401,E402  (reverse mode of gradient code)
from .registry import parse_registrations_at_once  # noqa: E402

parse_registrations_at_once()   # the tables above parse on first use; a user's rule at once

__all__ = ["Rule", "all_rules", "d", "lookup", "nondifferentiable", "vjp"]
