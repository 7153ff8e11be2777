"""One naming scheme, and one allocator, for the generated function.

Forward values keep the user's names (a reassigned name gets ``_1``, ``_2``...: the
SSA versions of a user's variable; no temporary ends in ``_<digits>``, though a name
the generator invents for its own bookkeeping, ``n_iter`` or a tape, still gets ``_1``
when it repeats, and the adjoint of ``loss_1`` is ``dloss_1``).  A temporary is named
(``temp``), in this order:

1. from what it holds where that is short and free (``x_at_w`` for ``x @ w``,
   ``exp_z``, ``z_ge0``; ``describe``, which speaks of a version ``x_1`` as ``x``, the
   name in the user's line);
2. else by the word the caller knows it by: the parameter of the inlined callee the
   value is bound to (``ones_like(z)`` passed twice to ``f(logits, label, weight,
   pos_weight)``: ``ones_like_z``, then ``pos_weight``), where that is free (the
   callee's source is claimed after its arguments are lowered: the word is the callee's
   own name for the value, never a name of the source claimed before);
3. else ``t1``, ``t2``...

never ``<description>_<n>``, which would read as a version of a user's variable.  The
adjoint of ``x`` is ``dx``.  A rule template's own locals are temporaries too: their
names in the template never reach generated code.

Every name the generated code holds comes from the function's ``NameAllocator``:

- ``claim_source(node)`` first claims every identifier of a function's source (its
  parameters, locals, the globals and modules it reads); the lowerer calls it for the
  differentiated function and for every function, method and Cell ``construct`` it
  inlines, before lowering its body;
- ``variable(hint)`` names a value of the user's program (an SSA version of one of
  its variables): it may take the user's own name;
- ``fresh(hint)`` (and ``temp``, ``adjoint``, ``module``) names something the
  generator invents (an adjoint, a tape stack, an iteration counter, the output,
  a rule template's local): it never takes a name of the user's source, so a
  generated name can never capture (overwrite) a user's variable, and a user's
  ``value``, ``dx``, ``n_iter`` or ``t1`` stays what the user meant.

Names of builtins and of the modules generated code imports (``np``, ``math``,
``rt``) are never handed out.
"""
import builtins
import keyword
import re

import gast

#: never a generated name, and a user's own name equal to one is versioned (``rt`` ->
#: ``rt_1``): builtins, keywords, the modules generated code imports, and the module
#: global a fused loop's guard reads (``SKIP_ELSE``: a user's local of that name read
#: there raised the guard's exception)
RESERVED = frozenset(dir(builtins)) | frozenset(keyword.kwlist) | {"np", "math", "rt", "d",
                                                                   "SKIP_ELSE"}

#: the longest name a temporary gets from what it holds (a longer one is ``t<n>``)
DESCRIPTION_LIMIT = 16
_OPERATORS = {gast.Add: "plus", gast.Sub: "minus", gast.Mult: "times", gast.Div: "over",
              gast.FloorDiv: "floordiv", gast.Mod: "mod", gast.Pow: "pow", gast.MatMult: "at",
              gast.Lt: "lt", gast.LtE: "le", gast.Gt: "gt", gast.GtE: "ge", gast.Eq: "eq",
              gast.NotEq: "ne"}
_COMMUTATIVE = (gast.Add, gast.Mult)
#: how a version of a user's variable ends (``loss_1``): no other name ends so
_VERSION = re.compile(r"_[0-9]+$")


def describe(expr, opaque=frozenset(), versions=None):
    """A short name for what ``expr`` (a gast expression over names and constants)
    computes: ``x @ w`` -> ``x_at_w``, ``np.exp(z)`` -> ``exp_z``, ``-a`` -> ``neg_a``,
    ``z >= 0`` -> ``z_ge0``, ``x.T`` -> ``x_T``, ``xs[i]`` -> ``xs_i``, ``x.shape[0]`` ->
    ``x_shape0`` (a number joins the word before it); a version of a user's variable
    (``versions``: ``{"x_1": "x"}``) is spoken of by the user's name, ``x_1 * x_1`` ->
    ``x_times_x``.  None when it has no such name (a slice, keywords, a float, a name in
    ``opaque``), the name would be longer than ``DESCRIPTION_LIMIT`` or would end in
    ``_<digits>`` (the mark of a version: ``exp_x_0`` for a user's ``x_0``)."""
    text = _describe(expr, opaque, versions or {}) if not isinstance(expr, gast.Name) \
        else None
    if text is None or len(text) > DESCRIPTION_LIMIT or not text.isidentifier() or \
            _VERSION.search(text):
        return None
    return text


