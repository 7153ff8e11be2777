"""Why Numba could not compile a generated function, in whole sentences for the user.

``explain(exc, path, source)`` turns a Numba typing error raised while
compiling the module at ``path`` (text ``source``) into a reason that names
the user's line the failing generated line comes from (the ``# <code>
(file:line)`` comments above it), says what Numba lacks, without memory
addresses or s2sgrad's internal file paths, and what to do.
``explain_unresolved(name, line, path, source)`` says the same of a global or module
attribute ``precheck.unresolved`` found, before any compile, at generated ``line``.
"""
import os
import re

from .. import runtime as rt

_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_FUNCTION = re.compile(r"Function\(<(?:built-in )?function ([\w.]+)>\)")
_TYPING_AT = re.compile(r"During: .* at (.+?) \((\d+)\)\s*$")
_FILE_LINE = re.compile(r'File "(.+?)", line (\d+)')
_USER_COMMENT = re.compile(r"^#\s*(.*\S)\s+\(([^()]+:\d+)\)$")
#: Numba's words for a name of ``s2sgrad.runtime`` that has no Numba version at all
_RT_UNKNOWN = re.compile(r"Unknown attribute '(\w+)' of type Module\(<module 's2sgrad\.runtime'")


def explain(exc, path, source):
    """A reason, in whole sentences, why Numba could not compile the module (see module doc)."""
    text = _ANSI.sub("", str(exc))
    cause, helper = _cause(text)
    return _sentences(cause, helper, _user_line(text, path, source))


def explain_unresolved(name, line, path, source):
    """The reason for a global or module attribute ``name`` (dotted) at generated ``line``
    that Numba has no type for (``precheck.unresolved``), found before compiling."""
    short = name[len("rt."):] if name.startswith("rt.") else None
    helper = short if short is not None and callable(getattr(rt, short, None)) else None
    cause = (f"s2sgrad has no Numba version of {name}" if helper else
             f"Numba does not support {name}")
    where = _line_origin(line, source) if path else None
    return _sentences(cause + " (found before compiling)", helper, where)


def _sentences(cause, helper, where):
    """The reason's sentences: where, what Numba lacks, what runs instead, what to do."""
    sentence = "Numba could not compile the gradient code"
    if where:
        construct, location, backward = where
        part = "the gradient of " if backward else ""
        sentence += f" for {part}`{construct}` ({location})"
    sentence += f": {cause}"
    sentence = sentence.rstrip(".:") + ". The gradient runs as Python instead (correct, slower)."
    if helper:
        return sentence + (" This is a gap in s2sgrad's Numba support: please report it. "
                           "Set S2SGRAD_BACKEND=python to skip the attempt.")
    return sentence + (" To run it compiled, write that line with operations Numba supports "
                       "(see the README), or set S2SGRAD_BACKEND=python to skip the attempt.")


def _clean(line):
    """A line of Numba's message with addresses removed and paths cut to file names."""
    line = _ADDRESS.sub("", line).strip()
    line = _FUNCTION.sub(lambda m: m.group(1), line)
    return re.sub(r"(?:[\w.~-]*/)+([\w.-]+\.py)", r"\1", line)


def _cause(text):
    """(what Numba lacks, as one clause; the rt helper it lacks or None)."""
    lines = [_ADDRESS.sub("", line).strip() for line in text.splitlines()]
    unknown = _RT_UNKNOWN.search(text)
    if unknown:
        return f"s2sgrad has no Numba version of rt.{unknown.group(1)}", unknown.group(1)
    for i, line in enumerate(lines):
        if line.startswith("No implementation of function"):
            match = _FUNCTION.search(line)
            name = match.group(1) if match else "a function"
            called = next((l[3:].strip() for l in lines[i + 1:i + 4] if l.startswith(">>>")),
                          "")
            args = called[called.find("("):] if "(" in called else ""
            helper = _rt_helper(line, name)
            if helper:
                return (f"s2sgrad has no Numba version of rt.{helper} for the arguments "
                        f"{_clean(args)}"), helper
            return f"Numba has no version of {name} for the arguments {_clean(args)}", None
    for line in lines:
        if not line or line.startswith(("Failed in", "During:", "File ", "^", ">>>")) or \
                line.startswith("<source") or line.endswith(":") and "(" not in line:
            continue
        return _clean(line), None
    return "Numba rejected it", None


def _rt_helper(line, name):
    """The name of the s2sgrad runtime helper ``name`` refers to, if it is one."""
    short = name.rsplit(".", 1)[-1]
    module = getattr(getattr(rt, short, None), "__module__", "") or ""
    return short if callable(getattr(rt, short, None)) and \
        (module == rt.__name__ or module.startswith(rt.__name__ + ".")) and \
        "Function(<function" in line else None


def _user_line(text, path, source):
    """(the user's code, "file:line", in the adjoint?) of the generated line Numba failed
    on, or None when it cannot be told."""
    if not path or not source:
        return None
    name = os.path.basename(path)
    numbers = [int(m.group(2)) for line in text.splitlines()
               for m in [_TYPING_AT.search(line.strip()) or _FILE_LINE.search(line)]
               if m and os.path.basename(m.group(1)) == name]
    if not numbers:
        return None
    return _line_origin(numbers[-1], source)


def _line_origin(number, source):
    """(the user's code, "file:line", in the adjoint?) of generated line ``number`` of
    ``source``: the nearest ``# <code> (file:line)`` comment above it; None if none."""
    if not source or not number:
        return None
    lines = source.splitlines()
    for raw in reversed(lines[:number]):
        match = _USER_COMMENT.match(raw.strip())
        if match:
            construct = match.group(1)
            backward = construct.startswith("grad of:")
            if backward:
                construct = construct[len("grad of:"):].strip()
            return construct, match.group(2), backward
    return None
