"""Frontend: a Python function (or a Cell's construct) -> its gast FunctionDef and scope.

``parse_function(fn)`` returns a ``ParsedFunction``: the FunctionDef node
(lambdas become a FunctionDef that returns the body), the file and first
line for messages, and a ``Scope`` that resolves every free name the way
Python would when the function runs (closure cells, module globals, builtins).
"""
import builtins
import copy
import functools
import inspect
import linecache
import os
import re
import sysconfig
import textwrap

import gast

from ...errors import DerivativeCompositionError, SourceLocation, SourceUnavailableError
from .guards import ClosureName, GlobalName

_MISSING = object()


class Scope:
    """Resolves names that are not local to the function: closure, globals, builtins."""

    def __init__(self, fn):
        self.globals = getattr(fn, "__globals__", {})
        code = fn.__code__
        self.closure, self.cells = {}, {}
        if fn.__closure__:
            for name, cell in zip(code.co_freevars, fn.__closure__):
                try:
                    self.closure[name] = cell.cell_contents
                    self.cells[name] = cell
                except ValueError:  # an empty cell: the name is not bound yet
                    pass

    def lookup(self, name):
        """The object ``name`` refers to, and where it was found ('closure', 'global', 'builtin')."""
        if name in self.closure:
            return self.closure[name], "closure"
        if name in self.globals:
            return self.globals[name], "global"
        value = getattr(builtins, name, _MISSING)
        if value is not _MISSING:
            return value, "builtin"
        return _MISSING, None

    def source(self, name, where):
        """Where a later call reads ``name`` again (``where``: as ``lookup`` said), as a
        ``guards`` source; None for a builtin (not guarded)."""
        if where == "closure":
            return ClosureName(self.cells[name], name)
        if where == "global":
            return GlobalName(self.globals, name)
        return None


class ParsedFunction:
    """A function's syntax tree with what is needed to read it: file, lines, scope."""

    def __init__(self, fn, node, filename, first_line, lines):
        self.fn = fn
        self.node = node
        self.filename = filename
        self.first_line = first_line
        self.lines = lines
        self.scope = Scope(fn)
        self.name = fn.__name__ if fn.__name__ != "<lambda>" else "lambda"

    def location(self, node):
        """The SourceLocation of a node of this function (line numbers are file lines)."""
        lineno = getattr(node, "lineno", None) or self.node.lineno
        text = linecache.getline(self.filename, lineno).rstrip("\n") if self.filename else ""
        return SourceLocation(self.filename, lineno, text)


MISSING = _MISSING


def _lambdas_in_fragment(text):
    """The lambdas of a line that does not parse on its own (a lambda inside a call's
    arguments): each ``lambda`` parsed up to the longest end that parses."""
    found = []
    start = text.find("lambda")
    while start != -1:
        for end in range(len(text), start, -1):
            try:
                found.append(gast.parse("(" + text[start:end] + ")").body[0])
                break
            except SyntaxError:
                continue
        start = text.find("lambda", start + 1)
    return gast.Module(body=found, type_ignores=[]) if found else None


def _transparent(obj):
    """True for s2sgrad's own wrappers whose wrapped function is what runs: an op
    (``__s2sgrad_op__``: its raw numpy body) and a ``custom_vjp`` function (its forward).
    Another wrapper (a user's decorator with ``functools.wraps``, a derivative object)
    does more than call what it wraps, so its own code is read, not the wrapped one's."""
    return bool(getattr(obj, "__s2sgrad_op__", False)) or \
        getattr(obj, "__s2sgrad_custom_vjp__", None) is obj


