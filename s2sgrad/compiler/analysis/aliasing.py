"""Which variables may share memory (``AliasTracking``, one per lowering): writes
through views and reads of values an in-place update changed behind their name are
refused.

The IR gives every value a name and follows in-place updates (``SetItem``) on
that name only.  numpy arrays share memory in many more ways: basic indexing
(``m[0]`` of a 2-D array, ``m[1:3]``, ``m[..., None]``), reshapes and
transposes, ``np.asarray``, ``np.split``, ``x.real``, a loop-carried or branch
variable assigned from another one (``m_1 = m`` in generated code), arrays kept
in lists, ``x += y`` on an array (in place for numpy).  Lowering records, per
variable, the ``roots`` (fresh arrays) whose memory it may share; then

- a write into a variable that may be a *view* (a part or another shape of a
  root) is refused: its root would change behind its name;
- a write into a variable (``SetItem``) makes every other variable sharing
  its memory *stale*; reading a stale variable is refused (``check_fresh``);
- ``x += y`` on an array is written in place (``x[:] = x + y``) when another name
  (of this function or of a caller: ``y = x``, a helper's parameter) holds the
  same array; else it rebinds ``x`` to a new array (as ``x = x + y``) and makes
  stale every other variable a name reaches that numpy would have updated;
- a loop whose body made a value stale that the body read earlier (it is read
  again by the next iteration) is refused;
- calls that write into their operands (``out=``, ``x.sort()``,
  ``np.copyto``...) are refused.

Every refusal is an ``UnsupportedConstructError`` at the user's line.
"""
import numpy as np

from ... import primitives as prims
from ..ir import Const, DictAtom, Seq, Var, atom_vars
from ..syntax.source import unsupported
from .typeinfo import ELEMENTWISE

_LIKE_MAKERS = None


#: numpy functions whose result may share memory with their first operand (or, for
#: the split family and np.broadcast_arrays, whose items do)
VIEW_FUNCTIONS = {np.reshape, np.transpose, np.ravel, np.squeeze, np.expand_dims, np.swapaxes,
                  np.moveaxis, np.rollaxis, np.asarray, np.asanyarray, np.ascontiguousarray,
                  np.asfortranarray, np.require, np.atleast_1d, np.atleast_2d, np.atleast_3d,
                  np.broadcast_to, np.broadcast_arrays, np.flip, np.fliplr, np.flipud, np.rot90,
                  np.diagonal, np.diag, np.real, np.imag, np.split, np.array_split, np.hsplit,
                  np.vsplit, np.dsplit, np.trim_zeros, np.einsum, np.lib.stride_tricks.as_strided,
                  np.lib.stride_tricks.sliding_window_view, prims.ASSIGN}
for _name in ("matrix_transpose", "permute_dims", "unstack", "asarray_chkfinite"):
    if hasattr(np, _name):
        VIEW_FUNCTIONS.add(getattr(np, _name))

#: numpy functions making a fresh array of the shape given first
ARRAY_MAKERS = {np.zeros, np.ones, np.empty, np.full}


def _like_makers():
    """Functions whose result has the rank of one operand: which operand (numpy's
    ``*_like``, and the runtime helpers generated code calls, differentiated again by
    higher-order transforms)."""
    from ... import runtime as rt
    table = {np.zeros_like: 0, np.ones_like: 0, np.empty_like: 0, np.full_like: 0,
             np.copy: 0}
    for name, k in (("zeros_like", 0), ("ones_like", 0), ("basis_tangent", 0),
                    ("copy_value", 0), ("writable", 1), ("unbroadcast", 1), ("unreduce", 1)):
        if hasattr(rt, name):
            table[getattr(rt, name)] = k
    return table

#: array attributes that are numbers or tuples, not arrays sharing the memory
PLAIN_ATTRIBUTES = {prims.attribute(a) for a in (
    "shape", "ndim", "size", "dtype", "nbytes", "itemsize", "strides", "flags")}

#: array methods (without a numpy function of the same rule) whose result is fresh
FRESH_METHODS = {prims.method(m) for m in (
    "tolist", "item", "tobytes", "searchsorted", "argpartition", "__len__")}

