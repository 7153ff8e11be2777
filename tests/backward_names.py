"""Custom backwards (custom_vjp and Cell.bprop) that read free names of every kind from
THIS module: a module import, a from-import, a module function, global arrays and
constants, closure variables and Cell attributes.  The test module that differentiates
them does not import any of these names (tests/test_backward_names.py)."""
import math

import numpy as np
from scipy.special import digamma

import s2sgrad
from s2sgrad import nn

SCALE = 3.0                               # a global constant
WEIGHTS = np.array([1.0, -2.0, 0.5])      # a global array


def helper(x):                            # a module function
    return 2.0 * x


@s2sgrad.custom_vjp
def with_import(x):
    return np.sin(x)


@with_import.defvjp
def _(x, out, dout):
    return (dout * digamma(x),)           # the case: a from-import


@s2sgrad.custom_vjp
def with_module_attr(x):
    return np.sin(x)


@with_module_attr.defvjp
def _(x, out, dout):
    return (dout * math.pi * np.cos(x),)  # a module and one of its constants


@s2sgrad.custom_vjp
def with_function(x):
    return np.sin(x)


@with_function.defvjp
def _(x, out, dout):
    return (helper(dout),)


@s2sgrad.custom_vjp
def with_globals(x):
    return np.sin(x)


@with_globals.defvjp
def _(x, out, dout):
    return (dout * SCALE * WEIGHTS,)


def make_closure(factor, offsets):
    """A custom_vjp whose backward reads closure variables (a float and an array)."""
    @s2sgrad.custom_vjp
    def with_closure(x):
        return np.sin(x)

    @with_closure.defvjp
    def _(x, out, dout):
        return (dout * factor + offsets,)
    return with_closure


class Scaled(nn.Cell):
    """A Cell whose bprop reads attributes: a float, an array and a method."""

    def __init__(self, scale, shift):
        super().__init__()
        self.scale = scale
        self.shift = shift

    def twice(self, v):
        return 2.0 * v

    def construct(self, x):
        return x * x

    def bprop(self, x, out, dout):
        return (self.twice(dout) * self.scale + self.shift + digamma(x),)
