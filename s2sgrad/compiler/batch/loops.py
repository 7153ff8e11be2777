"""The loop form of vmap: the batched function as a loop over the mapped axis.

Takes a ``Batching`` (the function's name, the generated parameter names, each
argument's structure and the axis of each of its leaves, the structure, ranks and
dtypes of one result, each output leaf's out_axis, and where the loop calls a
derivative's compiled code rather than the function, how each result leaf is picked out
of what that code returns) and gives source lines:

- ``rows_lines``: the rows function, run for a call: the result at index 0 gives the
  outputs' shapes, each output gets a preallocated array with the mapped axis first,
  and the loop over the remaining indices writes row ``b`` of each (``prange`` where
  the module compiles it with ``numba.njit(parallel=True)``: every row is written by
  one index only, so the parallel result is the sequential one; there an array row is
  written item by item, which Numba compiles in far less time than a row assignment);
- ``differentiable_lines``: the same loop spelled for the derivative transforms
  (``grad(vmap(f))``, a vmapped function called inside a differentiated one): results
  appended to lists and stacked, which reverse and forward mode both read.
"""
import re
from dataclasses import dataclass, field

from ...trees import leaf_paths

INDENT = " " * 8


@dataclass
class Batching:
    """What every form of one vmap is written from (see the module doc)."""
    name: str                    # the batched function's name (the user's)
    params: list                 # generated parameter names, one per argument
    arg_trees: list              # per argument: its structure (trees.flatten), None: a leaf
    arg_axes: list               # per argument: per leaf the mapped axis (>= 0) or None
    out_tree: object = None      # the structure of one result (None: one array)
    out_ranks: list = field(default_factory=list)    # per output leaf: its rank
    out_dtypes: list = field(default_factory=list)   # per output leaf: its numpy dtype name
    out_axes: list = field(default_factory=list)     # per output leaf: out axis or None
    origin: str = ""             # "file:line" of the user's function
    header: str = ""             # one line: vmap of what, with which axes
    #: per output leaf, source text over "{r}" picking it out of what the called function
    #: returns (a derivative object's compiled code: ``api/compiled_call.py``); None: the
    #: function returns the result itself
    picks: list = None
    calls: str = ""              # one line: what the loop calls, when it is not the function

    def mapped_leaves(self):
        """(argument index, leaf path, axis) of every mapped leaf, in argument order."""
        return [(i, path, axis) for i, (tree, axes) in enumerate(zip(self.arg_trees,
                                                                     self.arg_axes))
                for path, axis in zip(leaf_paths(tree), axes) if axis is not None]


def size_line(batching):
    """``n = x.shape[k]``: the mapped size, read from the first mapped leaf (the call
    checked that every mapped leaf has it)."""
    i, path, axis = batching.mapped_leaves()[0]
    return f"n = {batching.params[i]}{path}.shape[{axis}]"


def _row(text, axis, index):
    """The row ``index`` of ``text`` along ``axis``: ``x[b]``, ``x[:, b]``."""
    return f"{text}[{', '.join([':'] * axis + [index])}]"


def example_args(batching, index, rows=None):
    """The arguments of one example, as source text: each mapped leaf's row ``index``,
    each structure rebuilt around its leaves (``rows``: per (argument, path) a name
    already holding the leaf with its mapped axis first)."""
    texts = []
    for i, (tree, axes) in enumerate(zip(batching.arg_trees, batching.arg_axes)):
        leaves = []
        for path, axis in zip(leaf_paths(tree), axes):
            leaf = f"{batching.params[i]}{path}"
            if axis is not None and rows is not None and (i, path) in rows:
                leaves.append(f"{rows[(i, path)]}[{index}]")
            else:
                leaves.append(leaf if axis is None else _row(leaf, axis, index))
        texts.append(structure_text(tree, iter(leaves)))
    return ", ".join(texts)


def structure_text(tree, leaves):
    """Source text of the structure ``tree`` around the texts ``leaves`` (an iterator);
    TypeError for a namedtuple (its type has no name generated code can write)."""
    if tree is None:
        return next(leaves)
    kind, children = tree[0], tree[1]
    if kind == "namedtuple":
        raise TypeError("a namedtuple cannot be written as source text")
    if kind == "dict":
        return "{" + ", ".join(f"{k!r}: {structure_text(c, leaves)}" for k, c in children) + "}"
    items = [structure_text(c, leaves) for c in children]
    if kind == "list":
        return "[" + ", ".join(items) + "]"
    return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"


