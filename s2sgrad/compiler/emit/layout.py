"""The layout of generated source a person reads: one comment per user line, lines of at
most 100 characters, and whether the code reads a given module.

``render_mapped(items)`` turns a statement list (gast statements and ``Comment``) into
source lines, each with the user's line it was generated for (the line map);
``wrap(line)`` splits one long line; ``reads_name(lines, name)`` tells whether
the code (not its comments) mentions ``name``; ``module_header(title, about, code,
imports)`` gives a generated module's first lines; ``after_the_function(defined)`` gives the
lines of what a generated function calls (fused kernels and loops, kept arrays, constants,
checkpointed steps), written after it so that a module opens with the function.
"""
import io
import re
import tokenize

import gast

from ...runtime import SKIP_ELSE
from ..syntax.nodes import Comment
from ..syntax.source import INDENT, LINE_LIMIT, to_source

#: a location comment: its text, then "  (file.py:12)"
_LOCATION = re.compile(r"^(?P<pad>\s*# )(?P<text>.*?)(?P<where>  \([^()]+:\d+\))$")
_OPEN, _CLOSE = "([{", ")]}"


def render_mapped(items, depth=0, origin=None):
    """(line, origin) for each source line of a statement list, nested blocks indented,
    long lines wrapped: ``origin`` is the user's source line (a SourceLocation) the line
    was generated for, from the location ``Comment`` in effect there (a block's comments
    hold inside it), else ``origin``."""
    out = []
    _render(items, depth, set(), origin, out)
    return out


def _render(items, depth, seen, origin, out):
    """Append (line, origin) pairs of ``items`` to ``out``.  A comment already written on
    the way to a statement (a loop header's, before the loop and again inside it) is
    written once: ``seen`` holds those above and before, and each branch of an ``if``
    starts from the same."""
    pad = INDENT * depth

    def lines(text):
        out.extend((line, origin) for line in wrap(text))

    for item in items:
        if isinstance(item, Comment):
            origin = item.origin or origin
            if item.text not in seen:
                seen.add(item.text)
                lines(f"{pad}# {item.text}")
        elif isinstance(item, gast.If):
            keyword, inside = "if", set(seen)
            while True:           # an else holding one if alone is written as an elif
                lines(f"{pad}{keyword} {to_source(item.test)}:")
                other = set(seen)
                _render(item.body, depth + 1, other, origin, out)
                inside |= other
                if len(item.orelse) == 1 and isinstance(item.orelse[0], gast.If):
                    keyword, item = "elif", item.orelse[0]
                    continue
                if item.orelse:
                    out.append((f"{pad}else:", origin))
                    other = set(seen)
                    _render(item.orelse, depth + 1, other, origin, out)
                    inside |= other
                break
            seen |= inside
        elif isinstance(item, (gast.For, gast.While)):
            header = (f"for {to_source(item.target)} in {to_source(item.iter)}"
                      if isinstance(item, gast.For) else f"while {to_source(item.test)}")
            lines(f"{pad}{header}:")
            _render(item.body, depth + 1, seen, origin, out)
        else:
            for line in to_source(item).splitlines():
                lines(pad + line)


def wrap(line, limit=LINE_LIMIT):
    """``line`` as lines of at most ``limit`` characters where it can be split.

    A location comment keeps its ``(file:line)`` and shortens the user's text with
    ``...``; another comment goes on over more comment lines, split between words; code is split after a comma inside brackets, the next line aligned after
    the bracket (8 deeper than the statement when that leaves too little room).  A line
    with no such place stays as it is."""
    if len(line) <= limit:
        return [line]
    if line.lstrip().startswith("#"):
        match = _LOCATION.match(line)
        if match is None:
            return _wrap_words(line, limit)
        room = limit - len(match["pad"]) - len(match["where"]) - 4
        if room < 10:
            return [line]
        text = match["text"][:room + 1]
        cut = text.rfind(" ")              # at a word's end where that loses little
        text = text[:cut] if cut > room // 2 else text[:room]
        return [match["pad"] + text.rstrip() + " ..." + match["where"]]
    return _wrap_code(line, limit)