def parse_function(fn):
    """Read and parse ``fn``'s source. Raises SourceUnavailableError when it cannot be read,
    and DerivativeCompositionError for a derivative object (``grad(f)``...), whose source
    is not the user's function's: the transforms of a derivative are built from its
    generated code (``s2sgrad/api/nested.py``), never from the function it wraps."""
    if getattr(fn, "derivative_mode", None) is not None:
        raise DerivativeCompositionError(
            f"{getattr(fn, '__name__', fn)!r} is a derivative object ({type(fn).__name__}); "
            f"this transform of it is not supported: s2sgrad differentiates a derivative "
            f"through the code generated for it, which it has for grad and jacrev only "
            f"(under jvp, jacfwd, hvp, hessian and grad). Write the derivative you want "
            f"directly (hessian(f), jacfwd(jacrev(f)), grad(grad(f)))")
    fn = inspect.unwrap(fn, stop=lambda f: not _transparent(f))
    lifted = getattr(fn, "__s2sgrad_lifted__", None)
    if lifted is not None:      # a function lifted from inside another (front/lifting.py)
        node, parsed = lifted
        return ParsedFunction(fn, copy.deepcopy(node), parsed.filename, node.lineno,
                              parsed.lines)
    if not inspect.isfunction(fn):
        raise SourceUnavailableError(
            f"s2sgrad can only read Python functions, got {fn!r}; wrap it in a def, or "
            f"register a rule for it with s2sgrad.custom_vjp")
    try:
        lines, first_line, filename = _source_lines(fn)
    except (OSError, TypeError) as exc:
        raise SourceUnavailableError(
            f"cannot read the source of {fn.__qualname__} ({exc}); s2sgrad differentiates "
            f"source code, so define the function in a file (not in an interactive prompt "
            f"or through exec)") from exc
    source = textwrap.dedent("".join(lines))
    node = _lambda_in_file(fn) if fn.__name__ == "<lambda>" else None
    if node is None:
        if fn.__name__ == "<lambda>":
            node = _lambda_as_function(source, fn)
        else:
            module = gast.parse(source)
            node = module.body[0]
            while isinstance(node, gast.ClassDef):  # pragma: no cover - defensive
                node = node.body[0]
        gast.increment_lineno(node, first_line - 1)
    return ParsedFunction(fn, node, filename, first_line, lines)


def register_lifted(fn, node, parsed):
    """Record ``node`` (with the user's line numbers) as the syntax of ``fn``, a function
    made from a def or lambda inside the function ``parsed`` (``front/lifting.py``)."""
    fn.__s2sgrad_lifted__ = (node, parsed)


_DEFINITION = re.compile(r"^(\s*def\s)|(\s*async\s+def\s)|(.*(?<!\w)lambda(:|\s))|^(\s*@)")


def _source_lines(fn):
    """(the source lines of ``fn``, its first line, its file), as ``inspect.getsourcelines``
    of its code object gives them (a code object: inspect would follow a wrapper's
    ``__wrapped__`` to the wrapped one), read through ``linecache`` with the function's own
    globals: inspect looks the module up by scanning every loaded module (50 ms on the
    first call of a process that has imported Numba).  Raises OSError when there is no
    source; a first line that is not a definition is left to inspect."""
    code = fn.__code__
    filename = inspect.getsourcefile(code) or code.co_filename
    lines = linecache.getlines(filename, fn.__globals__)
    first = code.co_firstlineno
    if not (0 < first <= len(lines)) or not _DEFINITION.match(lines[first - 1]):
        found, first = inspect.getsourcelines(code)
        return found, first, filename
    return inspect.getblock(lines[first - 1:]), first, filename


def _body_span(code):
    """(line, column, end line, end column) of a lambda's body expression, from the
    positions of its code's instructions (Python 3.11+), or None."""
    positions = getattr(code, "co_positions", None)
    if positions is None:
        return None
    spans = [p for p in positions() if None not in p
             and not (p[0] == p[1] and p[2] == p[3] == 0)]   # RESUME and the like
    if not spans:
        return None
    start = min((p[0], p[2]) for p in spans)
    end = max((p[1], p[3]) for p in spans)
    return start + end


