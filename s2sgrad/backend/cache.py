"""The on-disk cache of generated modules: content-addressed files in a per-user folder.

A module's file name ends in a hash of its full text, of the s2sgrad version,
of the runtime helpers compiled code inlines (``s2sgrad/runtime/`` and their
Numba versions, ``backend/numba_*.py``) and of the level Numba optimises at
(``$NUMBA_OPT``: Numba's own cache key does not hold it), so different code never
shares a file and Numba's machine code cached beside a module is never stale (nor
unoptimised code, compiled under ``NUMBA_OPT=0`` as the test suite runs, loaded by a
process at the default level).  A file whose text does not match
its name (truncated, edited, corrupt) is rewritten before use; writes go
through a temporary file and an atomic rename, so a reader never sees half a
file, even with several processes filling the same entry at once.

The folder is ``$S2SGRAD_CACHE_DIR``, else the platform's per-user cache
folder (``$XDG_CACHE_HOME/s2sgrad`` or ``~/.cache/s2sgrad`` on Linux,
``~/Library/Caches/s2sgrad`` on macOS, ``%LOCALAPPDATA%\\s2sgrad\\Cache`` on
Windows).  Where it cannot be written, modules are kept in memory, with one
warning per process.

Beside a module, ``<module>.fallback.json`` remembers the argument types for
which Numba could not compile it (and why), so a later process runs it as
Python at once instead of failing the same compile again; ``<module>.types.json``
(written by ``result_types``) records the types its compiled results are given, so
a later process that loads Numba's cached code never runs it as Python first.
"""
import ast
import hashlib
import importlib.util
import json
import linecache
import os
import pathlib
import re
import sys
import tempfile
import types
import warnings

VERSION = "0.1.0"
#: where the code Numba inlines into every compiled gradient lives: the runtime package
#: (the helpers generated code calls as ``rt.<name>``) and the Numba versions of them
_INLINED_PACKAGES = (("runtime", "*.py"), ("backend", "numba_*.py"))
_fingerprint = None
_warned = set()


class CacheWarning(UserWarning):
    """The cache folder cannot be used as it should; s2sgrad carries on without it."""


def has_loops(source, function=None):
    """True when generated ``source`` has a ``for`` or ``while`` loop (or is unknown); with
    ``function`` (the name of one of its functions), when that function or a function of
    the module it reads has one: the loops of a split module's ``_jacobian`` (one adjoint
    sweep per row) are not its ``_forward``'s or ``_backward``'s.  The loops of fused
    elementwise kernels (the functions an ``rt.Fused(...)`` or ``rt.FusedSum(...)`` is
    given, compiled on their own by ``runtime/fused.py``) are not the code's loops."""
    if source is None:
        return True
    tree = ast.parse(source)
    kernels = {node.args[0].id for node in ast.walk(tree)
               if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and
               node.func.attr in ("Fused", "FusedSum") and node.args and
               isinstance(node.args[0], ast.Name)}
    functions = {item.name: item for item in tree.body if isinstance(item, ast.FunctionDef)}
    if function is None or function not in functions:
        items = [item for item in tree.body
                 if not (isinstance(item, ast.FunctionDef) and item.name in kernels)]
    else:
        items, todo = [], [function]
        while todo:
            item = functions[todo.pop()]
            items.append(item)
            todo += {node.id for node in ast.walk(item) if isinstance(node, ast.Name) and
                     node.id in functions and node.id not in kernels and
                     functions[node.id] not in items and node.id not in todo}
    return any(isinstance(node, (ast.For, ast.While)) for item in items
               for node in ast.walk(item))


def warn_once(key, message):
    """Issue ``message`` as a CacheWarning, at most once per process for ``key``."""
    if key not in _warned:
        _warned.add(key)
        warnings.warn(message, CacheWarning, stacklevel=4)


def default_cache_dir():
    """The per-user cache folder of this platform, with ``s2sgrad`` appended."""
    home = os.path.expanduser("~")
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or os.path.join(home, "AppData", "Local")
        return os.path.join(base, "s2sgrad", "Cache")
    if sys.platform == "darwin":
        return os.path.join(home, "Library", "Caches", "s2sgrad")
    base = os.environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(base):          # the XDG spec: a relative value is ignored
        base = os.path.join(home, ".cache")
    return os.path.join(base, "s2sgrad")


def cache_dir():
    """The directory generated modules live in (not created here)."""
    return os.path.abspath(os.environ.get("S2SGRAD_CACHE_DIR") or default_cache_dir())


def inlined_files():
    """The files whose code Numba inlines into every compiled gradient, relative to the
    package's folder, sorted: every module of ``s2sgrad/runtime/`` and every
    ``s2sgrad/backend/numba_*.py``, found on disk rather than listed by hand."""
    root = pathlib.Path(__file__).resolve().parent.parent
    return sorted(str(path.relative_to(root)) for folder, pattern in _INLINED_PACKAGES
                  for path in (root / folder).glob(pattern))


