"""A loop that adds a matrix product to an accumulator each step: one product after it.

``product_sums(statements, keep, fresh)`` takes the statements of a function run as numpy
(gast statements and ``Comment``s; a batched Jacobian's sweep), ``keep`` (the names it
returns) and ``fresh`` (a maker of invented names), and gives them with each loop of the
form (the tangent of GradBench's ht, 22 bones)::

    for i in range(n):
        ...
        t33_dot = rt.matmul_batch_sliced(base_positions, t30_dot, np.s_[:, :, :3])
        positions_3_dot = positions_1_dot + t32 * t33_dot
        ...
        positions_1_dot = positions_3_dot

written as::

    positions_1_dot_sum = rt.ProductSum(positions_1_dot)
    for i in range(n):
        ...
        positions_1_dot_sum.add(t32, base_positions, t30_dot, np.s_[:, :, :3])
        ...
    positions_1_dot = positions_1_dot_sum.total()

Two such sums of the same ``c`` and ``a``, their steps one after the other (a value's
and its tangent's), are tied: the second step is written
``positions_1_dot_sum.add_as(positions_1_sum, t30_dot, np.s_[:, :, :3])``, which takes
the first's ``c`` and ``a`` and shares what it made of them.

``rt.ProductSum`` (``runtime/product_sums.py``) keeps each step's operands and makes
their sum as one product of them stacked along the inner axis after the loop, falling
back to the step's own product where the operands do not fit: ht's 22 weighted
(544 x 4) @ (26 x 4 x 3) products and sums of a (26, 544, 3) batch are one
(78 x 88) @ (88 x 544) product.

What is rewritten: in the body of a ``for`` loop (no ``break``, ``continue`` or
``return`` in it, no ``else``, nothing written in place but arrays the step made:
``_writes_in_place``), an assignment ``new = acc + term`` (or ``term + acc``)
whose ``new`` is read once in the whole function, by the body's rebinding ``acc = new``,
where the body reads ``acc`` nowhere else and assigns it only there (nor is it the
loop's name); ``term`` is a product (``a @ b``, ``np.matmul``, ``rt.matmul_batch``,
``rt.matmul_sliced``, ``rt.matmul_batch_sliced`` of names) or ``c *`` one (``c`` a name
or a number), each possibly a single-use name assigned earlier in the same user line's
statements of the body, with nothing between rebinding or writing what the product
reads.  The step's
operands are then those at the same point of the loop as before.
"""
import gast

from ..syntax.nodes import Comment, name_uses
from .substitute import NUMPY_WRITERS, PURE_METHODS, RUNTIME_WRITERS

#: the runtime helpers of a product, and whether they take an index after the operands
_HELPERS = {"matmul_batch": False, "matmul_sliced": True, "matmul_batch_sliced": True}


def product_sums(statements, keep, fresh):
    """``statements`` with the loops' sums of products made after them (module doc), as
    a new list."""
    reads, stores = name_uses(statements)
    once = {name for name, n in reads.items()
            if n == 1 and stores.get(name) == 1 and name not in keep}
    return _block(statements, once, fresh)


def _block(items, once, fresh):
    out = []
    for item in items:
        if isinstance(item, (gast.For, gast.While, gast.If)):
            item = _copy_compound(item, once, fresh)
        if isinstance(item, gast.For) and not item.orelse and not _jumps(item.body) and \
                not _writes_in_place(item.body):
            out += _loop(item, once, fresh)
        else:
            out.append(item)
    return out


def _copy_compound(item, once, fresh):
    copy = type(item)(**{field: getattr(item, field) for field in item._fields})
    copy.body = _block(item.body, once, fresh)
    copy.orelse = _block(item.orelse, once, fresh)
    return copy


def _writes_in_place(body):
    """True when a statement of ``body`` may write into an array made before it: an item
    or attribute assignment (but into an array this step made: ``R_dot =
    rt.zeros_batch(R, width)``, then ``R_dot[:, 1, 1] = c_dot``), an augmented one (``x
    += y`` is in place), a call with ``out=``, a numpy or runtime function that updates
    an argument, a method that may (a list's ``append`` aside).  (The accumulator's first
    value is read after the loop: nothing may have written into it meanwhile.)"""
    stores = name_uses(body)[1]
    fresh = set()                      # names this step has bound to an array it made
    for item in body:
        if not isinstance(item, gast.AST):
            continue
        for node in gast.walk(item):
            if isinstance(node, gast.AugAssign) or (
                    isinstance(node, (gast.Subscript, gast.Attribute)) and
                    isinstance(node.ctx, gast.Store) and _base(node) not in fresh):
                return True
            if isinstance(node, gast.Call) and not _pure_call(node):
                return True
        if _assigns_one_name(item) and stores.get(item.targets[0].id) == 1 and \
                _made_here(item.value):
            fresh.add(item.targets[0].id)
    return False