def _dtype_text(name):
    return "np.bool_" if name == "bool" else f"np.{name}"


def rows_lines(batching, fn_name, loop="prange"):
    """The body of the rows function (see the module doc): the loop over the mapped axis
    with ``loop`` (``prange`` or ``range``), returning each output with the mapped axis
    first."""
    paths = leaf_paths(batching.out_tree)
    picks = batching.picks or ["{r}" + path for path in paths]
    outs = [f"out_{k}" for k in range(len(paths))] if len(paths) > 1 else ["out"]
    call = f"{fn_name}({example_args(batching, 'b')})"
    lines = [size_line(batching),
             f"# {batching.name} at index 0 gives the outputs' shapes and dtypes",
             f"first = {fn_name}({example_args(batching, '0')})"]
    # compiled: an array row is written item by item, through a view with one row per
    # index (Numba compiles that in a second, a whole-row assignment's shape check in
    # several)
    by_item = [loop == "prange" and rank > 0 for rank in batching.out_ranks]
    for out, pick, rank, dtype, item in zip(outs, picks, batching.out_ranks,
                                            batching.out_dtypes, by_item):
        row = pick.format(r="first")
        if not re.fullmatch(r"\{r\}(\[\d+\])*", pick):     # more than an item: once
            lines.append(f"{out}_first = {row}")
            row = f"{out}_first"
        shape = f"(n,) + {row}.shape" if rank else "n"
        lines.append(f"{out} = np.empty({shape}, {_dtype_text(dtype)})")
        if item:
            lines.append(f"{out}_items = {out}.reshape(n, -1)   # row b: {out}_items[b]")
            lines.extend(_row_by_item(out, row, "0"))
        else:
            lines.append(f"{out}[0] = {row}")
    lines.append(f"for b in {loop}(1, n):")
    if batching.picks is None and len(paths) == 1 and batching.out_tree is None \
            and not by_item[0]:
        lines.append(f"    out[b] = {call}")
        lines.append(f"return {', '.join(outs)}")
        return lines
    lines.append(f"    result = {call}")
    for out, pick, item in zip(outs, picks, by_item):
        if not item:
            lines.append(f"    {out}[b] = {pick.format(r='result')}")
            continue
        lines.extend("    " + line for line in _row_by_item(out, pick.format(r="result"),
                                                             "b"))
    lines.append(f"return {', '.join(outs)}")
    return lines


def _row_by_item(out, row, index):
    """Lines writing the array ``row`` (source text) into row ``index`` of ``out``, item
    by item through ``<out>_items``."""
    return [f"{out}_row = {row}.ravel()",
            f"for k in range({out}_row.size):",
            f"    {out}_items[{index}, k] = {out}_row[k]"]


def differentiable_lines(batching, fn_name, n_outputs):
    """The body of the differentiable loop (see the module doc) for a function giving
    ``n_outputs`` arrays (1: one array, k > 1: a tuple of k)."""
    rows, lines = {}, [size_line(batching)]
    for i, path, axis in batching.mapped_leaves():
        if axis:
            rows[(i, path)] = f"{batching.params[i]}_rows"
            lines.append(f"{rows[(i, path)]} = np.moveaxis({batching.params[i]}{path}, "
                         f"{axis}, 0)")
    outs = [f"out_{k}" for k in range(n_outputs)] if n_outputs > 1 else ["out"]
    lines.extend(f"{out} = []" for out in outs)
    lines.append("for b in range(n):")
    call = f"{fn_name}({example_args(batching, 'b', rows)})"
    if n_outputs == 1:
        lines.append(f"    out.append({call})")
    else:
        lines.append(f"    result = {call}")
        lines.extend(f"    {out}.append(result[{k}])" for k, out in enumerate(outs))
    finals = []
    for out, axis in zip(outs, batching.out_axes or [0] * len(outs)):
        stacked = f"np.stack({out})"
        finals.append(stacked if axis == 0 else f"{out}[0]" if axis is None else
                      f"np.moveaxis({stacked}, 0, {axis})")
    lines.append(f"return {', '.join(finals)}")
    return lines
