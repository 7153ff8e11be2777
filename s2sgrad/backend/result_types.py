"""The types compiled results are given, and their record beside a cached module.

Numba gives Python floats where the same code run as Python gives numpy scalars, and
float64 arrays where numpy 2 keeps float32.  ``numba_backend`` runs the code once as
Python per argument types to learn the types the results should have (the reference);
this module turns a reference into a *skeleton*, a small JSON-able description of its
types (``skeleton_of``), and a skeleton and one compiled result into the function that
gives every later compiled result those types (``restorer_from``).

``<module>.types.json`` beside a cached module records the skeletons per argument
types, so a later process that loads Numba's cached machine code never runs the Python
reference (which, on a loop over a large array, costs seconds).  A record is trusted
only when it is whole (a checksum of its entries), belongs to the module's text and
s2sgrad's helpers (the module's hash), to the function and the running Numba and numpy
versions (part of the key), and matches the structure of the compiled result; otherwise it is ignored
and rewritten from a fresh reference.
"""
import hashlib
import json

import numpy as np

from . import cache

class StaleSkeleton(ValueError):
    """A recorded skeleton does not fit the compiled result: the record is not trusted."""


def identity(value):
    return value


def skeleton_of(reference):
    """The types of ``reference`` (a result of the code run as Python) as JSON-able lists:
    ``["tuple", [items], exact]``, ``["list", item or None]``, ``["array", dtype]``,
    ``["scalar", dtype]`` or ``["other", type name]``; None when a dtype cannot be
    written down (then nothing is recorded)."""
    if isinstance(reference, tuple):
        items = [skeleton_of(r) for r in reference]
        return None if None in items else ["tuple", items, type(reference) is tuple]
    if isinstance(reference, list):
        item = skeleton_of(reference[0]) if reference else None
        return None if reference and item is None else ["list", item]
    if isinstance(reference, (np.ndarray, np.generic)):
        dtype = reference.dtype
        if dtype.fields is not None or np.dtype(dtype.str) != dtype:
            return None
        return ["array" if isinstance(reference, np.ndarray) else "scalar", dtype.str]
    return ["other", type(reference).__name__]


def complete(skeleton):
    """True when ``skeleton`` names every type in it (no list whose item type was not
    seen because the reference's list was empty): only complete skeletons are recorded."""
    if skeleton[0] == "list":
        return skeleton[1] is not None and complete(skeleton[1])
    if skeleton[0] == "tuple":
        return all(complete(s) for s in skeleton[1])
    return True


def restorer_like(reference, compiled):
    """A function that gives a result of the compiled code the types of ``reference``, the
    same code's result run as Python (see ``restorer_from``)."""
    skeleton = skeleton_of(reference)
    if skeleton is None:
        return identity
    return restorer_from(skeleton, compiled, strict=False)


def restorer_from(skeleton, compiled, strict=True):
    """A function that gives a result of the compiled code the types ``skeleton`` describes:
    numpy scalars of the same type, arrays of the same dtype (Numba promotes float32 with
    a Python float to float64; numpy 2 does not).  ``compiled`` is the compiled code's
    result for the same argument types: the types Numba gives are fixed by the argument
    types it compiled for, so a part that already has the type (and dtype) is left as it
    is on every call.  A list (a tape the forward sweep returns: its length varies) is
    restored item by item as its first item.  Raises ``StaleSkeleton`` when the skeleton
    does not describe ``compiled`` (another structure, an array for a scalar); with
    ``strict`` False (the skeleton is of a reference run in this process) a leaf of
    another kind is converted to the skeleton's scalar type, or left as it is."""
    kind = skeleton[0] if isinstance(skeleton, list) and skeleton else None
    if kind == "list":
        return _list_restorer(skeleton, compiled, strict)
    if kind == "tuple":
        return _tuple_restorer(skeleton, compiled, strict)
    if kind in ("array", "scalar"):
        return _leaf_restorer(kind, skeleton, compiled, strict)
    if kind == "other" and len(skeleton) == 2 and (not strict or (
            type(compiled).__name__ == skeleton[1]
            and not isinstance(compiled, (tuple, list, np.ndarray)))):
        return identity
    raise StaleSkeleton(f"the record {skeleton!r} does not describe a "
                        f"{type(compiled).__name__}")


