"""The front end reads a function's lines through ``linecache`` (``frontend._source_lines``)
rather than ``inspect.getsourcelines``, which scans every loaded module on the first call
of a process: the lines, first line and file are exactly inspect's for every kind of
definition a user differentiates."""
import functools
import inspect

import numpy as np
import pytest

from s2sgrad.compiler.front import frontend


def decorate(fn):
    @functools.wraps(fn)
    def wrapper(*args):
        return fn(*args)
    return wrapper


@decorate
@functools.lru_cache(maxsize=None)
def decorated(x):
    return x * 2.0


def plain(x,
          y=1.0):          # a signature over two lines
    """A docstring."""
    return np.sin(x) * y


class Model:
    def method(self, x):
        return x + 1.0

    @staticmethod
    def static(x):
        return x - 1.0


def outer():
    def inner(x):
        return x ** 2
    return inner


ONE_LINE = lambda x: x * 3.0  # noqa: E731
TWO_ON_A_LINE = (lambda x: x + 1.0, lambda y: y - 1.0)
namespace = {}
exec("def made(x):\n    return x\n", namespace)  # noqa: S102 - no source file


@pytest.mark.parametrize("fn", [
    plain, decorated.__wrapped__.__wrapped__, decorate(plain), Model.method, Model.static, outer(),
    ONE_LINE, TWO_ON_A_LINE[1],
], ids=["plain", "decorated", "wrapper", "method", "static", "nested", "lambda",
        "second-lambda"])
def test_the_lines_are_inspects(fn):
    lines, first, filename = frontend._source_lines(fn)
    assert (lines, first) == inspect.getsourcelines(fn.__code__)
    assert filename == inspect.getsourcefile(fn.__code__)


def test_a_function_without_a_file_has_no_lines():
    with pytest.raises(OSError):
        frontend._source_lines(namespace["made"])
