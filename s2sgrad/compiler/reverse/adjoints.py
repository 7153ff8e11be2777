"""The adjoint variables of a generated function and the statements that fill them.

``Adjoints`` names each adjoint (``dx`` for ``x``), knows which hold a value
yet and which arrays the generated code owns (may update in place), and
writes accumulation: the first contribution is an assignment, later ones add
(in place into an owned array).  An adjoint first made by arithmetic (``dy = dz * 2.0``)
is fresh: a slice read's adjoint is then added into it, ``rt.add_into(dy[:-1], g)``, with
no copy (``writable``); a later ``dy += e`` is not written in place for it, since under
Numba ``dy = dy + e`` is one fused loop and ``dy += e`` two.  The builders of gast nodes live in
``compiler/syntax/nodes.py``.
"""
import gast

from ..syntax.nodes import assign, call, name_node


def fresh_array(expr):
    """Whether ``expr`` always makes a new array (or a scalar) that no other name holds:
    arithmetic (``dz * 2.0``, ``g @ b.T``, ``-g``), or ``rt.unbroadcast`` of it (which
    returns its argument or a new sum of it).  A name, a subscript (a view) or another
    call (``rt.unbroadcast(g, x)`` may return ``g``; ``rt.unreduce`` a read-only
    broadcast) may share memory with another adjoint, a user array or a tape entry."""
    if isinstance(expr, gast.Call) and isinstance(expr.func, gast.Attribute) \
            and isinstance(expr.func.value, gast.Name) and expr.func.value.id == "rt" \
            and expr.func.attr == "unbroadcast" and expr.args:
        return fresh_array(expr.args[0])
    return isinstance(expr, (gast.BinOp, gast.UnaryOp))


