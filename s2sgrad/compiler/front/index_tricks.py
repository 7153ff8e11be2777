"""``np.r_[a, b, ...]`` and ``np.c_[a, b, ...]`` on run-time values: one primitive each
(``primitives.INDEX_R`` / ``INDEX_C``, rules in ``s2sgrad/rules/numpy_more.py``), written in the
generated code as the user wrote it.  Items must be arrays or numbers: slices
(``np.r_[0:3]``) and string directives (``np.r_['0,2', a]``) are refused."""
import gast
import numpy as np

from ... import primitives as prims
from ..ir import Const, Seq
from ..syntax.nodes import attribute
from ..syntax.source import unsupported

#: the index-trick objects and their primitive names
TRICKS = {id(np.r_): prims.INDEX_R, id(np.c_): prims.INDEX_C}


def is_index_trick(obj):
    """True for ``np.r_`` and ``np.c_`` (read by subscript, lowered by ``lower_index_trick``)."""
    return id(obj) in TRICKS and (obj is np.r_ or obj is np.c_)


def lower_index_trick(emitter, frame, node, obj, index, hint):
    """The Var of ``np.r_[index]`` / ``np.c_[index]`` (``index`` an atom or an index Seq),
    appended by ``emitter`` (``lower_ops.Emitter``)."""
    name = TRICKS[id(obj)]
    items = index.items if isinstance(index, Seq) and index.kind == "index" else (index,)
    for item in items:
        if isinstance(item, Seq) or (isinstance(item, Const) and (
                isinstance(item.value, bool) or not isinstance(item.value, (int, float)))):
            raise unsupported(frame, node, f"{name}[...] with a slice, a string or a "
                              "tuple item", "join arrays and numbers only, or call "
                              "np.concatenate / np.arange")
    expr = gast.Subscript(value=attribute("np", name[3:]),
                          slice=gast.Tuple(elts=[emitter.atoms.atom_node(i) for i in items],
                                           ctx=gast.Load()), ctx=gast.Load())
    return emitter.emit(frame, node, name, tuple(items), {}, expr, hint)