def fingerprint():
    """A hash of s2sgrad's version, of the runtime helpers compiled code inlines and of
    ``$NUMBA_OPT`` (module doc)."""
    global _fingerprint
    if _fingerprint is None:
        digest = hashlib.sha256(VERSION.encode())
        digest.update(f"NUMBA_OPT={os.environ.get('NUMBA_OPT', '')}".encode())
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        for name in inlined_files():
            digest.update(name.encode())
            try:
                with open(os.path.join(root, name), "rb") as f:
                    digest.update(f.read())
            except OSError:
                digest.update(b"?")
        _fingerprint = digest.hexdigest()[:16]
    return _fingerprint


def digest_of(source):
    """The content hash that names the module holding ``source``."""
    return hashlib.sha256((fingerprint() + "\n" + source).encode()).hexdigest()[:16]


def module_path(stem, source, directory=None):
    """The file that holds ``source``: ``<directory>/<stem>_<hash>.py``."""
    return os.path.join(directory or cache_dir(), f"{stem}_{digest_of(source)}.py")


def _write_atomically(path, text):
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def store(stem, source, directory=None):
    """Make sure the file for ``source`` exists with exactly that text; returns its path.

    An existing file with the same text is left alone (its Numba cache stays
    valid); one with other text (corrupt) is replaced atomically.  Raises
    OSError when the folder cannot be written.
    """
    path = module_path(stem, source, directory)
    try:
        with open(path, encoding="utf-8") as f:
            if f.read() == source:
                return path
    except (OSError, UnicodeDecodeError):
        pass
    os.makedirs(os.path.dirname(path), exist_ok=True)
    _write_atomically(path, source)
    return path


