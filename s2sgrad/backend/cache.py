"""The on-disk cache of generated modules: content-addressed files in ``generated/``.

A module's file name ends in a hash of its full text and of the s2sgrad
version, so different code never shares a file.  A file whose text does not
match its name (truncated, edited, corrupt) is rewritten before use; writes
go through a temporary file and an atomic rename, so a reader never sees
half a file.  The directory is ``$S2SGRAD_CACHE_DIR`` or ``./generated``.
"""
import hashlib
import importlib.util
import os
import sys
import tempfile

VERSION = "0.1.0"


def cache_dir():
    """The directory generated modules live in (created on demand)."""
    path = os.environ.get("S2SGRAD_CACHE_DIR") or os.path.join(os.getcwd(), "generated")
    os.makedirs(path, exist_ok=True)
    return os.path.abspath(path)


def module_path(stem, source, directory=None):
    """The file that holds ``source``: ``<directory>/<stem>_<hash>.py``."""
    digest = hashlib.sha256((VERSION + "\n" + source).encode()).hexdigest()[:16]
    return os.path.join(directory or cache_dir(), f"{stem}_{digest}.py")


def store(stem, source, directory=None):
    """Make sure the file for ``source`` exists with exactly that text; returns its path.

    An existing file with the same text is left alone (its Numba cache stays
    valid); one with other text (corrupt) is replaced atomically.
    """
    path = module_path(stem, source, directory)
    try:
        with open(path, encoding="utf-8") as f:
            if f.read() == source:
                return path
    except (OSError, UnicodeDecodeError):
        pass
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(source)
    os.replace(tmp, path)
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