def _joined(parts):
    """``parts`` joined by ``_``, a number joined to the part before it (``x_minus1``)."""
    if None in parts:
        return None
    text = parts[0]
    for part in parts[1:]:
        text += part if part.isdigit() and text else "_" + part
    return text


def _describe(node, opaque, versions):
    """``describe`` without the limits (None where a part has no name)."""
    if isinstance(node, gast.Name):
        name = versions.get(node.id, node.id)
        return None if node.id in opaque else name.strip("_") or None
    if isinstance(node, gast.Constant):
        value = node.value
        return str(value) if isinstance(value, int) and not isinstance(value, bool) and \
            value >= 0 else None
    if isinstance(node, (gast.BinOp, gast.Compare)):
        if isinstance(node, gast.Compare) and len(node.ops) != 1:
            return None
        left, op, right = (node.left, node.op, node.right) if isinstance(node, gast.BinOp) \
            else (node.left, node.ops[0], node.comparators[0])
        if isinstance(op, _COMMUTATIVE) and isinstance(left, gast.Constant):
            left, right = right, left   # 2 * x -> x_times2
        return _joined([_describe(left, opaque, versions), _OPERATORS.get(type(op)),
                        _describe(right, opaque, versions)])
    if isinstance(node, gast.UnaryOp):
        inner = _describe(node.operand, opaque, versions)
        prefix = {gast.USub: "neg_", gast.Not: "not_", gast.UAdd: ""}.get(type(node.op))
        return prefix + inner if inner is not None and prefix is not None else None
    if isinstance(node, gast.Attribute):
        base = _describe(node.value, opaque, versions)
        return None if base is None else f"{base}_{node.attr}"
    if isinstance(node, gast.Subscript):
        if isinstance(node.slice, (gast.BinOp, gast.Call)):
            return None
        return _joined([_describe(node.value, opaque, versions),
                        _describe(node.slice, opaque, versions)])
    if isinstance(node, gast.Call) and not node.keywords:
        func = node.func.attr if isinstance(node.func, gast.Attribute) else \
            node.func.id if isinstance(node.func, gast.Name) else None
        return _joined([func] + [_describe(a, opaque, versions) for a in node.args])
    return None


def source_names(node):
    """Every identifier a (gast) function node mentions: names read and written,
    parameters, nested functions' names and parameters, imported aliases."""
    names = set()
    for n in gast.walk(node):
        if isinstance(n, gast.Name):
            names.add(n.id)
        elif isinstance(n, (gast.FunctionDef, gast.ClassDef)):
            names.add(n.name)
        elif isinstance(n, gast.alias):
            names.add((n.asname or n.name).split(".")[0])
        elif isinstance(n, (gast.Global, gast.Nonlocal)):
            names.update(n.names)
        elif isinstance(n, gast.ExceptHandler) and isinstance(n.name, str):
            names.add(n.name)
    return names


