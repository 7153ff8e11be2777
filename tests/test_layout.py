"""The generated code a person reads: one comment per user line, lines of at most 100
characters, ``import math`` only when the code uses it (s2sgrad/compiler/emit/layout.py)."""
import ast
import math
import re

import numpy as np

import s2sgrad as ms
from s2sgrad.backend.reasons import _USER_COMMENT
from s2sgrad.compiler.emit.layout import LINE_LIMIT, reads_name, wrap


def _comments(source):
    return [line.strip() for line in source.splitlines() if line.strip().startswith("# ")]


def loop(x, w):
    s = 0.0
    for i in range(3):
        h = np.tanh(x * w + s)
        s = s + np.sum(h)
    return s


def branches(x):
    y = x
    if np.sum(x) > 0:
        y = np.sin(x)
    else:
        y = np.cos(x)
    return np.sum(y)


def long_lines(first_input_array, second_input_array, third_input_array):
    return np.sum(np.maximum(first_input_array * second_input_array, third_input_array) + np.minimum(first_input_array, second_input_array * third_input_array) + first_input_array)  # noqa: E501


def uses_math(x):
    return math.sin(x) * x


def test_a_loop_header_comment_is_written_once_per_sweep():
    source = ms.grad(loop, (0, 1)).source
    comments = _comments(source)
    header = [c for c in comments if "for i in range(3):" in c]
    assert header == ["# for i in range(3):  (test_layout.py:20)",
                      "# grad of: for i in range(3):  (test_layout.py:20)"], source
    assert len(comments) == len(set(comments)), source


def test_each_branch_keeps_its_own_comments():
    source = ms.grad(branches, 0).source
    comments = _comments(source)
    for text in ("y = np.sin(x)", "y = np.cos(x)"):
        assert sum(text in c for c in comments if c.startswith("# grad of")) == 1, source


def test_generated_lines_fit_in_100_characters_and_still_run():
    g = ms.grad(long_lines, (0, 1, 2))
    source = g.source
    assert max(len(line) for line in source.splitlines()) <= LINE_LIMIT, source
    ast.parse(source)
    a, b, c = np.linspace(-1, 1, 4), np.linspace(0.5, 2, 4), np.linspace(2, -2, 4)
    expected = ms.grad(lambda a, b, c: np.sum(np.maximum(a * b, c) + np.minimum(a, b * c) + a),
                       (0, 1, 2))(a, b, c)
    for got, want in zip(g(a, b, c), expected):
        np.testing.assert_allclose(got, want)


def test_import_math_only_where_the_code_reads_it():
    assert "import math" not in ms.grad(loop, (0, 1)).source
    source = ms.grad(uses_math).source
    assert "import math\n" in source and "math.cos" in source, source


def test_wrap_splits_code_after_a_comma_inside_brackets():
    line = ("        total = rt.combine(first_argument_name, second_argument_name, "
            "rt.unbroadcast(third_argument, fourth), 'a, b, c')")
    lines = wrap(line)
    assert len(lines) == 2 and all(len(piece) <= LINE_LIMIT for piece in lines)
    assert lines[1].startswith(" " * len("        total = rt.combine("))
    joined = "\n".join(piece.strip() for piece in lines)
    assert ast.dump(ast.parse(joined)) == ast.dump(ast.parse(line.strip()))


def test_wrap_leaves_what_it_cannot_split():
    line = "    x = " + "a" * 120
    assert wrap(line) == [line]
    assert wrap("    y = 1") == ["    y = 1"]


def test_wrap_shortens_a_location_comment_and_keeps_where_it_comes_from():
    line = "    # grad of: loss = f(" + ", ".join(f"arg{k}" for k in range(30)) + ")  (model.py:27)"
    (short,) = wrap(line)
    assert len(short) <= LINE_LIMIT and short.endswith("...  (model.py:27)")
    match = _USER_COMMENT.match(short.strip())
    assert match and match.group(2) == "model.py:27"
    assert re.match(r"# grad of: loss = f\(arg0, arg1, ", short.strip())


def test_reads_name_ignores_comments_and_strings():
    assert reads_name(["y = math.sin(x)"], "math")
    assert not reads_name(["# y = math.sin(x)  (f.py:3)", "z = 'math'"], "math")
