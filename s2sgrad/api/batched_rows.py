"""``jacrev``'s rows in one batched adjoint sweep (issue 20, "Jacobians").

Takes a split module's ``vjp`` function (``compiler/pipeline_split.py``: the forward
sweep, then the adjoint sweep from cotangent parameters, returning the gradients and the
output) and the arguments of a call; gives ``(output, rows per gradient)``, each rows
array ``(output size,) + input.shape``, what the split module's per-row jacobian function
returns, or None where that function must run the call.

The vjp function is linear in its cotangents, so its batched forward-mode Jacobian
w.r.t. them (``build_jvp(..., batched=True, pullback=True)``: every adjoint carries the
basis cotangents first, the forward sweep's values unbatched) is every row at once:
JAX's ``vmap`` of the pullback.  It runs as numpy.  Which calls it runs is
``api/forward.py``'s ``BatchedChoice``, as for ``jacfwd``: not where an operation has no
batched rule (``NotBatchable``), nor code with loops over small arrays under the auto
backend, nor loop-free code under ``S2SGRAD_BACKEND=numba``; there the per-row sweeps
run, and ``reason`` says why.

Where the batched transform meets a forward value whose rank no rule tells
(``np.linalg.inv(a)``), the vjp function runs once traced (``seen_ranks``) and that
build reads the ranks of its locals.

The cotangents are passed shaped as the output: a signature's first call learns the
output's shapes from the forward sweep run as Python, later calls pass the last shapes
and check them against the output the sweep returns (a call whose output changed shape
runs again with the right ones).
"""
import os
import re
import sys

import numpy as np

from ..backend import cache
from ..backend.numba_backend import UNDECIDED
from ..compiler.forward.batched import NotBatchable
from ..compiler.pipeline_forward import build_jvp
from ..compiler.pipeline_higher import user_comments
from ..errors import UserCodeError
from ..trees import flatten, is_tree
from .call_plan import plan_key
from .forward import BatchedChoice, ForwardFunction
from .loading import load_function

PULLBACK_REASON = ("jacrev runs as one batched adjoint sweep of numpy calls (every adjoint "
                   "carries the basis cotangents first), not one adjoint sweep per row.")

#: what a reason for the per-row sweeps says the user gets, and can do
PER_ROW = ("jacrev runs one adjoint sweep per row instead: the same Jacobian, slower for "
           "many rows (jacfwd sweeps columns; a custom_vjp rule can replace the operation).")


class BatchedRows:
    """The batched rows of one split module (``generated``, a ``SplitGenerated``): see
    the module doc; ``has_aux``: the output is (differentiated output, aux...).  Kept on
    ``generated`` and pickled with it (with its built code: no build where unpickled)."""

    def __init__(self, generated, has_aux):
        self.generated, self.has_aux = generated, has_aux
        self.reason = getattr(generated, "vjp_reason", None)
        self.function = None             # the PullbackFunction, made at the first call
        self.choice = BatchedChoice()
        self.shapes = {}                 # plan_key of the arguments -> the cotangents
        self.failed = {}                 # plan_key -> why the batched code did not run
        self.observed = set()            # choice keys whose locals' ranks were seen

    def run(self, code_args, outputs):
        """``(output, rows per gradient)``, or None: the per-row sweeps run the call.
        ``outputs(code_args)``: the output leaves of a call (a signature's first)."""
        generated = self.generated
        if getattr(generated, "vjp", None) is None:
            return None
        key = plan_key(code_args)
        if key in self.failed:
            return None
        try:
            if self.function is None:
                self.function = _pullback(generated)
            cts = self.shapes.get(key)
            if cts is None:
                cts = _cotangents(outputs(code_args))
            result = self._sweep(code_args, cts)
            if result is None:
                return None
            value, rows, leaves = result
            if [np.shape(o) for o in leaves] != [c.shape for c in cts]:
                cts = _cotangents(leaves)        # the output changed shape: again
                value, rows, leaves = self._sweep(code_args, cts)
        except (NotBatchable, UserCodeError) as exc:     # while building: for good
            self.failed[key] = self.reason = f"Not batched: {str(exc).rstrip('.')}. {PER_ROW}"
            return None
        except Exception as exc:     # while running (the user's error too): this call
            self.reason = f"the batched adjoint sweep raised {type(exc).__name__}: {exc}"
            return None
        self.shapes[key] = cts
        self.reason = None
        return value, rows

    def _sweep(self, code_args, cts):
        """(output, rows, output leaves) of one run, or None where ``BatchedChoice``
        refuses it."""
        if any(c.dtype.kind == "c" for c in cts):
            raise NotBatchable("a complex output")
        args = [*code_args, *cts]
        ran, result = self.choice.run(self.function, args, {})
        key = self.choice.key(args)
        if not ran and key not in self.observed and \
                "is not known" in self.choice.not_batched.get(key, ""):
            # a value no rule tells the rank of: the ranks seen in a run, for this build
            self.observed.add(key)
            del self.choice.not_batched[key]
            self.function.ranks = seen_ranks(self.function.fn, args)
            try:
                ran, result = self.choice.run(self.function, args, {})
            finally:
                self.function.ranks = {}
        if not ran:
            self.reason = self.choice.reason()
            if self.reason and self.reason.startswith("Not batched"):
                self.reason = f"{self.reason} {PER_ROW}"
            return None
        returned, blocks = result
        n = len(returned) - 1                   # (gradients..., output)
        value = returned[n]
        rows = [blocks[0][k] if len(blocks) == 1 else
                np.concatenate([b[k] for b in blocks], axis=0) for k in range(n)]
        out = value[0] if self.has_aux else value
        leaves = flatten(out)[0] if is_tree(out) else [out]
        return value, rows, leaves


