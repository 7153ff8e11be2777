"""vmap end to end: a function and its arguments' axes -> the source of its batched version.

``build_vmap(fn, batching, ranks, numba)`` takes the function (a plain function, or any
callable such as a derivative object), a ``batch.loops.Batching`` (names, axes, the
structure of one result) and each argument's per-example rank (None where the arguments
are not all plain arrays or numbers), and writes one module whose ``make`` gives the
batched function.  The form is chosen by one rule:

- **vectorised** when ``fn`` is a plain Python function without loops whose every
  operation has a batching rule (``batch/vectorise.py``): one pass of whole-array numpy;
- otherwise the **loop form** (``batch/loops.py``): ``fn`` once per index of the mapped
  axis, written as a ``prange`` loop compiled with ``numba.njit(parallel=True)`` when
  ``numba`` is true (the caller's rule, ``api/vmap.py``: every argument is an array or a
  number, and ``fn`` is a plain function with loops that Numba compiles, or a derivative
  object whose code ran compiled, called through that code with ``batching.picks``
  saying what to take of its results), else a Python ``range`` loop; ``not_compiled``
  says why not, in the module and in ``not_vectorised``.

``build_differentiable(fn, batching, n_outputs)`` writes the loop that the derivative
transforms read when they differentiate a vmap (``grad(vmap(f))``, a vmapped function
called inside a differentiated one): the loop form spelled with lists and ``np.stack``.
"""
import builtins
import inspect
import os
import textwrap

import gast

from .batch.loops import INDENT, differentiable_lines, rows_lines, size_line
from .batch.vectorise import NotVectorisable, bare, vectorise
from .front.frontend import is_user_code

FORM_TEXT = {
    "vectorised": "Vectorised form: the function's loop-free array code, each operation "
                  "batched by its rule\n(the mapped axis first).",
    "numba": "Loop form, compiled: the function runs once per index b of the mapped axis "
             "and writes row b\nof each output; numba.njit(parallel=True) runs the prange "
             "over every core (each row is\nwritten by one index only, so the result is "
             "the sequential one).",
    "python": "Loop form: the function runs once per index b of the mapped axis and "
              "writes row b of each\noutput.",
}


class GeneratedVmap:
    """A generated batched function, before it is loaded: ``source`` (the module text),
    ``function_name`` (what ``make(fn, jit, unmapped)`` gives), ``form`` ('vectorised',
    'numba' or 'python'), ``not_vectorised`` (why not, for the loop forms) and ``reads``
    (below)."""

    def __init__(self, source, function_name, form, not_vectorised, reads=None):
        self.source = source
        self.function_name = function_name
        self.form = form
        self.not_vectorised = not_vectorised
        #: the vectorised form: each name of the function's globals, closure or builtins
        #: its body reads, and the object it was when the form was written (the form
        #: writes what it called, ``np.tanh`` for ``act``: ``still_read`` tells a change)
        self.reads = reads or {}


def parsed_function(fn):
    """(gast FunctionDef, its first line, its file) of a plain function, or None."""
    if not inspect.isfunction(fn) or fn.__name__ == "<lambda>":
        return None
    try:
        lines, first = inspect.getsourcelines(fn.__code__)
    except (OSError, TypeError):
        return None
    node = gast.parse(textwrap.dedent("".join(lines))).body[0]
    if not isinstance(node, gast.FunctionDef):
        return None
    return node, first, inspect.getsourcefile(fn.__code__) or fn.__code__.co_filename


def has_loops(fdef):
    """True when the parsed function has a for or while loop (its own code only)."""
    return any(isinstance(n, (gast.For, gast.While)) for n in gast.walk(fdef))


def _namespace(fn):
    names = dict(fn.__globals__)
    if fn.__closure__:
        for name, cell in zip(fn.__code__.co_freevars, fn.__closure__):
            try:
                names[name] = cell.cell_contents
            except ValueError:       # an empty cell
                pass
    return names


