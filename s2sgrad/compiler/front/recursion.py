"""Recursion unrolled while building: which inlined calls may re-enter a function.

The front end inlines the user's functions, so a recursive call is lowered by lowering
the callee's body once more, as tracing would run it.  That ends when every condition
that decides whether the function recurses again is known while building: a shape
(``x.shape[0] == 1``, with the build specialised on the arguments' sizes, see
``lower.lower_function``) or a constant (``n == 0`` with ``n`` a literal at the first
call).  ``CallStack`` keeps the functions being inlined and refuses, with a
``RecursionUnrollError`` naming the user's line:

- a recursive call lowered under a run-time ``if`` (or ``a if c else b``) of a callee
  that is still being inlined: whether it recurses is decided by a value, so the
  unrolling would never end (``at_run_time``; the build is tried again specialised on
  shapes, which may decide the condition);
- a recursion deeper than ``MAX_DEPTH`` levels, or one that unrolls into more than
  ``MAX_CALLS`` inlined calls in all (``fib(x, 30)`` would write millions of lines).

Takes the key of each callee (a function, or a local def's node), the frame and the
call's node; gives nothing but the refusals.
"""
from ...errors import RecursionUnrollError
from ..syntax.source import source_segment

#: the most levels of one function's recursion unrolled while building
MAX_DEPTH = 32
#: the most recursive calls unrolled in one lowering, all functions together
MAX_CALLS = 256

_HOW = ("s2sgrad unrolls a recursion while building when the conditions that end it "
        "depend only on argument shapes and constants (x.shape[0] == 1, n == 0 with n a "
        "literal)")


class CallStack:
    """The functions being inlined, innermost last, each with the number of run-time
    branches being lowered when it was entered; the run-time branches being lowered now
    (``branches``: their locations); the recursive calls unrolled so far."""

    def __init__(self):
        self.entries = []       # (key, len(branches) at entry)
        self.branches = []      # the SourceLocation of each run-time if being lowered
        self.unrolled = 0

    def __contains__(self, key):
        return any(k == key for k, _ in self.entries)

    def names(self):
        """The names the functions being inlined are called by."""
        return {getattr(k, "__name__", None) or getattr(k, "name", None)
                for k, _ in self.entries}

    def push(self, frame, node, key, name):
        """Enter ``key`` (called as ``name`` at ``node`` of ``frame``), or refuse."""
        if key in self:
            self.check_recursion(frame, node, key, name)
        self.entries.append((key, len(self.branches)))

    def pop(self):
        self.entries.pop()

    def check_recursion(self, frame, node, key, name):
        """Refuse the recursive call of ``key`` at ``node`` when its depth is not known
        while building (module doc)."""
        levels = [branches for k, branches in self.entries if k == key]
        depth, innermost = len(levels), levels[-1]
        location = frame.parsed.location(node)
        construct = source_segment(node)
        if len(self.branches) > innermost:
            where = self.branches[innermost]
            raise RecursionUnrollError(
                f"recursion into {name} under a condition decided at run time (the `if` at "
                f"line {where.lineno}: {where.text.strip() if where.text else ''})",
                location, construct, f"{_HOW}; write this recursion as a loop, or make its "
                f"end depend on shapes or literal numbers", at_run_time=True)
        if depth >= MAX_DEPTH:
            raise RecursionUnrollError(
                f"recursion into {name} deeper than {MAX_DEPTH} levels while building",
                location, construct, f"{_HOW}, to a depth of {MAX_DEPTH}; write this "
                f"recursion as a loop (or halve instead of decrementing)")
        self.unrolled += 1
        if self.unrolled > MAX_CALLS:
            raise RecursionUnrollError(
                f"recursion into {name} unrolls into more than {MAX_CALLS} calls while "
                f"building", location, construct, f"{_HOW}, up to {MAX_CALLS} calls in "
                f"all; write this recursion as a loop")