class PullbackFunction(ForwardFunction):
    """The batched forward-mode Jacobian of a vjp function (``vjp``, a ``VjpModule``,
    written at ``path``) w.r.t. its cotangents, run as numpy; calling it gives the code's
    raw ``(returned, blocks)``.  Its comments name the user's lines."""

    def __init__(self, fn, positions, vjp, path):
        super().__init__(fn, positions, False, True, batched=True)
        self.vjp, self.vjp_path = vjp, path
        #: the ranks of fn's locals in a run on the arguments being built for (set around
        #: that build only: ``BatchedRows._sweep``)
        self.ranks = {}

    def build_code(self, fn, bound_self, arg_types, trees):
        title = (f"jacrev's rows in one batched adjoint sweep: "
                 f"{self.vjp.title.replace('value and gradient', 'Jacobian')}, forward mode "
                 f"over {self.vjp.name} w.r.t. the cotangents")
        try:
            jvp = build_jvp(fn, self.positions, False, bound_self, arg_types=arg_types,
                            arg_trees=trees, jacobian=True, batched=True, as_numpy=True,
                            pullback=True, title=title, ranks=self.ranks)
        except NotBatchable as exc:           # "(line 241)" of the vjp module: the user's
            raise NotBatchable(re.sub(r"\(line (\d+)\)", self._user_line, str(exc))) from None
        user_comments(jvp, _Commented(self.vjp, self.vjp_path))
        return jvp

    def load_code(self, generated):
        compiled, path = load_function(generated.function_name, generated.source,
                                       generated.function_name, generated.free)
        if compiled.backend == UNDECIDED:
            compiled._use_python(PULLBACK_REASON, backend="numpy")
        return compiled, path

    def __call__(self, *args, **kwargs):
        _, _, result, _ = self._run_forward(list(args), lambda arrays: [], plan_key(args))
        return result

    def _user_line(self, match):
        """``(in the gradient of <the user's line>, file.py:12)`` for a vjp module line."""
        at = int(match.group(1))
        origin = next((self.vjp.line_map[k] for k in range(at, 0, -1)
                       if k in self.vjp.line_map), None)
        if origin is None:
            return match.group(0)
        where = f"{os.path.basename(origin.filename or '?')}:{origin.lineno}"
        grad_of = "in the gradient of " if at >= self.vjp.adjoint_from else "at "
        return f"({grad_of}{(origin.text or '').strip()!r}, {where})"

    def __getstate__(self):
        """The vjp function pickles as its module's text, written to the cache where it is
        loaded (a generated module is not importable by name in another process)."""
        state = super().__getstate__()
        state["fn"] = None
        state.pop("__wrapped__", None)
        return state

    def __setstate__(self, state):
        state["fn"], state["vjp_path"] = _materialised(state["vjp"])
        super().__setstate__(state)


class _Commented:
    """What ``pipeline_higher.user_comments`` reads of the module it rewrites comments of
    (the vjp module: its path, line map, function name and first adjoint line)."""

    def __init__(self, vjp, path):
        self.path, self.line_map, self.function_name = path, vjp.line_map, vjp.name
        self.adjoint_from = vjp.adjoint_from


def _materialised(vjp):
    """(the function of the ``VjpModule`` ``vjp``, the path of its module)."""
    fn, path, _ = cache.materialise(vjp.name, vjp.source, vjp.name)
    return fn, path


def _pullback(generated):
    """The PullbackFunction of ``generated``'s vjp module (written to the cache)."""
    fn, path = _materialised(generated.vjp)
    n_args = generated.n_params + len(generated.free)
    return PullbackFunction(fn, tuple(range(n_args, n_args + generated.n_cotangents)),
                            generated.vjp, path)


def seen_ranks(fn, args):
    """The rank of each local of ``fn`` (the vjp function: flat code, one name a value)
    in a run on ``args`` (where a build met a value no rule tells the rank of:
    ``np.sort(x)``, ``np.linalg.inv(a)``; builds are keyed by the arguments' ranks and
    unit dimensions, so these are that build's ranks; names under an ``if`` are left out
    by the transform); a name seen with two ranks is left out."""
    code, seen = fn.__code__, {}

    def local(frame, event, arg):
        for name, value in frame.f_locals.items():
            if isinstance(value, (np.ndarray, np.generic, float, int, complex)):
                seen.setdefault(name, set()).add(np.ndim(value))
        return local

    def calls(frame, event, arg):
        return local if frame.f_code is code else None

    previous = sys.gettrace()
    sys.settrace(calls)
    try:
        fn(*args)
    finally:
        sys.settrace(previous)
    return {name: ranks.pop() for name, ranks in seen.items() if len(ranks) == 1}


def _cotangents(leaves):
    """Zero cotangents shaped as the output ``leaves`` (float64 where not floating)."""
    out = []
    for leaf in leaves:
        dtype = np.result_type(leaf)
        out.append(np.zeros(np.shape(leaf), dtype=dtype if dtype.kind in "fc"
                            else np.float64))
    return out