#: the calls that give a new array (never an operand or a view of one)
_NEW = {"np": {"zeros", "ones", "empty", "full", "eye", "identity", "array"},
        "rt": {"zeros_batch"}}


def _made_here(expr):
    func = expr.func if isinstance(expr, gast.Call) else None
    return isinstance(func, gast.Attribute) and isinstance(func.value, gast.Name) and \
        func.attr in _NEW.get(func.value.id, ())


def _pure_call(call):
    func = call.func
    if any(k.arg == "out" for k in call.keywords):
        return False
    if not isinstance(func, gast.Attribute):
        return True                     # (a builtin or a name: no method of an array)
    owner = func.value.id if isinstance(func.value, gast.Name) else None
    if owner == "np":
        return func.attr not in NUMPY_WRITERS
    if owner == "rt":
        return func.attr not in RUNTIME_WRITERS
    return func.attr in PURE_METHODS or func.attr == "append"


def _jumps(body):
    return any(isinstance(node, (gast.Break, gast.Continue, gast.Return))
               for item in body if isinstance(item, gast.AST) for node in gast.walk(item))


def _loop(loop, once, fresh):
    """``[before..., loop, after...]``: ``loop`` with each of its sums of products
    rewritten (module doc)."""
    before, after, made = [], [], set()
    bound = {n.id for n in gast.walk(loop.target) if isinstance(n, gast.Name)}
    while True:
        found = _accumulation(loop.body, once - bound, made, bound)
        if found is None:
            accs = ", ".join(item.targets[0].id for item in after)
            head = [Comment(f"{accs}: the loop's products, made as one after it "
                            "(rt.ProductSum)")] if after else []
            loop.body = _paired(loop.body, made)
            return head + before + [loop] + after
        k, j, defs, acc, operands = found
        total = fresh(acc + "_sum")
        add = gast.parse(f"{total}.add()").body[0]
        add.value.args = operands
        made.add(id(add))             # (it copies what it keeps: it writes nothing)
        loop.body = [add if n == k else item for n, item in enumerate(loop.body)
                     if n != j and n not in defs]
        before.append(gast.parse(f"{total} = rt.ProductSum({acc})").body[0])
        after.append(gast.parse(f"{acc} = {total}.total()").body[0])


def _paired(body, made):
    """``body`` with each ``add`` that follows another (nothing between them but
    comments) of the same ``c`` and ``a`` written ``acc_dot_sum.add_as(acc_sum, b,
    index)``: the value's and the tangent's sums share the step's ``c * a``."""
    out, last = [], None
    for item in body:
        if isinstance(item, Comment):
            out.append(item)
            continue
        if last is not None and id(item) in made and \
                _same(item.value.args[:2], last.value.args[:2]):
            pair = gast.parse(f"{item.value.func.value.id}.add_as("
                              f"{last.value.func.value.id})").body[0]
            pair.value.args += item.value.args[2:]
            made.add(id(pair))
            item, last = pair, None
        else:
            last = item if id(item) in made else None
        out.append(item)
    return out


def _same(nodes, others):
    """True when the gast nodes are the same names and constants."""
    return all(gast.dump(x) == gast.dump(y) for x, y in zip(nodes, others))


def _accumulation(body, once, made, bound):
    """``(k, j, defs, acc, [c, a, b, index])`` of the first sum of products in ``body``
    (``body[k]`` the sum, ``body[j]`` the rebinding, ``defs`` the positions of the
    definitions it reads), or None.  ``made``: the ids of the ``add`` statements
    written already; ``bound``: the names the loop binds each step (never ``acc``)."""
    reads, stores = name_uses(body)
    for k, item in enumerate(body):
        if not _assigns_one_name(item) or not isinstance(item.value, gast.BinOp) or \
                not isinstance(item.value.op, gast.Add) or item.targets[0].id not in once:
            continue
        new = item.targets[0].id
        for acc, term in ((item.value.left, item.value.right),
                          (item.value.right, item.value.left)):
            if not isinstance(acc, gast.Name) or reads.get(acc.id) != 1 or \
                    stores.get(acc.id) != 1 or acc.id in bound:
                continue
            j = _rebinding(body, k, acc.id, new)
            step = _step(body, k, term, once, made)
            if j is not None and step is not None:
                return (k, j, step[0], acc.id, step[1])
    return None