#: array methods that change the array they are called on
MUTATING_METHODS = {"sort": "y = np.sort(x)", "fill": "y = np.full_like(x, value)",
                    "partition": "y = np.partition(x, k)", "put": "y = x.copy(); y[idx] = v",
                    "itemset": "y = x.copy(); y[idx] = v", "resize": "y = np.resize(x, shape)",
                    "setfield": "build a new array", "byteswap": "y = x.byteswap()",
                    "__setitem__": "x[idx] = v", "__iadd__": "x = x + y",
                    "__isub__": "x = x - y", "__imul__": "x = x * y",
                    "__itruediv__": "x = x / y"}

#: numpy functions that write into an operand
MUTATING_FUNCTIONS = {np.copyto: "y = np.broadcast_to(src, dst.shape).copy()",
                      np.put: "y = x.ravel().copy(); y[idx] = v; y = y.reshape(x.shape)",
                      np.place: "y = np.where(mask, values, x)",
                      np.putmask: "y = np.where(mask, values, x)",
                      np.fill_diagonal: "y = x.copy(); y[np.arange(n), np.arange(n)] = v",
                      np.put_along_axis: "y = x.copy(); y[...] = ... by index assignment"}


def _item_atoms(index):
    """The items of an index atom: ``m[i, 1:3]`` -> [i, slice(1, 3)]."""
    if isinstance(index, Seq) and index.kind == "index":
        return list(index.items)
    if isinstance(index, Const) and isinstance(index.value, tuple):
        return [Const(v) for v in index.value]
    return [index]


