"""Emission: gast statements -> Python source text.

The one place that turns trees into text.  astor writes the source; where
astor is missing or fails (it is unmaintained), ``ast.unparse`` does.
Both give the same code for everything s2sgrad generates (a test checks).
"""
import ast
import os

import gast

from ...errors import UnsupportedConstructError

try:  # pragma: no cover - exercised through to_source
    import astor
except ImportError:  # pragma: no cover
    astor = None


INDENT = "    "
#: the longest line generated code has where it can be split
LINE_LIMIT = 100


def _negative_bases_signed(tree):
    """``tree`` with each negative number that is the base of a power written as a minus
    sign on its magnitude: the writers print ``Constant(-1) ** j`` as ``-1 ** j``, which
    Python reads as ``-(1 ** j)``; ``UnaryOp`` gets its parentheses, ``(-1) ** j``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow) and isinstance(
                node.left, ast.Constant) and isinstance(node.left.value, (int, float)) and \
                not isinstance(node.left.value, bool) and node.left.value < 0:
            node.left = ast.UnaryOp(op=ast.USub(), operand=ast.Constant(-node.left.value))
    return tree


def to_source(node, use_astor=True):
    """Source text of one gast statement or expression, without a trailing newline."""
    tree = _negative_bases_signed(gast.gast_to_ast(node))
    ast.fix_missing_locations(tree)
    if use_astor and astor is not None:
        try:
            text = astor.to_source(tree, pretty_source="".join)  # one statement, one line
        except Exception:  # noqa: BLE001 - fall back to the standard library
            text = ast.unparse(tree)
    else:
        text = ast.unparse(tree)
    text = text.rstrip("\n")
    if isinstance(node, gast.expr) and not isinstance(node, gast.Tuple) and text.startswith("(") and text.endswith(")") \
            and _balanced(text[1:-1]):
        text = text[1:-1]
    return text


def _balanced(text):
    depth = 0
    for ch in text:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth < 0:
                return False
    return depth == 0


def source_segment(node):
    """The construct's own text (its first line), for messages; None if it has none."""
    try:
        text = to_source(node)
    except Exception:  # noqa: BLE001 - a message detail only
        return None
    return text.splitlines()[0] if text else None


def unsupported(frame, node, what, hint):
    """The ``UnsupportedConstructError`` that refuses ``node`` of the function ``frame``
    lowers (anything with ``parsed.location``): its line, its text, what and what to do."""
    return UnsupportedConstructError(what, frame.parsed.location(node), source_segment(node),
                                     hint)


def location_comment(origin):
    """``# <source line>  (file.py:12)`` for an op's origin."""
    text = origin.text.strip() if origin.text else ""
    return f"# {text}  ({os.path.basename(origin.filename or '?')}:{origin.lineno})"