@functools.lru_cache(maxsize=16)
def _lambdas_of_file(filename, text):
    """The lambdas of a file's source ``text``, by the position of their body and their
    number of parameters (one walk of the file's tree, kept for the next lambda of the
    same file: a test file of hundreds of lambdas was walked whole for each)."""
    found = {}
    for node in gast.walk(gast.parse(text)):
        if isinstance(node, gast.Lambda):
            body = node.body
            key = (body.lineno, body.col_offset, body.end_lineno, body.end_col_offset,
                   len(node.args.args))
            found.setdefault(key, []).append(node)
    return found


def _lambda_in_file(fn):
    """``fn``'s lambda, found in the parse of its whole file by the position of its body
    (exact, however many lambdas share the line); None when that cannot be decided."""
    span = _body_span(fn.__code__)
    if span is None:
        return None
    try:
        file_lines, _ = inspect.findsource(fn)
        lambdas = _lambdas_of_file(fn.__code__.co_filename, "".join(file_lines))
    except (OSError, TypeError, SyntaxError, ValueError):
        return None
    found = lambdas.get(span + (fn.__code__.co_argcount,), [])
    if len(found) != 1:
        return None
    return _as_function_def(copy.deepcopy(found[0]))


def _lambda_as_function(source, fn):
    """Find ``fn``'s lambda in the source lines that hold it; return it as a FunctionDef."""
    tree = None
    text = source.strip()
    for candidate in (text, "(" + text + ")", text.rstrip(",)"), "(" + text.split("=", 1)[-1] + ")"):
        try:
            tree = gast.parse(candidate)
            break
        except SyntaxError:
            continue
    if tree is None:
        tree = _lambdas_in_fragment(text)
    if tree is None:
        raise SourceUnavailableError(
            f"{fn.__code__.co_filename}:{fn.__code__.co_firstlineno}: s2sgrad cannot find "
            f"where the lambda on this line starts and ends; give the function a name with "
            f"def")
    arity = fn.__code__.co_argcount
    names = list(fn.__code__.co_varnames[:arity])
    lambdas = [n for n in gast.walk(tree) if isinstance(n, gast.Lambda)
               and [a.id for a in n.args.args] == names]
    if len(lambdas) != 1:
        where = f"{fn.__code__.co_filename}:{fn.__code__.co_firstlineno}"
        params = ", ".join(names) or "no parameters"
        found = f"{len(lambdas)} lambdas" if lambdas else "no lambda"
        raise SourceUnavailableError(
            f"{where}: s2sgrad cannot tell which lambda to read: this line has {found} "
            f"with parameters ({params}); give the function a name with def")
    return _as_function_def(lambdas[0])


def _as_function_def(lam):
    """A Lambda node as the FunctionDef ``def lambda(<params>): return <body>``."""
    ret = gast.Return(value=lam.body)
    gast.copy_location(ret, lam)
    fdef = gast.FunctionDef(name="lambda", args=lam.args, body=[ret], decorator_list=[],
                            returns=None, type_comment=None, type_params=[])
    gast.copy_location(fdef, lam)
    return fdef


def is_user_code(fn):
    """True for functions s2sgrad reads: the user's own and s2sgrad's.  Functions of the
    standard library and of installed packages are calls without a rule instead."""
    module = getattr(fn, "__module__", "") or ""
    if module.startswith("s2sgrad"):
        return True
    return not _installed(getattr(fn.__code__, "co_filename", ""))


@functools.lru_cache(maxsize=4096)
def _installed(filename):
    """True for a file of the standard library or of installed packages (by its path; a
    path is looked up once: ``sysconfig.get_paths()`` takes tens of microseconds, and a
    driver making ``grad(f)`` per step asks for every one)."""
    path = os.path.abspath(filename)
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        root = sysconfig.get_paths().get(key)
        if root and path.startswith(os.path.abspath(root) + os.sep):
            return True
    return False
