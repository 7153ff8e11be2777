"""Shared test setup (each set only where the environment does not set it already).

- One persistent cache directory for generated code and Numba's machine code, so repeated
  runs (and tests that build the same gradient) compile once.
- Numba compiles the tests' code without LLVM's optimisation passes (``NUMBA_OPT=0``):
  the suite checks values, which optimisation does not change (no fast-math anywhere), and
  the passes are half to three quarters of each compile's time; speed is measured by
  ``benchmarks/`` at Numba's default level.  ``NUMBA_OPT=3 python -m pytest`` runs the
  suite at the level users get.
- Program-level suites (test_tangent_style, test_vjp, test_jvp, test_jacrev, test_higher,
  test_tree_arguments...) run each program under plain Python and under the default
  backend (``auto``: Numba compiles what loops, loop-free code runs as numpy), not under a
  forced ``S2SGRAD_BACKEND=numba``: every rule's generated code is compiled by Numba in
  the rule-table suites (test_rules, test_numba_rules, test_numba_coverage,
  test_numba_tuples), and a forced compile of each loop-free program was a third of the
  suite's time.
- Fused elementwise kernels (``rt.Fused``) run numpy's expression, not their Numba
  loops, whatever the size (``S2SGRAD_FUSED_MIN``): each kernel is a Numba compile of
  its own, and the suite's large-argument tests would compile dozens;
  ``tests/test_fused_kernels.py`` sets the threshold it tests.
- Numba's thread count is fixed for the session (its default), so that a test importing a
  benchmark (whose harness pins ``NUMBA_NUM_THREADS=1`` when it is unset) after a prange
  loop has started Numba's threads does not make every later compile raise ("Cannot set
  NUMBA_NUM_THREADS to a different value once the threads have been launched").
"""
import os
import pathlib

CACHE = pathlib.Path(__file__).resolve().parent.parent / ".s2sgrad_test_cache"
os.environ.setdefault("S2SGRAD_CACHE_DIR", str(CACHE))
os.environ.setdefault("NUMBA_OPT", "0")
os.environ.setdefault("S2SGRAD_FUSED_MIN", str(2 ** 62))
os.environ.setdefault("NUMBA_NUM_THREADS", str(len(os.sched_getaffinity(0))
                                               if hasattr(os, "sched_getaffinity")
                                               else os.cpu_count() or 1))
