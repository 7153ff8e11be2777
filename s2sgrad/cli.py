"""The command line: ``python -m s2sgrad show|cache ...``.

    python -m s2sgrad show module:function [--grad-position 0,1] [--has-aux] [--arg ...]
    python -m s2sgrad cache list
    python -m s2sgrad cache clear

``show`` prints the generated value-and-gradient code of a function (a module
name or a ``.py`` file, then the function's name, dotted for a method or an
attribute: ``mypkg.losses:loss``), the generic build as ``s2sgrad.show(fn)``
gives it, or with ``--arg`` per argument (``--arg float32[64,784]``) the code
that runs for such arguments.  ``cache list`` lists the generated modules in
the cache folder (``$S2SGRAD_CACHE_DIR`` or the per-user default); ``cache
clear`` deletes them.
"""
import argparse
import datetime
import importlib
import importlib.util
import os
import sys


def main(argv=None):
    """Run the command line with ``argv`` (default: sys.argv[1:]); returns the exit code."""
    parser = _parser()
    args = parser.parse_args(argv)
    if not getattr(args, "run", None):
        parser.print_help()
        return 2
    try:
        return args.run(args)
    except BrokenPipeError:      # output piped into `head`: stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def _parser():
    parser = argparse.ArgumentParser(
        prog="python -m s2sgrad",
        description="s2sgrad: source-to-source automatic differentiation. See the generated "
                    "gradient code of a function, and list or clear the cache of generated "
                    "modules.")
    commands = parser.add_subparsers(title="commands", metavar="{show,cache}")

    show = commands.add_parser(
        "show", help="print the generated gradient code of a function",
        description="Print the generated value-and-gradient code of a function: the generic "
                    "build, not specialised on argument types, or with --arg per argument "
                    "the code that runs for such arguments (in Python: "
                    "s2sgrad.show(fn, *example_args)).")
    show.add_argument("target", metavar="module:function",
                      help="a module name (pkg.mod) or a .py file, a colon, then the function's "
                           "name; dotted for a method (Class.method) or an object's attribute")
    show.add_argument("--grad-position", default="0", metavar="POSITIONS",
                      help="the argument position(s) to differentiate, comma-separated: 0 "
                           "(default) or 0,1")
    show.add_argument("--has-aux", action="store_true",
                      help="the function returns (loss, aux...): differentiate the loss only")
    show.add_argument("--mode", choices=("grad", "jvp", "jacfwd", "vjp", "jacrev", "hvp",
                                          "hessian"), default="grad",
                      help="grad (default): the value-and-gradient code; jvp: the forward-mode "
                           "code s2sgrad.jvp runs (tangents of every argument); jacfwd: the "
                           "forward-mode Jacobian code of s2sgrad.jacfwd; vjp, jacrev: the "
                           "split reverse-mode module (forward, backward, jacobian functions); "
                           "hvp, hessian: forward mode over the gradient")
    show.add_argument("--arg", action="append", default=[], metavar="EXAMPLE",
                      help="an example argument, once per argument in order, to print the code "
                           "that runs for such arguments: an array as dtype[shape] "
                           "(float32[64,28,28], int32[64], float64[]), or float, int, None, "
                           "True, False, or a quoted string ('sum')")
    show.set_defaults(run=_show)

    cache = commands.add_parser(
        "cache", help="list or clear the generated modules in the cache folder",
        description="The cache folder of generated modules ($S2SGRAD_CACHE_DIR, else the "
                    "per-user cache folder): list them or delete them.")
    actions = cache.add_subparsers(title="actions", metavar="{list,clear}")
    listing = actions.add_parser(
        "list", help="list the generated modules: function, source file:line, backend, size, "
                     "date",
        description="List the generated modules in the cache folder, newest first: the "
                    "function, the file and line of its source, the backend it runs on "
                    "(numba: machine code cached; numpy: loop-free, runs as numpy calls; "
                    "python: Numba could not compile it; not compiled), size and date.")
    listing.add_argument("--paths", action="store_true", help="also print each module's path")
    listing.set_defaults(run=_cache_list)
    clearing = actions.add_parser(
        "clear", help="delete the generated modules and their compiled code",
        description="Delete the generated modules in the cache folder, with their Numba "
                    "machine code and sidecar files; other files are left alone. The next "
                    "call of a gradient builds its code again.")
    clearing.set_defaults(run=_cache_clear)
    cache.set_defaults(run=lambda args: (cache.print_help(), 2)[1])
    return parser


# ---------------------------------------------------------------- show


