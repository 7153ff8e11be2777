"""Shared test setup: one persistent cache directory for generated code and Numba's machine
code, so repeated runs (and tests that build the same gradient) compile once."""
import os
import pathlib

CACHE = pathlib.Path(__file__).resolve().parent.parent / ".s2sgrad_test_cache"
os.environ.setdefault("S2SGRAD_CACHE_DIR", str(CACHE))
