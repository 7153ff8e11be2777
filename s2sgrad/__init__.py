"""s2sgrad: source-to-source reverse-mode automatic differentiation.

``import s2sgrad as mindspore`` gives the programming model of the MindSpore
tutorials (Tensor, Parameter, dtypes, ``nn``, ``ops``) on numpy, and
``grad`` / ``value_and_grad`` that differentiate by writing Python source.
"""
from .dtype import (DType, float16, float32, float64, int8, int16, int32, int64, uint8, bool_,
                    dtype_to_numpy)
from .tensor import Tensor, Parameter, ParameterTuple, set_seed
from . import ops, nn
from .api.reverse import grad, value_and_grad, custom_vjp
from .api.forward import jvp, jacfwd
from .api.split import vjp, jacrev
from .api.higher import hvp, hessian
from .api.jacobian import jacobian
from .api.show import show
from .api.vmap import vmap
from .api.jit import jit

__version__ = "0.1.0"

__all__ = [
    "DType", "float16", "float32", "float64", "int8", "int16", "int32", "int64",
    "uint8", "bool_", "dtype_to_numpy", "Tensor", "Parameter", "ParameterTuple",
    "set_seed", "ops", "nn", "grad", "value_and_grad", "show", "custom_vjp", "jvp", "jacfwd",
    "vjp", "jacrev", "hvp", "hessian", "jacobian", "vmap", "jit",
]
