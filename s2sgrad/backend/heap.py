"""Keep the memory a compiled gradient frees for its next call (glibc's malloc settings).

Why: the tapes of a Numba-compiled loop (lists of tuples of arrays, the arrays they
hold) are allocated with ``malloc`` on every call and freed when it returns.  glibc
serves a block over its mmap threshold (128 KiB at the start of a process) from fresh
pages of the kernel and unmaps it when freed, and gives the free top of the heap back
once it is over the trim threshold (128 KiB), so the next call faults on every page
again.  glibc raises both thresholds by itself once a process frees a large mapped
block, so whether a process pays depends on what it happened to run before: measured
in fresh processes with a warm cache (README, "GradBench"), GradBench's ode took 7,852
page faults and 22-30 ms a call in one process and none (9.5 ms) in another; lstm 417
to 598 faults a call, 15 ms against 8.7 ms.

``keep_freed_memory()`` (``Compiled``, on the first call that runs Numba's code, and
``api/forward.jacobian_backend``, on a batched Jacobian run as numpy) sets
both thresholds once per process to the ceiling glibc's own rule raises them to on a
64-bit machine (mmap 32 MiB, trim twice that), so every process runs as the lucky one
did: a call's tapes come from memory the last call freed.  What it costs: freed blocks
under 32 MiB stay in the process (for its next use) instead of going back to the
system.  ``S2SGRAD_HEAP=system`` leaves malloc as it is; other C libraries (macOS,
Windows, musl) are left alone.  Results do not depend on it (only where memory comes
from).
"""
import ctypes
import os
import platform

__all__ = ["keep_freed_memory", "MMAP_THRESHOLD", "TRIM_THRESHOLD"]

#: glibc's ``mallopt`` parameter numbers (malloc.h)
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
#: DEFAULT_MMAP_THRESHOLD_MAX of 64-bit glibc: as high as its dynamic rule goes
MMAP_THRESHOLD = 32 * 1024 * 1024
#: the dynamic rule's trim threshold: twice the mmap threshold
TRIM_THRESHOLD = 2 * MMAP_THRESHOLD

_state = {"done": None}     # None: not tried; else what was done ("set", or why not)


def keep_freed_memory():
    """Set glibc's mmap and trim thresholds (module doc) once per process; returns what
    was done: 'set', or the reason it was not ('S2SGRAD_HEAP=system', 'not glibc',
    'mallopt failed')."""
    if _state["done"] is None:
        _state["done"] = _set_thresholds()
    return _state["done"]


def _set_thresholds():
    if os.environ.get("S2SGRAD_HEAP", "").strip().lower() == "system":
        return "S2SGRAD_HEAP=system"
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return "not glibc"
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return "not glibc"
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    # the mmap threshold first: setting it turns glibc's own raising of both off
    if mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD) != 1 \
            or mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD) != 1:
        return "mallopt failed"
    return "set"