class AliasTracking:
    """Memory sharing between the variables of one lowering; see the module doc.  Reads
    what ``types`` (a ``TypeInfo``) knows of ranks, ints, dtypes and run-time lists; owns
    its own tables (Var name -> ...)."""

    def __init__(self, types):
        self.types = types
        self.views = {}         # Var name -> the roots (fresh arrays) it may be a view of
        self.memory = {}        # Var name -> the roots whose memory it may share
        self.stale_views = set()  # variables whose memory was updated in place behind them
        self.made_ranks = {}    # Var name -> rank of an array made by np.zeros((2, 3)) & co
        self.item_ranks = {}    # Var name of a run-time list -> the rank of its items
        self.mutated = set()    # Var names of arrays updated in place (x[i] = v)
        self.shared_at_write = {}  # Var name -> what shared its memory when it was written

    def roots(self, name):
        """The fresh arrays whose memory variable ``name`` may share (itself for a root)."""
        return self.memory.get(name, frozenset((name,)))

    def sharing(self, name):
        """Every other variable known while building that may share ``name``'s memory."""
        return sharing(self.memory, name)

    def element_read(self, base, index):
        """True when ``base[index]`` surely picks single elements (a copy): as many
        integer indexes as the base's known rank, or an advanced (array, list, bool)
        index anywhere.  A slice, None or ``...`` with basic indexes, fewer integers
        than the rank, or a base of unknown rank may give a view."""
        items = _item_atoms(index)
        advanced = False
        basic_view = False
        for item in items:
            if isinstance(item, Seq):
                if item.kind == "slice":
                    basic_view = True
                else:
                    advanced = True        # a list of indexes
            elif isinstance(item, Const):
                value = item.value
                if value is None or value is Ellipsis or isinstance(value, slice):
                    basic_view = True
                elif isinstance(value, (bool, np.bool_, list, np.ndarray)):
                    advanced = True
            elif isinstance(item, Var) and item.name not in self.types.int_vars and \
                    (self.types.ndims.get(item.name) or 0) >= 1:
                advanced = True            # an index array
        if advanced:
            return True
        if basic_view:
            return False
        rank = self.rank_for_views(base)
        return rank is not None and len(items) >= rank

    def rank_for_views(self, atom):
        """The rank of an array variable where it is known: ``ndim_of``, or the rank an
        array-making call gave it (``np.zeros((2, 3))``, recorded by ``record_memory``)."""
        if not isinstance(atom, Var) or atom.name in self.types.lists:
            return None
        rank = self.types.ndim_of(atom)
        return rank if rank is not None else self.made_ranks.get(atom.name)

    def view_sources(self, prim, args, kwargs):
        """The array variables whose memory ``prim``'s result may share: its first operand
        for a view (several for np.broadcast_arrays, the operand of np.einsum), else none."""
        if prim is np.einsum:
            operands = [a for a in args[1:] if isinstance(a, Var)]
            return operands if len(args) == 2 else []
        if not self.makes_view(prim, args, kwargs):
            return []
        if prim in (np.broadcast_arrays, np.atleast_1d, np.atleast_2d, np.atleast_3d):
            return [a for a in args if isinstance(a, Var)]
        return [args[0]]

    def makes_view(self, prim, args, kwargs):
        """True when ``prim`` on ``args`` may give a view of (or the very array of) its
        first operand, not a fresh array."""
        if not args or not isinstance(args[0], Var):
            return False
        if prim == prims.GETITEM:
            return args[0].name in self.types.lists or not self.element_read(args[0], args[1])
        if isinstance(prim, str):
            if prim.startswith(prims.ATTRIBUTE_PREFIX):
                return prim not in PLAIN_ATTRIBUTES
            if prim.startswith(prims.METHOD_PREFIX):
                return prim not in FRESH_METHODS and prim != prims.SHAPE
            if prim == prims.ASTYPE:
                copy = kwargs.get("copy")
                return isinstance(copy, Var) or isinstance(copy, Const) and not copy.value
            return prim == prims.ASSIGN
        if prim is np.array:
            copy = kwargs.get("copy")
            return copy is not None and not (isinstance(copy, Const) and copy.value is True)
        return _member(prim, VIEW_FUNCTIONS)

    def record_memory(self, name, prim, args, kwargs):
        """After an Op assigned ``name``: note what memory it may share."""
        if prim == prims.GETITEM and self.types.ndim_of(Var(name)) is None:
            self.getitem_rank(name, *args)
        sources = self.view_sources(prim, args, kwargs)
        if sources:
            roots = frozenset().union(*(self.roots(a.name) for a in sources))
            self.memory[name] = roots
            self.views[name] = roots
        elif prim == prims.LIST:
            self.hold(name, args)
        elif _member(prim, ARRAY_MAKERS) and args:
            shape = args[0]
            if isinstance(shape, Const) and isinstance(shape.value, tuple):
                self.made_ranks[name] = len(shape.value)
            elif isinstance(shape, Seq):
                self.made_ranks[name] = len(shape.items)
            elif self.types.is_int(shape):
                self.made_ranks[name] = 1
        elif _member(prim, self.like_makers()) and not kwargs.get("shape"):
            k = self.like_makers()[prim]
            rank = self.rank_for_views(args[k]) if len(args) > k else None
            if rank is not None:
                self.made_ranks[name] = rank
        elif self.types.ndim_of(Var(name)) is None and (
                isinstance(prim, np.ufunc) or _member(prim, ELEMENTWISE)):
            ranks = [self.rank_for_views(a) if isinstance(a, Var) else self.types.ndim_of(a)
                     for a in list(args) + list(kwargs.values())]
            if ranks and None not in ranks:
                self.made_ranks[name] = max(ranks)

    def getitem_rank(self, name, base, index):
        """The rank of ``base[index]`` where the base's rank is known only here: an item of
        a run-time list (a tape), or integers into an array of a rank ``made_ranks`` knows."""
        if not isinstance(base, Var):
            return
        if base.name in self.types.lists:
            if not (isinstance(index, Seq) or isinstance(index, Const) and isinstance(
                    index.value, slice)) and self.item_ranks.get(base.name) is not None:
                self.made_ranks[name] = self.item_ranks[base.name]
            return
        rank = self.rank_for_views(base)
        items = _item_atoms(index)
        if rank is not None and len(items) <= rank and all(self.types.is_int(i) for i in items):
            self.made_ranks[name] = rank - len(items)

    def like_makers(self):
        """The table of ``_like_makers`` (built once)."""
        global _LIKE_MAKERS
        if _LIKE_MAKERS is None:
            _LIKE_MAKERS = _like_makers()
        return _LIKE_MAKERS

    def hold(self, container, atoms):
        """The run-time list ``container`` holds ``atoms``: what is read from it shares their
        memory (and is refused as a write target, like a view)."""
        roots = set(self.memory.get(container, ()))
        for n in (n for a in atoms for n in atom_vars(a)):
            roots |= self.roots(n)
        for atom in atoms:
            rank = self.rank_for_views(atom) if isinstance(atom, Var) else self.types.ndim_of(atom)
            if container not in self.item_ranks:
                self.item_ranks[container] = rank
            elif self.item_ranks[container] != rank:
                self.item_ranks[container] = None
        if roots:
            self.memory[container] = frozenset(roots)
            self.views[container] = frozenset(roots)

    def record_alias(self, target, atom):
        """``target = atom`` in generated code (a branch's or a loop's copy): ``target`` is
        the same array as ``atom``, a view when ``atom`` is, stale when ``atom`` is."""
        rank = self.rank_for_views(atom) if isinstance(atom, Var) else self.types.ndim_of(atom)
        if target not in self.made_ranks:
            self.made_ranks[target] = rank
        elif self.made_ranks[target] != rank:
            self.made_ranks[target] = None     # assigned arrays of different ranks
        if not isinstance(atom, Var):
            return
        self.memory[target] = self.roots(target) | self.roots(atom.name)
        if atom.name in self.views:
            self.views[target] = self.views.get(target, frozenset()) | self.views[atom.name]
        if atom.name in self.stale_views:
            self.stale_views.add(target)

    def mark_written(self, name):
        """``name`` is updated in place: every other variable sharing its memory no longer
        holds what its name says (reading it is refused).  Returns those variables."""
        shared = self.sharing(name)
        self.stale_views.update(shared)
        return frozenset(shared)

    def record_write(self, name):
        """``name[index] = value``: ``name`` and whatever shares its memory (a view, the
        array a branch or loop copied it from) are updated, their old values restored for
        adjoints that read them (``mutated``, ``shared_at_write``); the others are stale."""
        shared = self.mark_written(name)
        self.mutated.update(shared | {name})
        self.shared_at_write[name] = self.shared_at_write.get(name, frozenset()) | shared

    def shared_with_written(self):
        """Var name of each array updated in place -> every variable that may share its
        memory at a write: what shared it at the write itself, and every view of it made
        anywhere (``x = hidden[j]`` after ``hidden[j] = ...`` in a loop's body: from the
        next iteration on, the loop-carried ``x`` is a view of ``hidden`` when it is
        written, which the aliasing seen at the write did not hold).  An adjoint reading
        any of them needs the array's updates undone (``_Reverser.unneeded_restores``)."""
        return {name: shared | frozenset(v for v, roots in self.views.items()
                                         if v != name and roots & self.roots(name))
                for name, shared in self.shared_at_write.items()}

    def check_fresh(self, frame, node, atoms):
        """Refuse reading a variable that an in-place update changed behind its name (not
        in s2sgrad's own gradient code, lowered again for higher order: its ranks are
        often unknown then, and its adjoints share memory only where the reverse pass made
        that safe)."""
        if own_code(frame):
            return
        stale = [n for a in atoms for n in _deep_vars(a) if n in self.stale_views]
        if stale:
            raise unsupported(
                frame, node, f"{self.shown(frame, stale[0])} is a view of an array that was "
                f"updated in place after the view was taken, or shares its memory (an alias, "
                f"or `x += ...` on an array, which numpy does in place)",
                "take a copy (.copy()) before the update, or read the updated array itself "
                "after it")

    def check_write_target(self, frame, node, var, shown):
        """Refuse writing into a view (its base would change behind its name) or into an
        array another write changed behind its name."""
        if var in self.views and not own_code(frame):
            bases = ", ".join(sorted(self.shown(frame, b) for b in self.views[var]))
            raise unsupported(
                frame, node, f"writing into `{shown}`, which may be a view of "
                f"{bases} (numpy would change that array too)",
                "write into the array itself, e.g. y[1:3] = ... instead of v = y[1:3]; "
                "v[:] = ..., or write into a copy: v = y[1:3].copy()")
        self.check_fresh(frame, node, [Var(var)])

    def check_call(self, frame, node, prim, args, kwargs):
        """Refuse calls that write into an operand: ``out=``, ``x.sort()``, ``np.copyto``."""
        out = kwargs.get("out")
        if isinstance(prim, np.ufunc) and len(args) > prim.nin:
            out = args[prim.nin]       # np.add(a, b, a): the third operand is out
        if out is not None and not (isinstance(out, Const) and out.value is None):
            raise unsupported(frame, node, "a call with out= (it writes into an array "
                              "in place)", "use the result instead: y = np.add(a, b)")
        if isinstance(prim, str) and prim.startswith(prims.METHOD_PREFIX):
            name = prim[len(prims.METHOD_PREFIX):]
            if name in MUTATING_METHODS:
                raise unsupported(frame, node, f"x.{name}(...) changes the array in place",
                                  f"make a new array instead: {MUTATING_METHODS[name]}")
            return
        hint = MUTATING_FUNCTIONS.get(prim) if _member(prim, MUTATING_FUNCTIONS) else None
        owner = getattr(prim, "__self__", None)
        if hint is None and isinstance(owner, np.ufunc) and getattr(prim, "__name__", "") == "at":
            hint = "y = x.copy(); y[idx] = y[idx] + v (np.add.at adds repeated indices; " \
                   "s2sgrad's index assignment does not)"
        if hint is None and getattr(prim, "__name__", "") in ("shuffle",) and owner is not None:
            hint = "y = x[rng.permutation(len(x))]"
        if hint is None and prim is np.nan_to_num and isinstance(kwargs.get("copy"), Const) \
                and kwargs["copy"].value is False:
            hint = "leave copy=True (the default)"
        if hint is not None:
            name = getattr(prim, "__name__", str(prim))
            raise unsupported(frame, node, f"{name}(...) writes into an array in place",
                              f"make a new array instead: {hint}")

    def user_name(self, frame, var):
        """The user's name for variable ``var`` in ``frame`` (or a caller) where it has one,
        else None."""
        while frame is not None:
            for key, atom in frame.env.items():
                if isinstance(atom, Var) and atom.name == var:
                    return key
            frame = frame.caller
        return None

    def shown(self, frame, var):
        """``var`` in a message: its user's name in backquotes, or what it is."""
        name = self.user_name(frame, var)
        return f"`{name}`" if name is not None else "an array computed in an expression"

    def observers(self, frame, name):
        """Variables, other than the one ``name`` is bound to, that some name of this
        function, of a caller or of a closure reaches and that share that variable's
        memory (or are the same variable under another name)."""
        atom = frame.env.get(name)
        if not isinstance(atom, Var):
            return set()
        shared = self.sharing(atom.name) | {atom.name}
        seen = set()
        found = set()
        todo = [(frame, name)]
        while todo:
            f, skip = todo.pop()
            if id(f) in seen:
                continue
            seen.add(id(f))
            for key, value in f.env.items():
                if f is frame and key == skip:
                    continue
                found |= set(_deep_vars(value)) & shared
            for other in (getattr(f, "caller", None), getattr(f, "closure", None)):
                if other is not None:
                    todo.append((other, None))
        return found

    def in_place_update(self, frame, stmt, name):
        """``name op= value`` on an array: numpy updates the array in place.  True when it
        is lowered so (``name[:] = name op value``): another name of this function or of a
        caller holds the very same array, which is a float array of known rank and not a
        view.  Else ``name`` is rebound to a new array, and whatever else a name reaches
        that shares the old one's memory is stale from here on (reading it is refused)."""
        atom = frame.env.get(name)
        if not isinstance(atom, Var) or atom.name in self.types.int_vars or \
                self.rank_for_views(atom) == 0:
            return False                    # a number: += makes a new one in Python too
        observers = self.observers(frame, name)
        if atom.name in observers and atom.name not in self.views and \
                atom.name not in self.stale_views and (self.rank_for_views(atom) or 0) >= 1 \
                and atom.name in self.types.dtypes:
            return True
        self.stale_views.update(observers)
        return False


def own_code(frame):
    """True when ``frame`` lowers s2sgrad's own generated code (a gradient differentiated
    again: its modules are ``s2sgrad_generated.*``, ``backend/cache.py``)."""
    module = getattr(frame.parsed.fn, "__module__", None) or ""
    return module.startswith("s2sgrad_generated.")


def sharing(memory, name):
    """Every other variable that may share ``name``'s memory, from ``memory`` (Var name ->
    the roots whose memory it may share; absent: only its own)."""
    roots = memory.get(name, frozenset((name,)))
    names = {v for v, r in memory.items() if r & roots}
    return (names | roots) - {name}


def _member(prim, table):
    """``prim in table`` for a set or dict; False for an unhashable primitive."""
    try:
        return prim in table
    except TypeError:
        return False


def _deep_vars(atom):
    """The Var names an atom holds, inside tuples, lists and dicts too."""
    if isinstance(atom, DictAtom):
        return [n for k, v in atom.pairs for n in _deep_vars(k) + _deep_vars(v)]
    if isinstance(atom, Seq):
        return [n for item in atom.items for n in _deep_vars(item)]
    return atom_vars(atom)