def load(path, function_name):
    """Import the module at ``path`` and return its function ``function_name``."""
    module_name = "s2sgrad_generated." + os.path.splitext(os.path.basename(path))[0]
    module = sys.modules.get(module_name)
    if module is None or getattr(module, "__file__", None) != path:
        spec = importlib.util.spec_from_file_location(module_name, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        sys.modules[module_name] = module
    return getattr(module, function_name)


def load_in_memory(path, source, function_name):
    """Run ``source`` as the module that would live at ``path`` without writing it (its
    lines are registered for tracebacks); returns its function ``function_name``."""
    module_name = "s2sgrad_generated." + os.path.splitext(os.path.basename(path))[0]
    module = sys.modules.get(module_name)
    if module is None or getattr(module, "__file__", None) != path:
        module = types.ModuleType(module_name)
        module.__file__ = path
        linecache.cache[path] = (len(source), None, source.splitlines(True), path)
        exec(compile(source, path, "exec"), module.__dict__)  # noqa: S102 - our own code
        sys.modules[module_name] = module
    return getattr(module, function_name)


def materialise(stem, source, function_name):
    """The function ``function_name`` of the module with text ``source``, from the cache
    folder; kept in memory (one warning) when the folder cannot be written.

    Returns ``(function, path, on_disk)``.
    """
    try:
        path = store(stem, source)
    except OSError as exc:
        folder = cache_dir()
        warn_once(("store", folder),
                  f"s2sgrad cannot write generated code to the cache folder {folder} "
                  f"({exc.strerror or exc}); it is kept in memory and compiled again in "
                  f"every process. Set S2SGRAD_CACHE_DIR to a writable folder to cache it.")
        path = module_path(stem, source)
        return load_in_memory(path, source, function_name), path, False
    return load(path, function_name), path, True


# ---------------------------------------------------------------- remembered fallbacks

def fallback_path(path):
    """The sidecar file beside the module at ``path`` that remembers failed compiles."""
    return os.path.splitext(path)[0] + ".fallback.json"


def has_numba_index(path, function_name):
    """True when Numba's cache index of the function ``function_name`` of the module at
    ``path`` is on disk (a process compiled it before: ``__pycache__/<module>.<function>-
    <line>.py<version>.nbi``); False when not, or when the folder cannot be read."""
    folder, name = os.path.split(path)
    prefix = os.path.splitext(name)[0] + "." + function_name + "-"
    try:
        return any(n.startswith(prefix) and n.endswith(".nbi")
                   for n in os.listdir(os.path.join(folder, "__pycache__")))
    except OSError:
        return False


def types_path(path):
    """The sidecar file beside the module at ``path`` that records its result types."""
    return os.path.splitext(path)[0] + ".types.json"


def read_sidecar(sidecar):
    """The JSON object in the file ``sidecar`` beside a module; {} when it is missing,
    unreadable or not a JSON object (a record that cannot be read is never trusted)."""
    try:
        with open(sidecar, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def write_sidecar(sidecar, data):
    """Write ``data`` as JSON to the file ``sidecar`` atomically; a folder that cannot be
    written is left as it is (the record is an optimisation)."""
    text = json.dumps(data, indent=1, sort_keys=True)
    try:
        _write_atomically(sidecar, text + "\n")
    except OSError:
        pass


def _read_sidecar(path, digest):
    """The entries of the sidecar of ``path`` if it is whole and belongs to the module
    with hash ``digest``; {} otherwise (missing, corrupt or stale: ignored)."""
    data = read_sidecar(fallback_path(path))
    if data.get("module") != digest or not isinstance(data.get("failed"), dict):
        return {}
    return {k: v for k, v in data["failed"].items() if isinstance(v, str)}


def recall_fallback(path, digest, key):
    """The reason Numba could not compile the module at ``path`` (hash ``digest``) for
    ``key`` (the Numba version and the argument types), or None if not remembered."""
    return _read_sidecar(path, digest).get(key)


def remember_fallback(path, digest, key, reason):
    """Record beside the module that Numba cannot compile it for ``key``, and why.  A
    corrupt sidecar is replaced; a folder that cannot be written is left as it is."""
    entries = _read_sidecar(path, digest)
    entries[key] = reason
    write_sidecar(fallback_path(path), {"module": digest, "failed": entries})


# ---------------------------------------------------------------- listing and clearing

_MODULE = re.compile(r"^(?P<stem>[A-Za-z_][A-Za-z0-9_]*_[0-9a-f]{16})\.py$")
_TITLE = re.compile(r"^# s2sgrad: value and gradient of (?P<function>.+?) "
                    r"\((?P<where>[^()]*:\d+)\)")
_SIDECARS = (".fallback.json", ".types.json")
_TEMPORARY = re.compile(r"^tmp[A-Za-z0-9_]+\.tmp$")


class Entry:
    """One generated module in the cache folder.

    ``path``; ``function`` and ``where`` (``file.py:line`` of its source) from the
    module's title line; ``backend``: 'numba' (Numba's machine code is cached beside
    it), 'python' (Numba could not compile it: ``reason``), 'numpy' (loop-free: runs as
    numpy calls) or 'not compiled' (it loops, and no compile is cached);  ``size``:
    bytes of the module and its sidecar and cache files; ``mtime``: when it was written.
    """

    def __init__(self, path, function, where, backend, reason, size, mtime, files):
        self.path, self.function, self.where = path, function, where
        self.backend, self.reason, self.size, self.mtime = backend, reason, size, mtime
        self.files = files


def _companions(directory, stem):
    """The files beside the module ``stem``: its sidecars (remembered fallbacks, result
    types) and, in __pycache__, Numba's index and data files and Python's bytecode."""
    found = [os.path.join(directory, stem + suffix) for suffix in _SIDECARS]
    pycache = os.path.join(directory, "__pycache__")
    try:
        names = os.listdir(pycache)
    except OSError:
        names = []
    found += [os.path.join(pycache, n) for n in names if n.startswith(stem + ".")]
    return [f for f in found if os.path.isfile(f)]


def entries(directory=None):
    """The generated modules in the cache folder (``directory``, by default
    ``cache_dir()``), newest first, as ``Entry`` objects; [] when there is no folder."""
    directory = directory or cache_dir()
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return []
    out = []
    for name in names:
        match = _MODULE.match(name)
        path = os.path.join(directory, name)
        if not match or not os.path.isfile(path):
            continue
        try:
            with open(path, encoding="utf-8") as f:
                source = f.read()
            mtime = os.path.getmtime(path)
        except (OSError, UnicodeDecodeError):
            continue
        title = _TITLE.match(source)
        function, where = (title.group("function"), title.group("where")) if title else (
            match.group("stem").rsplit("_value_and_grad", 1)[0], "?")
        files = _companions(directory, match.group("stem"))
        failed = _read_sidecar(path, digest_of(source))
        try:
            loops = has_loops(source)
        except SyntaxError:
            loops = True
        if any(f.endswith(".nbi") for f in files):
            backend, reason = "numba", None
        elif failed:
            backend, reason = "python", next(iter(failed.values()))
        elif not loops:
            backend, reason = "numpy", None
        else:
            backend, reason = "not compiled", None
        size = sum(os.path.getsize(f) for f in [path] + files)
        out.append(Entry(path, function, where, backend, reason, size, mtime, [path] + files))
    out.sort(key=lambda e: e.mtime, reverse=True)
    return out


def clear(directory=None):
    """Delete the generated modules of the cache folder and their sidecar and cache
    files (and unfinished temporary files); anything else there is left alone.
    Returns (files removed, bytes freed)."""
    directory = directory or cache_dir()
    doomed = [f for e in entries(directory) for f in e.files]
    try:
        doomed += [os.path.join(directory, n) for n in os.listdir(directory)
                   if _TEMPORARY.match(n)]
    except OSError:
        return 0, 0
    removed, freed = 0, 0
    for f in doomed:
        try:
            size = os.path.getsize(f)
            os.unlink(f)
        except OSError:
            continue
        removed, freed = removed + 1, freed + size
    pycache = os.path.join(directory, "__pycache__")
    try:
        os.rmdir(pycache)          # only when nothing else is left in it
    except OSError:
        pass
    return removed, freed
