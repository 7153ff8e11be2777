"""Rules for Python's operators (keyed by the ``operator`` functions), builtins and ``math``."""
import math
import operator

import numpy as np

from .. import primitives as prims
from .registry import d, vjp
from .. import runtime as rt


@vjp(operator.add, np.add)
def _(ans, a, b):
    d[a] = rt.unbroadcast(d[ans], a)
    d[b] = rt.unbroadcast(d[ans], b)


@vjp(operator.sub, np.subtract)
def _(ans, a, b):
    d[a] = rt.unbroadcast(d[ans], a)
    d[b] = rt.unbroadcast(-d[ans], b)


@vjp(operator.mul, np.multiply)
def _(ans, a, b):
    d[a] = rt.unbroadcast(d[ans] * b, a)
    d[b] = rt.unbroadcast(d[ans] * a, b)


@vjp(operator.truediv, np.divide, np.true_divide)
def _(ans, a, b):
    d[a] = rt.unbroadcast(d[ans] / b, a)
    d[b] = rt.unbroadcast(-d[ans] * ans / b, b)


@vjp(operator.pow, np.power)
def _(ans, a, b):
    d[a] = rt.unbroadcast(d[ans] * b * a ** (b - 1), a)
    d[b] = rt.unbroadcast(d[ans] * ans * np.log(np.where(a > 0, a, 1)), b)


@vjp(operator.neg, np.negative)
def _(ans, a):
    d[a] = -d[ans]


@vjp(operator.pos, np.positive)
def _(ans, a):
    d[a] = d[ans]


@vjp(operator.matmul, np.matmul)
def _(ans, a, b):
    d[a] = rt.matmul_left(d[ans], a, b)
    d[b] = rt.matmul_right(d[ans], a, b)


@vjp(abs, math.fabs)
def _(ans, x):
    d[x] = d[ans] * np.sign(x)


@vjp(float)
def _(ans, x):
    d[x] = d[ans]


@vjp(math.exp)
def _(ans, x):
    d[x] = d[ans] * ans


@vjp(math.log)
def _(ans, x):
    d[x] = d[ans] / x


@vjp(math.log1p)
def _(ans, x):
    d[x] = d[ans] / (1.0 + x)


@vjp(math.expm1)
def _(ans, x):
    d[x] = d[ans] * (ans + 1.0)


@vjp(math.sqrt)
def _(ans, x):
    d[x] = d[ans] * 0.5 / ans


@vjp(math.sin)
def _(ans, x):
    d[x] = d[ans] * math.cos(x)


@vjp(math.cos)
def _(ans, x):
    d[x] = -d[ans] * math.sin(x)


@vjp(math.tan)
def _(ans, x):
    d[x] = d[ans] * (1.0 + ans * ans)


@vjp(math.tanh)
def _(ans, x):
    d[x] = d[ans] * (1.0 - ans * ans)


@vjp(math.sinh)
def _(ans, x):
    d[x] = d[ans] * math.cosh(x)


@vjp(math.cosh)
def _(ans, x):
    d[x] = d[ans] * math.sinh(x)


@vjp(math.asin)
def _(ans, x):
    d[x] = d[ans] / math.sqrt(1.0 - x * x)


@vjp(math.acos)
def _(ans, x):
    d[x] = -d[ans] / math.sqrt(1.0 - x * x)


@vjp(math.atan)
def _(ans, x):
    d[x] = d[ans] / (1.0 + x * x)


@vjp(math.pow)
def _(ans, x, y):
    d[x] = d[ans] * y * math.pow(x, y - 1.0)
    d[y] = d[ans] * ans * math.log(x)


@vjp(math.atan2)
def _(ans, y, x):
    d[y] = d[ans] * x / (x * x + y * y)
    d[x] = -d[ans] * y / (x * x + y * y)


@vjp(max)
def _(ans, a, b):
    d[a] = d[ans] * (a >= b)
    d[b] = d[ans] * (a < b)


@vjp(min)
def _(ans, a, b):
    d[a] = d[ans] * (a <= b)
    d[b] = d[ans] * (a > b)


@vjp(prims.ASSIGN)
def _(ans, a):
    d[a] = d[ans]


@vjp(prims.LIST)
def _(ans, *items):
    d[items] = d[ans]


@vjp(operator.mod)
def _(ans, a, b):
    d[a] = rt.unbroadcast(d[ans], a)
    d[b] = rt.unbroadcast(-d[ans] * (a // b), b)


@vjp(math.fmod)
def _(ans, x, y):
    d[x] = d[ans]
    d[y] = -d[ans] * math.trunc(x / y)


@vjp(math.hypot)
def _(ans, x, y):
    d[x] = d[ans] * x / ans
    d[y] = d[ans] * y / ans


@vjp(pow)
def _(ans, base, exp):
    d[base] = d[ans] * exp * base ** (exp - 1)
    d[exp] = d[ans] * ans * math.log(base)


@vjp(sum)
def _(ans, iterable):
    d[iterable] = rt.spread_sum(d[ans], iterable)
