"""The errors s2sgrad raises, all under one base class.

Every error about user code carries the user's file, line and the construct,
and says what to do instead.
"""


class S2sgradError(Exception):
    """Base class of every error s2sgrad raises about what it was asked to do."""


class SourceLocation:
    """A place in the user's source: file, line number and the line's text."""

    __slots__ = ("filename", "lineno", "text")

    def __init__(self, filename, lineno, text):
        self.filename = filename
        self.lineno = lineno
        self.text = text

    def __str__(self):
        return f"{self.filename}:{self.lineno}"

    def __eq__(self, other):
        return (isinstance(other, SourceLocation) and self.filename == other.filename
                and self.lineno == other.lineno and self._marked() == other._marked())

    def _marked(self):
        """Whether the text is marked as the adjoint of the line (``grad of:``, given to
        the lines of an inlined gradient's adjoint sweep: compiler/syntax/origins.py)."""
        return (self.text or "").startswith("grad of: ")

    def __hash__(self):
        return hash((self.filename, self.lineno))

    def __repr__(self):
        return f"SourceLocation({self.filename!r}, {self.lineno}, {self.text!r})"


class UserCodeError(S2sgradError):
    """An error about a construct in the user's code.

    The message reads: ``file:line: what is wrong: `construct`\\n  line text\\nhint``.
    """

    def __init__(self, what, location=None, construct=None, hint=None):
        self.what = what
        self.location = location
        self.construct = construct
        self.hint = hint
        parts = []
        head = f"{location}: " if location is not None else ""
        parts.append(head + what + (f": `{construct}`" if construct else ""))
        if location is not None and location.text:
            parts.append("    " + location.text.strip())
        if hint:
            parts.append(hint)
        super().__init__("\n".join(parts))


class UnsupportedConstructError(UserCodeError):
    """The user's code uses a construct that s2sgrad cannot differentiate."""


class RecursionUnrollError(UnsupportedConstructError):
    """A recursive call whose depth is not known while building: under a condition decided
    at run time (``at_run_time``), or deeper than s2sgrad unrolls."""

    def __init__(self, what, location=None, construct=None, hint=None, at_run_time=False):
        super().__init__(what, location, construct, hint)
        self.at_run_time = at_run_time


class MissingRuleError(UserCodeError):
    """A differentiated value flows through a call that has no derivative rule."""


class DerivativeNotAvailableError(MissingRuleError, NotImplementedError):
    """A derivative that a runtime helper has no formula for at the values it was given
    (a non-square ``svd`` with ``full_matrices=True``, a repeated singular value under a
    second derivative...), found while running generated code: it names the user's line
    it was generated for.  A NotImplementedError too, as the helper raised it."""


class SourceUnavailableError(S2sgradError):
    """The source of a function cannot be read (a lambda in a REPL, a C function)."""


class GradientArgumentError(S2sgradError, ValueError):
    """A gradient function was called with arguments that do not fit its positions."""


class GradientTypeError(S2sgradError, TypeError):
    """A value at a differentiated position cannot be differentiated (int, bool)."""


class OutputStructureError(UserCodeError, ValueError):
    """The function's outputs do not fit what was asked (has_aux with a single output)."""


class DerivativeCompositionError(S2sgradError, ValueError):
    """A transform of a derivative object that s2sgrad cannot build (it never falls back
    to differentiating the function the derivative wraps: that would be a derivative of
    a lower order)."""


class VmapAxisError(S2sgradError, ValueError):
    """``vmap``'s ``in_axes`` or ``out_axes`` do not fit the arguments or the outputs, or
    the mapped axes differ in size; the message names the user's line."""


class MemoryLimitError(S2sgradError, ValueError):
    """``memory_limit`` is too small for a loop: one snapshot of its loop-carried state
    and one step's tape do not fit, or (``step`` >= 0) a later step's tape with the
    snapshots kept then does not (the plan measured the first step's).  Raised by the
    generated code (Numba too) with ``where`` (the user's loop, ``file:line``) and the
    byte counts (``state_bytes``: one snapshot's, its step number included; for a later
    step, the snapshots')."""

    def __init__(self, where, limit, state_bytes, tape_bytes, step=-1):
        self.where, self.limit = where, limit
        self.state_bytes, self.tape_bytes, self.step = state_bytes, tape_bytes, step
        need = state_bytes + tape_bytes
        if step >= 0:       # a later step's tape: the plan measured the first step's
            text = (f"{where}: memory_limit={limit} bytes is too small for this loop: "
                    f"step {step} keeps a tape of {tape_bytes} bytes, more than its first "
                    f"step (whose tape planned the snapshots), and with the snapshots kept "
                    f"then ({state_bytes} bytes) it needs {need} bytes")
        else:
            text = (f"{where}: memory_limit={limit} bytes is too small for this loop: one "
                    f"snapshot of its loop-carried state ({state_bytes} bytes with its step "
                    f"number) and one step's tape ({tape_bytes} bytes) need {need} bytes")
        super().__init__(f"{text}\nraise memory_limit to at least {need} bytes, or leave "
                         f"it out to keep the whole tape")

    def __reduce__(self):
        return (type(self), (self.where, self.limit, self.state_bytes, self.tape_bytes,
                             self.step))


class CheckpointError(UserCodeError):
    """A loop that ``memory_limit`` cannot checkpoint (a while loop, a ``break``, a loop
    under a branch, a body that writes into arrays it did not make): the message names
    the loop's line and what to change."""
