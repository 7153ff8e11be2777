"""Shared test setup: one persistent cache directory for generated code and Numba's machine
code, so repeated runs (and tests that build the same gradient) compile once; and Numba's
thread count fixed for the session (its default, unless set), so that a test importing a
benchmark (whose harness pins ``NUMBA_NUM_THREADS=1`` when it is unset) after a prange
loop has started Numba's threads does not make every later compile raise ("Cannot set
NUMBA_NUM_THREADS to a different value once the threads have been launched")."""
import os
import pathlib

CACHE = pathlib.Path(__file__).resolve().parent.parent / ".s2sgrad_test_cache"
os.environ.setdefault("S2SGRAD_CACHE_DIR", str(CACHE))
os.environ.setdefault("NUMBA_NUM_THREADS", str(len(os.sched_getaffinity(0))
                                               if hasattr(os, "sched_getaffinity")
                                               else os.cpu_count() or 1))
