"""The IR (s2sgrad/compiler/ir.py) is the contract between the passes: every piece of
information a pass reads is a declared field, so a typo fails loudly and no pass reads a
field back with ``getattr(..., default)``."""
import ast
import dataclasses
import pathlib

import numpy as np
import pytest

from s2sgrad.compiler import ir
from s2sgrad.compiler.front.lower import Lowerer

COMPILER = pathlib.Path(ir.__file__).resolve().parent
IR_CLASSES = [ir.Var, ir.Const, ir.Seq, ir.DictAtom, ir.Op, ir.FreeValue, ir.LoweredFunction,
              ir.SetItem, ir.If, ir.Loop, ir.ListAppend, ir.CustomBackward]


def _one_op():
    return ir.Op(("y",), np.sin, (ir.Var("x"),), {}, None, None)


@pytest.mark.parametrize("make, field", [
    (_one_op, "basic_indx"),
    (lambda: ir.LoweredFunction("f", None, ["x"], []), "int_var"),
    (lambda: ir.Loop("while", None, (), [], None, [], [], "n", None, None), "headers"),
    (lambda: ir.CustomBackward("f", [], [], {}, [], [], []), "lowerer"),
])
def test_an_undeclared_field_cannot_be_set(make, field):
    with pytest.raises(AttributeError):
        setattr(make(), field, True)


def test_the_passes_get_what_lowering_learned_as_fields():
    def f(x, n):
        s = 0.0
        for i in range(n):
            s = s + x[i]
        return s

    lowered = Lowerer(arg_types=[(np.dtype(np.float64), 1), (np.dtype(np.int64), 0)]).lower(f)
    assert lowered.param_types == {"x": (np.dtype(np.float64), 1), "n": (np.dtype(np.int64), 0)}
    assert lowered.arg_leaves == [[0], [1]] and lowered.parsed.name == "f"
    loop = next(s for s in lowered.body if isinstance(s, ir.Loop))
    read = next(op for op in ir.walk_ops(loop.body) if op.primitive == "getitem")
    assert read.basic_index and not read.list_base and read.bind_error is None
    assert loop.target in lowered.int_vars and lowered.ndims[read.targets[0]] == 0


def test_no_pass_reads_an_ir_field_with_getattr():
    fields = {f.name for cls in IR_CLASSES for f in dataclasses.fields(cls)}
    found = []
    for path in sorted(COMPILER.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                    node.func.id in ("getattr", "hasattr") and len(node.args) >= 2 and \
                    isinstance(node.args[1], ast.Constant) and node.args[1].value in fields \
                    and isinstance(node.args[0], ast.Name) and \
                    node.args[0].id in ("op", "stmt", "lowered", "loop", "item", "s"):
                found.append(f"{path.name}:{node.lineno} {ast.unparse(node)}")
    assert not found, "\n".join(found)