def _list_restorer(skeleton, compiled, strict):
    if len(skeleton) != 2 or not isinstance(compiled, list):
        raise StaleSkeleton(f"a list was recorded, the code gives {type(compiled).__name__}")
    if skeleton[1] is None:
        return identity
    if not compiled:            # learnt from the first item of the first list that has one
        def restore(value):
            if not value:
                return value
            item = restorer_from(skeleton[1], value[0], strict)
            return value if item is identity else [item(v) for v in value]
        return restore
    item = restorer_from(skeleton[1], compiled[0], strict)
    return identity if item is identity else (lambda value: [item(v) for v in value])


def _tuple_restorer(skeleton, compiled, strict):
    if len(skeleton) != 3 or not isinstance(skeleton[1], list) or \
            not isinstance(compiled, tuple) or len(compiled) != len(skeleton[1]):
        raise StaleSkeleton(f"a tuple of {len(skeleton[1]) if len(skeleton) > 1 else '?'} "
                            f"was recorded, the code gives {type(compiled).__name__}")
    parts = [restorer_from(s, c, strict) for s, c in zip(skeleton[1], compiled)]
    if all(p is identity for p in parts):
        return identity
    if skeleton[2] is True and len(parts) == 2:    # (value, gradients): each call
        first, second = parts
        if first is identity:
            pair = lambda value: (value[0], second(value[1]))      # noqa: E731
        else:
            pair = lambda value: (first(value[0]), second(value[1]))   # noqa: E731
        pair.parts = parts      # (a gradient's call, which drops the value, reads them)
        return pair
    fix = [(i, p) for i, p in enumerate(parts) if p is not identity]

    def restore(value):
        value = list(value)
        for i, p in fix:
            value[i] = p(value[i])
        return tuple(value)
    return restore


def _leaf_restorer(kind, skeleton, compiled, strict):
    if len(skeleton) != 2 or not isinstance(skeleton[1], str):
        raise StaleSkeleton(f"no dtype in {skeleton!r}")
    try:
        dtype = np.dtype(skeleton[1])
    except (TypeError, ValueError) as exc:
        raise StaleSkeleton(f"no dtype in {skeleton!r}") from exc
    if kind == "array":
        if strict and not isinstance(compiled, np.ndarray):
            raise StaleSkeleton(f"an array was recorded, the code gives "
                                f"{type(compiled).__name__}")
        if isinstance(compiled, np.ndarray) and compiled.dtype == dtype:
            return identity
        return lambda value: value if value.dtype == dtype else value.astype(dtype)
    if strict and (isinstance(compiled, (tuple, list, np.ndarray)) or not isinstance(
            compiled, (bool, int, float, complex, np.generic))):
        raise StaleSkeleton(f"a scalar was recorded, the code gives "
                            f"{type(compiled).__name__}")
    if type(compiled) is dtype.type:
        return identity
    return dtype.type


# ---------------------------------------------------------------- the record on disk

def record_key(function, numba_version, argument_key):
    """The key a skeleton is recorded under: the function's name (a module may hold
    several: vjp's forward, backward and jacobian), the Numba and numpy versions and the
    exact argument types (``repr`` of ``numba_backend.argument_key``'s key)."""
    return f"{function}: numba {numba_version}; numpy {np.__version__}; {argument_key!r}"


def checksum(entries):
    """A short hash of recorded ``entries`` (a record whose entries do not match it is
    not whole)."""
    return hashlib.sha256(json.dumps(entries, sort_keys=True).encode()).hexdigest()[:16]


def _read(path, digest):
    """The recorded skeletons of the module at ``path`` (hash ``digest``) if the record is
    whole and its own; {} otherwise (missing, corrupt, stale)."""
    data = cache.read_sidecar(cache.types_path(path))
    entries = data.get("types") if isinstance(data, dict) else None
    if data.get("module") != digest or not isinstance(entries, dict) or \
            data.get("check") != checksum(entries):
        return {}
    return entries


def recall(path, digest, key):
    """The skeleton recorded for ``key`` beside the module at ``path``, or None."""
    return _read(path, digest).get(key)


def remember(path, digest, key, skeleton):
    """Record ``skeleton`` for ``key`` beside the module at ``path`` (a corrupt or stale
    record is replaced; a folder that cannot be written is left as it is)."""
    entries = _read(path, digest)
    entries[key] = skeleton
    cache.write_sidecar(cache.types_path(path), {"module": digest, "types": entries,
                                            "check": checksum(entries)})