def _show(args):
    from .api.show import show
    from .errors import S2sgradError
    try:
        positions = _positions(args.grad_position)
        examples = [_example(text) for text in args.arg]
        fn = _resolve(args.target)
    except (ValueError, ImportError, AttributeError, OSError) as exc:
        print(f"s2sgrad show: {exc}", file=sys.stderr)
        return 2
    try:
        show(fn, *examples, grad_position=positions, has_aux=args.has_aux, mode=args.mode)
    except (S2sgradError, ValueError, TypeError) as exc:
        print(f"s2sgrad show: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    return 0


def _positions(text):
    """'0' -> 0, '0,1' -> (0, 1)."""
    try:
        items = tuple(int(p) for p in text.replace(" ", "").split(",") if p)
    except ValueError:
        raise ValueError(f"--grad-position takes integers separated by commas, like 0 or "
                         f"0,1; got {text!r}") from None
    if not items:
        raise ValueError("--grad-position needs at least one position, like 0 or 0,1")
    return items[0] if len(items) == 1 else items


def _example(text):
    """An example argument from its description: 'float32[64,28,28]' -> ones of that dtype
    and shape ('float64[]': a 0-d array), 'float' -> 1.0, 'int' -> 1, 'None', 'True',
    'False', and a quoted string."""
    import numpy as np
    text = text.strip()
    simple = {"float": 1.0, "int": 1, "None": None, "True": True, "False": False}
    if text in simple:
        return simple[text]
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    if text.endswith("]") and "[" in text:
        dtype, shape = text[:-1].split("[", 1)
        try:
            dims = tuple(int(n) for n in shape.replace(" ", "").split(",") if n)
            return np.ones(dims, dtype=np.dtype(dtype))
        except (TypeError, ValueError):
            pass
    raise ValueError(f"--arg takes dtype[shape] (float32[64,28,28], float64[]), float, int, "
                     f"None, True, False or a quoted string; got {text!r}")


def _resolve(target):
    """The object named by 'module:attr.attr' (module: a dotted name or a .py file)."""
    if ":" not in target:
        raise ValueError(f"name the function as module:function (e.g. "
                         f"examples/train_digits.py:Network or mypkg.losses:loss), got "
                         f"{target!r}")
    module_name, attr = target.rsplit(":", 1)
    if module_name.endswith(".py") or os.sep in module_name:
        path = os.path.abspath(module_name)
        if not os.path.isfile(path):
            raise OSError(f"no such file: {module_name}")
        sys.path.insert(0, os.path.dirname(path))
        name = os.path.splitext(os.path.basename(path))[0]
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    else:
        if "" not in sys.path and os.getcwd() not in sys.path:
            sys.path.insert(0, os.getcwd())
        module = importlib.import_module(module_name)
    obj = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise AttributeError(f"{module_name} has no {attr!r} ({part!r} not found in "
                                 f"{getattr(obj, '__name__', type(obj).__name__)})")
        obj = getattr(obj, part)
    if isinstance(obj, type):
        raise ValueError(f"{target} is a class; name a function, a method "
                         f"({attr}.<method>) or a Cell instance (module:model)")
    if not callable(obj):
        raise ValueError(f"{target} is {type(obj).__name__}, not a function, method or Cell")
    return obj


# ---------------------------------------------------------------- cache


def _size(n):
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024


def _cache_list(args):
    from .backend import cache
    folder = cache.cache_dir()
    found = cache.entries(folder)
    total = sum(e.size for e in found)
    print(f"cache folder: {folder} ({len(found)} module{'s' if len(found) != 1 else ''}, "
          f"{_size(total)})")
    if not found:
        return 0
    rows = [("function", "source", "backend", "size", "date")] + [
        (e.function, e.where, e.backend, _size(e.size),
         datetime.datetime.fromtimestamp(e.mtime).strftime("%Y-%m-%d %H:%M"))
        for e in found]
    widths = [max(len(r[k]) for r in rows) for k in range(5)]
    for k, row in enumerate(rows):
        line = "  ".join(cell.rjust(w) if i == 3 else cell.ljust(w)
                         for i, (cell, w) in enumerate(zip(row, widths)))
        print(line.rstrip())
        if args.paths and k > 0:
            print(f"    {found[k - 1].path}")
    return 0


def _cache_clear(args):
    from .backend import cache
    folder = cache.cache_dir()
    removed, freed = cache.clear(folder)
    print(f"cache folder: {folder}: removed {removed} file{'s' if removed != 1 else ''} "
          f"({_size(freed)})")
    return 0
