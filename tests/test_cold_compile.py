"""What Numba is given to compile on a gradient's first call (issue 20's cold-compile target):
the runtime helpers every loop's adjoint calls link no string formatting and no general
reduction they do not need, and give the Python helpers' values bit for bit.

``benchmarks/bench_cold_compile.py`` measures where the seconds go."""
import numba
import numpy as np

from s2sgrad import runtime as rt
from s2sgrad.backend import numba_support  # noqa: F401 - the helpers' Numba versions

#: libraries whose presence means Numba compiled a message (str/repr of ints, string
#: concatenation: about 3 s of a cold compile) or the general ``_sum_to_shape``
COSTLY = ("raise_with_shape_context", "unicode", "integer_str", "ol_str_generic",
          "ol_repr_generic", "_sum_to_shape")


def adjoint_helpers(g5, g23, a1, a4, b2, b21):
    """The helpers a loop over vectors calls: a concatenate's adjoint (axis 0 and 1),
    unbroadcast of a vector onto a vector, onto one element and of a scalar, add_into."""
    p = rt.split_like(g5, (a1, a4), 0)
    q = rt.split_like(g23, (b21, b2), 1)
    same = rt.unbroadcast(p[1], a4)
    one = rt.unbroadcast(p[1], a1)
    filled = rt.unbroadcast(2.5, a4)
    view = np.zeros(5)
    rt.add_into(view[1:], same)
    return p[0], p[1], q[0], q[1], same, one, filled, view


def _linked(library, seen):
    for lib in library._linking_libraries:
        if lib.name not in seen:
            seen.add(lib.name)
            _linked(lib, seen)
    return seen


ARGS = (np.arange(1.0, 6.0) / 7.0, np.arange(6.0).reshape(2, 3) / 5.0, np.ones(1),
        np.ones(4), np.ones((2, 2)), np.ones((2, 1)))


def test_loop_adjoint_helpers_link_no_messages_and_match_python():
    jitted = numba.njit(adjoint_helpers)
    got = jitted(*ARGS)
    want = adjoint_helpers(*ARGS)
    for g, w in zip(got, want):
        assert g.shape == np.shape(w) and g.dtype == np.asarray(w).dtype
        assert np.array_equal(g, w)
    linked = _linked(jitted.overloads[jitted.signatures[0]].library, set())
    assert any("split_like" in name for name in linked)      # the walk sees the helpers
    costly = sorted(name for name in linked if any(c in name for c in COSTLY))
    assert not costly, costly
