"""Frontend: a Python function (or a Cell's construct) -> its gast FunctionDef and scope.

``parse_function(fn)`` returns a ``ParsedFunction``: the FunctionDef node
(lambdas become a FunctionDef that returns the body), the file and first
line for messages, and a ``Scope`` that resolves every free name the way
Python would when the function runs (closure cells, module globals, builtins).
"""
import builtins
import inspect
import linecache
import os
import sysconfig
import textwrap

import gast

from ..errors import SourceLocation, SourceUnavailableError

_MISSING = object()


class Scope:
    """Resolves names that are not local to the function: closure, globals, builtins."""

    def __init__(self, fn):
        self.globals = getattr(fn, "__globals__", {})
        code = fn.__code__
        self.closure = {}
        if fn.__closure__:
            for name, cell in zip(code.co_freevars, fn.__closure__):
                try:
                    self.closure[name] = cell.cell_contents
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


def parse_function(fn):
    """Read and parse ``fn``'s source. Raises SourceUnavailableError when it cannot be read."""
    fn = inspect.unwrap(fn)
    if not inspect.isfunction(fn):
        raise SourceUnavailableError(
            f"s2sgrad can only read Python functions, got {fn!r}; wrap it in a def, or "
            f"register a rule for it with s2sgrad.custom_vjp")
    try:
        lines, first_line = inspect.getsourcelines(fn)
        filename = inspect.getsourcefile(fn) or fn.__code__.co_filename
    except (OSError, TypeError) as exc:
        raise SourceUnavailableError(
            f"cannot read the source of {fn.__qualname__} ({exc}); s2sgrad differentiates "
            f"source code, so define the function in a file (not in an interactive prompt "
            f"or through exec)") from exc
    source = textwrap.dedent("".join(lines))
    if fn.__name__ == "<lambda>":
        node = _lambda_as_function(source, fn)
    else:
        module = gast.parse(source)
        node = module.body[0]
        while isinstance(node, gast.ClassDef):  # pragma: no cover - defensive
            node = node.body[0]
    gast.increment_lineno(node, first_line - 1)
    return ParsedFunction(fn, node, filename, first_line, lines)


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
            f"cannot isolate the lambda on line {fn.__code__.co_firstlineno} of "
            f"{fn.__code__.co_filename}; give it a name with def")
    arity = fn.__code__.co_argcount
    names = list(fn.__code__.co_varnames[:arity])
    lambdas = [n for n in gast.walk(tree) if isinstance(n, gast.Lambda)
               and [a.id for a in n.args.args] == names]
    if len(lambdas) != 1:
        raise SourceUnavailableError(
            f"{len(lambdas)} lambdas with parameters {names} on line "
            f"{fn.__code__.co_firstlineno} of {fn.__code__.co_filename}; s2sgrad cannot tell "
            f"which one to read: give it a name with def")
    lam = lambdas[0]
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
    path = os.path.abspath(getattr(fn.__code__, "co_filename", ""))
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        root = sysconfig.get_paths().get(key)
        if root and path.startswith(os.path.abspath(root) + os.sep):
            return False
    return True