def _wrap_words(line, limit):
    pad = line[:len(line) - len(line.lstrip())]
    words = line.lstrip()[1:].split()
    out, current = [], pad + "#"
    for word in words:
        if len(current) + 1 + len(word) > limit and current.strip() != "#":
            out.append(current)
            current = pad + "#   "
        current += " " + word
    return out + [current]


def _wrap_code(line, limit):
    commas, brackets = _commas(line)
    if not commas:
        return [line]
    indent = len(line) - len(line.lstrip())
    out = []
    start, column = 0, 0          # where the current output line starts: index in line, column
    placed = {}                   # index of an open bracket -> its column in the output
    for b in brackets:
        if b < len(line):
            placed.setdefault(b, b)
    while column + len(line) - start > limit:
        fits = [(depth, -p, b) for p, b, depth in commas
                if p > start and column + p - start + 1 <= limit]
        later = [(p, b) for p, b, _ in commas if p > start]
        if not later:
            break
        if fits:                  # the last comma that fits, in the outermost brackets
            _, p, b = min(fits)
            p = -p
        else:
            p, b = later[0]
        out.append(" " * column + line[start:p + 1].strip() if out else line[:p + 1].rstrip())
        bracket_column = placed.get(b, b)
        new_start = p + 1
        while new_start < len(line) and line[new_start] == " ":
            new_start += 1
        new_column = bracket_column + 1
        if new_column > limit - 30:
            new_column = indent + 2 * len(INDENT)
        for q in brackets:        # brackets on the new line move with it
            if q >= new_start:
                placed[q] = new_column + q - new_start
        start, column = new_start, new_column
    out.append(" " * column + line[start:] if out else line)
    return out


def _commas(line):
    """([(index of a comma inside brackets, index of its innermost open bracket, depth)],
    [indices of open brackets]) of one line of code, outside strings and comments."""
    commas, brackets, stack = [], [], []
    text = line.lstrip()
    offset = len(line) - len(text)
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type != tokenize.OP:
                continue
            index = offset + token.start[1]
            if token.string in _OPEN:
                stack.append(index)
                brackets.append(index)
            elif token.string in _CLOSE and stack:
                stack.pop()
            elif token.string == "," and stack:
                commas.append((index, stack[-1], len(stack)))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return [], []
    return commas, brackets


def reads_name(lines, name):
    """True when the code of ``lines`` (not its comments or strings) mentions ``name``."""
    try:
        return any(token.type == tokenize.NAME and token.string == name
                   for token in tokenize.generate_tokens(io.StringIO(
                       "\n".join(line.strip() for line in lines) + "\n").readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return True


def after_the_function(defined):
    """The (line, origin) pairs ``defined`` (module-level definitions the generated
    function reads when it runs: Python looks them up at the call, Numba when it compiles
    at the first call, both after the whole module has run) as the module's tail: two
    blank lines and a comment first; nothing for none."""
    defined = list(defined)
    while defined and not defined[-1][0]:
        defined.pop()
    if not defined:
        return []
    return [("", None), ("", None),
            ("# What the function above calls (defined once per module).", None),
            *defined]


#: what a module whose fused loops' guards read ``SKIP_ELSE`` defines after its imports
SKIP_ELSE_LINES = [
    "", "# True in the copy Numba compiles: a fused loop's failed guard raises there and the",
    "# call runs again (compiled with the numpy statements of the else only then)",
    f"{SKIP_ELSE} = False"]


def module_header(title, about, code, imports, blanks=2):
    """The (line, None) pairs a generated module opens with: ``# s2sgrad: <title>``, the
    comment lines ``about`` (what the code does), the imports (``math`` only where the
    ``code`` lines read it, numpy, the user's modules' ``imports``, the runtime; then
    ``SKIP_ELSE = False`` where the code reads it), then ``blanks`` empty lines."""
    lines = [*wrap(f"# s2sgrad: {title}"), *about,
             *(["import math", ""] if reads_name(code, "math") else []),
             "import numpy as np", *imports, "", "from s2sgrad import runtime as rt",
             *(SKIP_ELSE_LINES if reads_name(code, SKIP_ELSE) else []),
             *[""] * blanks]
    return [(line, None) for line in lines]