class Adjoints:
    """Adjoint variable names, and which of them hold a value yet."""

    def __init__(self, names, lists=frozenset(), single_use=frozenset(), rebound=frozenset()):
        self.names = names
        self.lists = lists   # variables that are lists: their adjoints are lists too
        self.single_use = single_use   # variables with one use that can pass a gradient
        self.rebound = rebound         # variables whose adjoint is reassigned (loop-carried)
        self.plain_zero = set()    # adjoints that started as a plain 0.0 (no array yet)
        self.of = {}
        self.defined = set()
        self.owned = set()   # adjoints that are fresh arrays the generated code may update in place
        #: adjoints whose first contribution made a new array (``dy = dz * 2.0``) that no
        #: other name holds yet: ``writable`` may take them as they are, with no copy.  Kept
        #: within straight-line code: the transform clears it at branches and loops
        self.fresh = set()
        self.copied = set()  # adjoints ``own`` copied (to hoist such copies out of loops)
        #: var -> (its adjoint's source var, that adjoint's name, whether it was owned) for
        #: an adjoint that took another's array (``dun = du``): see ``own``
        self.moved = {}
        #: the copies ``own`` made of an array taken from an owned adjoint: (copy statement,
        #: adjoint name, source name); ``ownership.drop_moved_copies`` removes those that
        #: turn out needless
        self.move_copies = []

    def name(self, var):
        if var not in self.of:
            self.of[var] = self.names.adjoint(var)
        return self.of[var]

    def accumulate(self, var, expr, out):
        """Append ``dvar = expr`` (first contribution), ``dvar += expr`` (an accumulator
        this code owns) or ``dvar = dvar + expr``."""
        self.moved.pop(var, None)
        self.fresh.discard(var)
        if isinstance(expr, gast.Name) and var not in self.defined and var not in self.of \
                and var in self.single_use and var not in self.lists \
                and var not in self.rebound:   # a loop reassigns dvar: it cannot be dsource
            source = [other for other, name in self.of.items() if name == expr.id]
            if source and not any(other in self.rebound for other in source):
                # dvar would only copy dsource: read dsource itself
                self.of[var] = expr.id
                self.defined.add(var)
                for other in source + [var]:
                    self.owned.discard(other)
                    self.fresh.discard(other)
                return
        target = self.name(var)
        if isinstance(expr, gast.Name):   # dvar now shares another adjoint's array
            sources = [other for other, name in self.of.items() if name == expr.id]
            if len(sources) == 1 and var not in self.defined:
                self.moved[var] = (sources[0], expr.id, sources[0] in self.owned)
            for other in sources:
                self.owned.discard(other)
                self.fresh.discard(other)
        if var in self.lists and var in self.defined:
            out.append(assign(target, call("rt", "add_lists", [name_node(target), expr])))
            self.owned.add(var)
            return
        if var in self.defined and var in self.owned:
            out.append(gast.AugAssign(target=name_node(target, gast.Store()), op=gast.Add(),
                                      value=expr))
            return
        if var in self.defined:
            expr = gast.BinOp(left=name_node(target), op=gast.Add(), right=expr)
            self.owned.add(var)
        else:
            self.defined.add(var)
            self.owned.discard(var)
            if fresh_array(expr) and var not in self.lists:
                self.fresh.add(var)    # a new array no other name holds
        out.append(assign(target, expr))

    def _separate_readers(self, var, out):
        """Other adjoints that are ``dvar`` by name (``dcos_x`` read as ``dt``) get their
        own variable, ``dcos_x = dt``, before ``dvar`` is assigned afresh: what reads them
        later wants the value they had, not the reset one."""
        name = self.of.get(var)
        for other, other_name in list(self.of.items()):
            if other != var and other_name == name:
                own = self.names.adjoint(other)
                out.append(assign(own, name_node(name)))
                self.of[other] = own
                self.owned.discard(other)
                self.fresh.discard(other)
        self.fresh.discard(var)

    def own(self, var, out):
        """Make ``dvar`` an array of ``var``'s shape this code may update in place (a copy;
        from a plain 0.0 where ``var`` may have had no value when the adjoint started)."""
        target = self.name(var)
        if var in self.plain_zero:
            value = call("rt", "writable", [name_node(target), name_node(var)])
        else:
            value = call("np", "copy", [name_node(target)])
            self.copied.add(var)
        statement = assign(target, value)
        out.append(statement)
        self.owned.add(var)
        if var in self.moved and var not in self.plain_zero:
            source, source_name, was_owned = self.moved[var]
            if was_owned:       # needless if nothing reads the source's array again
                self.move_copies.append((statement, target, source_name))
            else:               # owning the source before a loop may make it needless
                self.copied.add(source)

    def writable(self, var, out):
        """Make the defined ``dvar`` an array this code may update in place: as it is if
        it is owned or fresh (``dy = dz * 2.0``: so ``rt.add_into(dy[:-1], g)`` needs no
        copy), else a copy (``own``)."""
        if var in self.owned:
            return
        if var in self.fresh:
            self.fresh.discard(var)
            self.owned.add(var)
            return
        self.own(var, out)

    def restart(self, var):
        """Forget ``dvar``'s value: the next contribution assigns it afresh."""
        self.moved.pop(var, None)
        self.fresh.discard(var)
        self.defined.discard(var)
        self.owned.discard(var)
        self.plain_zero.discard(var)

    def zero(self, var, out, assigned=True):
        """Append ``dvar = rt.zeros_like(var)``: an accumulator that starts at zero.  Where
        ``var`` may have no value yet (``assigned`` False: set only on some paths), ``0.0``.
        An adjoint that reads ``dvar`` itself (a single-use copy: ``accumulate``) is given
        its own name first, holding the value before the reset."""
        self._separate_readers(var, out)
        self.moved.pop(var, None)
        self.defined.add(var)
        if not assigned:
            # var may hold no value here: a plain 0.0 adds to anything
            self.plain_zero.add(var)
            out.append(assign(self.name(var), gast.Constant(value=0.0, kind=None)))
            self.owned.discard(var)
            return
        maker = "zeros_list" if var in self.lists else "zeros_like"
        out.append(assign(self.name(var), call("rt", maker, [name_node(var)])))
        self.owned.add(var)