def _rebinding(body, k, acc, new):
    """The position of ``acc = new`` after ``body[k]``, or None."""
    for j in range(k + 1, len(body)):
        item = body[j]
        if _assigns_one_name(item) and item.targets[0].id == acc and \
                isinstance(item.value, gast.Name) and item.value.id == new:
            return j
    return None


def _step(body, k, term, once, made):
    """``(defs, [c, a, b, index])`` of ``term`` read in ``body[k]`` (module doc), or
    None."""
    defs = []
    term = _resolved(body, k, term, once, defs)
    c, product = None, _operands(term)
    if product is None and isinstance(term, gast.BinOp) and isinstance(term.op, gast.Mult):
        for c, factor in ((term.left, term.right), (term.right, term.left)):
            more = []
            product = _operands(_resolved(body, k, factor, once, more))
            if product is not None and _factor(c):
                defs += more
                break
            product = None
    if product is None:
        return None
    operands = [c if c is not None else gast.Constant(value=None, kind=None), *product]
    if defs and not _unchanged(body, min(defs), k, defs, operands, made):
        return None
    return defs, operands


def _resolved(body, k, expr, once, defs):
    """``expr``, or the value of the single-use name it is where ``body`` assigns it
    before ``k`` (its position added to ``defs``)."""
    if not isinstance(expr, gast.Name) or expr.id not in once:
        return expr
    for d in range(k - 1, -1, -1):
        item = body[d]
        if _assigns_one_name(item) and item.targets[0].id == expr.id:
            defs.append(d)
            return item.value
    return expr


def _operands(expr):
    """``[a, b, index]`` (gast nodes; ``index`` a ``None`` constant for all) of a product
    of two names, else None."""
    if isinstance(expr, gast.BinOp) and isinstance(expr.op, gast.MatMult):
        args, index = [expr.left, expr.right], None
    elif isinstance(expr, gast.Call) and not expr.keywords and \
            isinstance(expr.func, gast.Attribute) and isinstance(expr.func.value, gast.Name):
        module, attr = expr.func.value.id, expr.func.attr
        if module == "np" and attr == "matmul" and len(expr.args) == 2:
            args, index = expr.args, None
        elif module == "rt" and attr in _HELPERS and len(expr.args) == 2 + _HELPERS[attr]:
            args, index = expr.args[:2], (expr.args[2] if _HELPERS[attr] else None)
        else:
            return None
    else:
        return None
    if not all(isinstance(a, gast.Name) for a in args):
        return None
    return [*args, index if index is not None else gast.Constant(value=None, kind=None)]


def _factor(node):
    """True for a name or a number constant (``-2.0`` too)."""
    if isinstance(node, gast.UnaryOp) and isinstance(node.op, gast.USub):
        node = node.operand
    return isinstance(node, gast.Name) or (
        isinstance(node, gast.Constant) and type(node.value) in (int, float))


def _unchanged(body, first, k, defs, operands, made):
    """True when ``body[first:k]`` (the definitions ``defs`` aside) heads no other user
    line and rebinds, writes or passes to a call that may write nothing ``operands``
    read."""
    names = {n.id for op in operands for n in gast.walk(op) if isinstance(n, gast.Name)}
    for n in range(first, k):
        item = body[n]
        if isinstance(item, Comment):
            if item.origin is not None:
                return False
            continue
        if n in defs or id(item) in made:
            continue
        for node in gast.walk(item):
            if isinstance(node, gast.Name) and not isinstance(node.ctx, gast.Load) and \
                    node.id in names:
                return False
            if isinstance(node, (gast.Subscript, gast.Attribute)) and \
                    not isinstance(node.ctx, gast.Load) and _base(node) in names:
                return False
            if isinstance(node, gast.Call) and not _harmless(node, names):
                return False
    return True


def _base(node):
    while isinstance(node, (gast.Subscript, gast.Attribute)):
        node = node.value
    return node.id if isinstance(node, gast.Name) else None


def _harmless(call, names):
    """True when ``call`` cannot write into an array of ``names``: it reads none of them,
    or is a numpy or runtime function that updates no argument."""
    read = {n.id for n in gast.walk(call) if isinstance(n, gast.Name)} & names
    if not read:
        return True
    func = call.func
    if any(k.arg == "out" for k in call.keywords) or not isinstance(func, gast.Attribute) \
            or not isinstance(func.value, gast.Name):
        return False
    return (func.value.id == "np" and func.attr not in NUMPY_WRITERS) or (
        func.value.id == "rt" and func.attr not in RUNTIME_WRITERS)


def _assigns_one_name(item):
    return isinstance(item, gast.Assign) and len(item.targets) == 1 and \
        isinstance(item.targets[0], gast.Name)