def _vectorised_lines(fn, batching, ranks, ints=()):
    """The vectorised body (``batch/vectorise.py``) with the mapped axes moved first and
    the outputs moved to their out_axes; raises NotVectorisable."""
    if getattr(fn, "derivative_mode", None) is not None:
        raise NotVectorisable(f"it is a derivative object ({type(fn).__name__}), run as a "
                              f"whole per index")
    parsed = parsed_function(fn)
    if parsed is None or ranks is None:
        raise NotVectorisable("its source cannot be read as one function")
    fdef, first, filename = parsed
    if has_loops(fdef):
        raise NotVectorisable("it has loops")
    own = [a.id for a in fdef.args.args]
    if fdef.args.vararg or fdef.args.kwonlyargs or len(own) != len(batching.params):
        raise NotVectorisable("its parameters are not plain positional ones")
    lines, mapped = [], set()
    for name, param, axes in zip(own, batching.params, batching.arg_axes):
        if axes[0] is not None:
            mapped.add(name)
        if axes[0]:
            lines.append(f"{name} = np.moveaxis({param}, {axes[0]}, 0)")
        elif name != param:
            lines.append(f"{name} = {param}")
    body, outputs, _, inlined = vectorise(
        fdef, _namespace(fn), dict(zip(own, ranks)), mapped, _commenter(fn, first, filename),
        [name for name, i in zip(own, ints) if i], helper=_helper)
    if len(outputs) != len(batching.out_axes):
        raise NotVectorisable("its outputs are not a flat tuple of arrays")
    lines.extend(body)
    finals = []
    for (text, batched, rank), axis in zip(outputs, batching.out_axes):
        if axis is None:
            finals.append(f"unmapped({text}, {len(finals)})" if batched else text)
            continue
        if not batched:
            lines.insert(0, size_line(batching))
            text = f"np.repeat(np.asarray({text})[None], n, axis=0)"
        finals.append(bare(text) if axis == 0 else f"np.moveaxis({bare(text)}, 0, {axis})")
    if any("unmapped(" in f for f in finals) and not any(batched for _, batched, _ in outputs):
        raise NotVectorisable("no output depends on the mapped axis")
    lines.append("return " + ", ".join(finals))
    reads = _outside_reads(fdef, fn)
    for helper in inlined:       # (what a helper reads: checked with the helper's names)
        reads.update({(helper, name): value for name, value in
                      _outside_reads(parsed_function(helper)[0], helper).items()})
    return lines, reads


def _helper(fn):
    """(FunctionDef, namespace, comment function) of a user function the vectorised form
    inlines where the function vmap maps calls it, or None (a library's, s2sgrad's, or
    one whose source cannot be read)."""
    if (getattr(fn, "__module__", "") or "").startswith("s2sgrad") or not is_user_code(fn):
        return None
    parsed = parsed_function(fn)
    if parsed is None:
        return None
    fdef, first, filename = parsed
    return fdef, _namespace(fn), _commenter(fn, first, filename)


def _commenter(fn, first, filename):
    """``comment(node)``: the line of ``fn`` a statement of its parsed source comes from,
    as the comment the vectorised form writes above it."""
    source = inspect.getsourcelines(fn.__code__)[0]

    def comment(node):
        text = source[node.lineno - 1].strip() if node.lineno - 1 < len(source) else ""
        return f"# {text}  ({os.path.basename(filename)}:{first + node.lineno - 1})"
    return comment


_MISSING = object()


def _outside_reads(fdef, fn):
    """{name: its object now} for each name ``fdef`` reads that it does not bind (its
    globals, closure values and builtins)."""
    bound = {a.id for a in fdef.args.args} | {
        n.id for n in gast.walk(fdef) if isinstance(n, gast.Name)
        and isinstance(n.ctx, (gast.Store, gast.Del))}
    read = {n.id for n in gast.walk(fdef) if isinstance(n, gast.Name)
            and isinstance(n.ctx, gast.Load)} - bound
    return {name: _current(fn, name) for name in sorted(read)}


def _current(fn, name):
    """What ``name`` is for ``fn`` now: its closure cell's value, else its global, else the
    builtin (``_MISSING`` where none)."""
    code = fn.__code__
    if fn.__closure__ and name in code.co_freevars:
        try:
            return fn.__closure__[code.co_freevars.index(name)].cell_contents
        except ValueError:       # an empty cell
            return _MISSING
    found = fn.__globals__.get(name, _MISSING)
    return getattr(builtins, name, _MISSING) if found is _MISSING else found