class NameAllocator:
    """Hands out names that are unique within one generated function (see module doc)."""

    def __init__(self):
        self.used = set()
        #: identifiers of the user's source seen so far: generated names avoid them
        self.user = set()
        self._temp = 0
        #: names that stand for values the reverse pass fills in and renames away
        #: (``placeholder``), and numbered temporaries: never part of another name
        self.opaque = set()
        #: modules generated code reads besides np, math and rt: dotted path -> the name
        #: it reads them by (see ``module`` and ``compiler/syntax/imports.py``)
        self.modules = {}
        #: the names the generator invented (``fresh``, ``temp``, ``adjoint``...): no
        #: user's variable is one (``compiler/optimize/substitute.py`` may inline them away)
        self.invented = set()
        #: versions of a user's variable (``variable``) -> the user's name: ``loss_1`` ->
        #: ``loss``; a description speaks of the user's name
        self.versions = {}

    def claim_source(self, node):
        """Claim every identifier of the user's function ``node`` (a gast FunctionDef or
        Lambda): no generated name will be one of them."""
        self.user.update(source_names(node))

    def _first_free(self, base, taken):
        """``base``, or ``base_1``, ``base_2``... the first one neither the allocator,
        the reserved names nor ``taken`` hold."""
        name, i = base, 0
        while name in self.used or name in RESERVED or name in taken:
            i += 1
            name = f"{base}_{i}"
        return name

    def _pick(self, hint, taken):
        base = hint if hint.isidentifier() and not keyword.iskeyword(hint) else "v"
        name = self._first_free(base, taken)
        self.used.add(name)
        return name

    def variable(self, hint):
        """A name for a value of the user's program: ``hint`` itself (the user's name)
        when free, else ``hint_1``, ``hint_2``... (its versions)."""
        name = self._pick(hint, ())
        if name != hint and hint.isidentifier():
            self.versions[name] = hint
        return name

    def fresh(self, hint):
        """A name the generator invents: like ``hint`` and never a name of the user's
        source (``value`` -> ``value_1`` when the user has a ``value``)."""
        name = self._pick(hint, self.user)
        self.invented.add(name)
        return name

    def available(self, hint):
        """A name like ``hint`` that neither the user's source nor the allocator uses,
        without claiming it (for a name written into the user's code as it is lowered,
        such as the index of a loop over an array's rows)."""
        return self._first_free(hint, self.user)

    def placeholder(self, hint):
        """A name that stands in for a value known only to the reverse pass (the incoming
        gradient a custom backward reads), which renames it before anything is written."""
        name = self.fresh(hint)
        self.opaque.add(name)
        return name

    def snapshot(self):
        """The allocator's state, to undo names handed out by a discarded attempt."""
        return (set(self.used), set(self.user), self._temp, dict(self.modules),
                set(self.opaque), set(self.invented), dict(self.versions))

    def restore(self, state):
        used, user, temp, modules, opaque, invented, versions = state
        self.used, self.user, self._temp, self.modules = set(used), set(user), temp, \
            dict(modules)
        self.opaque, self.invented = set(opaque), set(invented)
        self.versions = dict(versions)

    def module(self, path):
        """The name generated code reads module ``path`` (``'scipy.special'``) by: its last
        component (``special``), made unique on first use and the same afterwards."""
        if path not in self.modules:
            self.modules[path] = self.fresh(path.rsplit(".", 1)[-1])
        return self.modules[path]

    def temp(self, expr=None, word=None):
        """A new temporary for the value of ``expr`` (a gast expression): named from what
        it holds where that is short and free (``describe``), else ``word`` (the name the
        value is bound to where it is used: an inlined callee's parameter) where that is
        free, else ``t1``, ``t2``...; never a name of the user's source claimed so far,
        never ``<description>_<n>`` (see the module doc)."""
        described = describe(expr, self.opaque, self.versions) if expr is not None else None
        for name in (described, word):
            if name is not None and self._free(name):
                self.used.add(name)
                self.invented.add(name)
                return name
        while True:
            self._temp += 1
            name = f"t{self._temp}"
            if name not in self.used and name not in self.user:
                self.used.add(name)
                self.opaque.add(name)
                self.invented.add(name)
                return name

    def _free(self, name):
        """True when ``name`` is an identifier nobody holds: neither the allocator, the
        user's source claimed so far nor the reserved names, and no version's mark."""
        return name.isidentifier() and not keyword.iskeyword(name) and \
            not _VERSION.search(name) and name not in self.used and \
            name not in self.user and name not in RESERVED

    def adjoint(self, name):
        """The adjoint name of forward variable ``name``: ``d<name>``, made unique."""
        return self.fresh("d" + name)
