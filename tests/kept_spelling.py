"""Generated code read in the spelling the compiler's passes chose, without the layer that
writes results into kept arrays (``rt.Buffers``): ``as_written(source)`` turns each
``kept.subtract(a, b)`` back into ``a - b`` (``kept.exp(a)`` into ``np.exp(a)``,
``kept.einsum`` into ``rt.einsum``), for tests of the spellings themselves.  The text
comes back through ``ast.unparse``: one line per statement, comments dropped."""
import ast

#: the operators ``kept.<ufunc>`` is written for
OPERATORS = {"add": ast.Add, "subtract": ast.Sub, "multiply": ast.Mult,
             "true_divide": ast.Div, "power": ast.Pow, "matmul": ast.MatMult}
#: the helpers of ``rt`` a kept array is written by
RT_HELPERS = ("einsum", "extremum_adjoint")


class _AsWritten(ast.NodeTransformer):
    def visit_Call(self, node):
        self.generic_visit(node)
        func = node.func
        if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)
                and func.value.id == "kept"):
            return node
        if func.attr in OPERATORS:
            return ast.BinOp(node.args[0], OPERATORS[func.attr](), node.args[1])
        if func.attr == "negative":
            return ast.UnaryOp(ast.USub(), node.args[0])
        module = "rt" if func.attr in RT_HELPERS else "np"
        return ast.Call(ast.Attribute(ast.Name(module, ast.Load()), func.attr, ast.Load()),
                        node.args, [])


def as_written(source):
    """``source`` with its kept-array calls written back as operators and numpy calls."""
    return ast.unparse(_AsWritten().visit(ast.parse(source)))