def still_read(fn, reads):
    """The check that every name in ``reads`` (``GeneratedVmap.reads``) is still the
    object it was for ``fn`` (True while it holds; a vmap builds its form again where it
    does not), or None where there is nothing to check."""
    if not reads:
        return None
    items = [((key if isinstance(key, tuple) else (fn, key)), value)
             for key, value in reads.items()]      # (a helper's names: (helper, name))
    return lambda: all(_current(owner, name) is value for (owner, name), value in items)


def build_vmap(fn, batching, ranks, numba, not_compiled=None, ints=()):
    """The GeneratedVmap of ``fn`` for ``batching`` (see the module doc); ``not_compiled``:
    why the loop form is not compiled (said in the module and in ``not_vectorised``);
    ``ints``: per argument, whether it holds integers (an index, for the vectorised form)."""
    name = batching.name
    params = ", ".join(batching.params)
    try:
        body, reads = _vectorised_lines(fn, batching, ranks, ints)
        form, reason = "vectorised", None
    except NotVectorisable as exc:
        body, form, reason, reads = None, "numba" if numba else "python", str(exc), None
        if not numba and not_compiled:
            reason += f"; not compiled: {not_compiled}"
    header = f'{batching.header}, generated by s2sgrad.\n\n{FORM_TEXT[form]}'
    if batching.calls and form != "vectorised":
        header += "\n" + textwrap.fill(f"{name} is {batching.calls}.", 92)
    if reason:
        header += "\n" + textwrap.fill(f"Not vectorised: {reason}.", 92)
    lines = [docstring(header), "import numpy as np"]
    if form == "numba":
        lines.append("from numba import prange")
    lines += ["", "", f"def make({name}, jit, unmapped):"]
    function_name = f"{name}_vmap"
    if form == "vectorised":
        lines.append(f"    def {function_name}({params}):")
        lines.extend(INDENT + line for line in body)
    else:
        rows = rows_lines(batching, name, "prange" if form == "numba" else "range")
        lines.append(f"    @jit    # {'numba.njit(parallel=True)' if form == 'numba' else 'as written'}")
        lines.append(f"    def {name}_rows({params}):")
        lines.extend(INDENT + line for line in rows)
        moved = [a != 0 for a in batching.out_axes]
        if any(moved):
            outs = [f"out_{k}" for k in range(len(moved))]
            finals = [o if a == 0 else f"unmapped({o}, {k})" if a is None else
                      f"np.moveaxis({o}, 0, {a})"
                      for k, (o, a) in enumerate(zip(outs, batching.out_axes))]
            lines += ["", f"    def {function_name}({params}):",
                      f"        {', '.join(outs)} = "     # (one output: its array)
                      f"{name}_rows({params})",
                      f"        return {', '.join(finals)}"]
        else:
            function_name = f"{name}_rows"
    lines += ["", f"    return {function_name}", ""]
    return GeneratedVmap("\n".join(lines), function_name, form, reason, reads)


def docstring(text):
    """``text`` as a module docstring's source: its backslashes and triple quotes (a reason
    quoting the user's string literal, ``'ijk,mik->mij'``, is written by astor as
    ``\"\"\"ijk,mik->mij\"\"\"``) escaped, so the module always parses."""
    escaped = text.replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    return f'"""{escaped}\n"""'


def build_differentiable(batching, n_outputs):
    """The module of the differentiable loop (see the module doc): ``make(fn)`` gives
    ``<name>_vmap(<params>)``."""
    name = batching.name
    lines = [docstring(f"{batching.header}, generated by s2sgrad: the loop the derivative "
                       f"transforms read."), "import numpy as np", "", "",
             f"def make({name}):", f"    def {name}_vmap({', '.join(batching.params)}):"]
    lines.extend(INDENT + line for line in differentiable_lines(batching, name, n_outputs))
    lines += ["", f"    return {name}_vmap", ""]
    return "\n".join(lines)
