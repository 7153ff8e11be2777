"""Shared test setup.

- One persistent cache directory for generated code and Numba's machine code, so repeated
  runs (and tests that build the same gradient) compile once.
- Numba compiles the tests' code without LLVM's optimisation passes (``NUMBA_OPT=0``):
  the suite checks values, which optimisation does not change (no fast-math anywhere), and
  the passes are about half of each compile's time; speed is measured by ``benchmarks/``
  at Numba's default level.  ``NUMBA_OPT=3 python -m pytest`` runs the suite at the level
  users get (both are set only where the environment does not set them already).
"""
import os
import pathlib

CACHE = pathlib.Path(__file__).resolve().parent.parent / ".s2sgrad_test_cache"
os.environ.setdefault("S2SGRAD_CACHE_DIR", str(CACHE))
os.environ.setdefault("NUMBA_OPT", "0")
