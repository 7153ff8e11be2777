"""The cache under faults, with real processes: several processes filling one entry at
once, a read-only cache folder, corrupt Numba index and data files, an edited helper,
remembered compile failures (and a corrupt record of them), recorded result types (a warm
process never runs the code as Python; a corrupt or stale record is rebuilt), and the
default folder.

Each test runs ``child.py`` (written below into a temporary folder) in fresh Python
processes; the child prints what it saw as one JSON line.
"""
import json
import os
import pathlib
import shutil
import subprocess
import sys
import textwrap

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent

CHILD = '''
import json, os, sys, time, warnings
import numpy as np
import s2sgrad as ms
from s2sgrad.backend import cache, numba_backend
import helpers

def square_sum(x):
    return np.sum(helpers.scale(x) ** 2)

def with_einsum(x):
    return np.einsum("i,i->", x, x)

mode = sys.argv[1]
if len(sys.argv) > 2:                      # start together: wait for the given moment
    while time.time() < float(sys.argv[2]):
        time.sleep(0.005)
if mode == "no-compile":                   # a failed compile must be recalled, not retried
    def refuse(self, args):
        raise AssertionError("Numba was asked to compile again")
    numba_backend.Compiled._compile = refuse
references = []                           # Python runs made to learn the result types
run_reference = numba_backend.Compiled._reference
def counted(self, args):
    references.append(1)
    return run_reference(self, args)
numba_backend.Compiled._reference = counted
fn = with_einsum if mode in ("einsum", "no-compile") else square_sum
x = np.array([0.5, -1.0, 2.0], dtype=np.float32 if mode == "float32" else np.float64)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    g = ms.value_and_grad(fn)
    value, grad = g(x)
    again = ms.value_and_grad(fn)(x)       # a second gradient object, same code
print(json.dumps({"value": float(value), "grad": [float(v) for v in grad],
                  "backend": g.backend, "reason": g.fallback_reason, "path": g.path,
                  "warnings": [str(w.message) for w in caught
                               if issubclass(w.category, cache.CacheWarning)],
                  "numba_loaded": "numba" in sys.modules, "references": len(references),
                  "types": [type(value).__name__, grad.dtype.name,
                            type(again[0]).__name__, again[1].dtype.name]}))
'''

HELPER = "def scale(x):\n    return x * {factor}\n"


@pytest.fixture
def child(tmp_path):
    """A runner of child processes in ``tmp_path``: ``run(mode, **env)`` -> parsed JSON."""
    (tmp_path / "child.py").write_text(textwrap.dedent(CHILD))
    (tmp_path / "helpers.py").write_text(HELPER.format(factor=2.0))
    cache_dir = tmp_path / "cache"

    def command(mode, *extra, prefix=()):
        return list(prefix) + [sys.executable, str(tmp_path / "child.py"), mode, *extra]

    def environment(**env):
        base = {k: v for k, v in os.environ.items()
                if not k.startswith(("S2SGRAD_", "NUMBA_", "XDG_"))}
        # NUMBA_OPT passes through (the suite's 0, tests/conftest.py): these tests are
        # about the cache, and LLVM's passes were a third of each cold child's compile
        base.update(PYTHONPATH=os.pathsep.join([str(ROOT), str(tmp_path)]),
                    S2SGRAD_CACHE_DIR=str(cache_dir), S2SGRAD_BACKEND="numba",
                    NUMBA_OPT=os.environ.get("NUMBA_OPT"))
        base.update(env)
        return {k: v for k, v in base.items() if v is not None}

    def run(mode, prefix=(), **env):
        done = subprocess.run(command(mode, prefix=prefix), cwd=tmp_path, capture_output=True,
                              text=True, env=environment(**env), timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        return json.loads(done.stdout.strip().splitlines()[-1])

    run.command, run.environment, run.cache, run.folder = command, environment, cache_dir, \
        tmp_path
    return run


def _expected(factor):
    x = [0.5, -1.0, 2.0]
    return sum((factor * v) ** 2 for v in x), [2 * factor * factor * v for v in x]


def _check(out, factor=2.0):
    value, grad = _expected(factor)
    assert out["value"] == pytest.approx(value) and out["grad"] == pytest.approx(grad)


def test_four_processes_filling_the_same_entry_at_once_all_get_the_right_gradient(child):
    import time
    start = str(time.time() + 3.0)           # past every process's start-up
    procs = [subprocess.Popen(child.command("plain", start), cwd=child.folder,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=child.environment()) for _ in range(4)]
    outs = []
    for p in procs:
        stdout, stderr = p.communicate(timeout=600)
        assert p.returncode == 0, stderr[-3000:]
        outs.append(json.loads(stdout.strip().splitlines()[-1]))
    for out in outs:
        _check(out)
        assert out["backend"] == "numba", out["reason"]
        assert out["warnings"] == []
    assert len({out["path"] for out in outs}) == 1
    left = sorted(p.name for p in child.cache.iterdir())
    assert not [name for name in left if name.endswith(".tmp")], left
    _check(child("plain"))                    # and the entry they left is whole


def _read_only(folder):
    """chmod the tree read-only; the prefix that makes a child obey it (root ignores
    permissions unless it drops its capabilities)."""
    for path in [folder, *folder.rglob("*")]:
        path.chmod(0o555 if path.is_dir() else 0o444)
    if os.geteuid() != 0:
        return ()
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv: a read-only folder cannot be made")
    return (setpriv, "--inh-caps=-all", "--bounding-set=-all", "--")


def test_read_only_empty_cache_folder_works_in_memory_with_one_warning(child):
    child.cache.mkdir()
    prefix = _read_only(child.cache)
    try:
        out = child("plain", prefix=prefix, S2SGRAD_BACKEND="python")
    finally:
        child.cache.chmod(0o755)
    _check(out)
    assert len(out["warnings"]) == 1 and "cannot write" in out["warnings"][0] and \
        "S2SGRAD_CACHE_DIR" in out["warnings"][0]
    assert list(child.cache.iterdir()) == []


def test_read_only_filled_cache_folder_runs_compiled_without_crashing(child):
    child("plain", S2SGRAD_BACKEND="python")           # the module exists, no Numba cache
    home = child.folder / "home"
    home.mkdir()
    prefix = _read_only(child.cache)
    _read_only(home)
    try:
        out = child("plain", prefix=prefix, HOME=str(home), XDG_CACHE_HOME=str(home))
    finally:
        for path in [child.cache, home, *child.cache.rglob("*")]:
            path.chmod(0o755)
    _check(out)
    assert out["backend"] == "numba", out["reason"]
    assert len(out["warnings"]) <= 1, out["warnings"]   # Numba's cache, once


@pytest.mark.parametrize("damage", ["index-garbage", "data-truncated"])
def test_corrupt_numba_cache_beside_a_module_is_recompiled(child, damage):
    first = child("plain")
    assert first["backend"] == "numba", first["reason"]
    kind = ".nbi" if damage.startswith("index") else ".nbc"
    files = [p for p in (child.cache / "__pycache__").iterdir() if p.name.endswith(kind)]
    assert files
    for path in files:
        data = path.read_bytes()
        path.write_bytes({"garbage": b"\x80\x04garbage\x00" * 7,
                          "truncated": data[:len(data) // 2]}[damage.split("-")[1]])
    out = child("plain")
    _check(out)
    assert out["backend"] == "numba", out["reason"]
    _check(child("plain"))                   # and the cache it rewrote is whole


def test_an_edited_helper_gives_new_code_never_the_stale_compiled_one(child):
    _check(child("plain"), 2.0)
    (child.folder / "helpers.py").write_text(HELPER.format(factor=3.0))
    out = child("plain")
    _check(out, 3.0)
    assert out["backend"] == "numba", out["reason"]


def test_a_failed_numba_compile_is_remembered_by_the_next_process(child):
    first = child("einsum")
    assert first["backend"] == "python" and "einsum" in first["reason"], first["reason"]
    sidecar = pathlib.Path(first["path"][:-3] + ".fallback.json")
    assert sidecar.exists()
    second = child("no-compile")             # would raise if Numba were tried again
    assert second["backend"] == "python" and second["reason"] == first["reason"]
    assert not second["numba_loaded"]


@pytest.mark.parametrize("damage", ["garbage", "other-module", "truncated"])
def test_a_corrupt_record_of_failed_compiles_is_ignored_and_rewritten(child, damage):
    first = child("einsum")
    sidecar = pathlib.Path(first["path"][:-3] + ".fallback.json")
    text = sidecar.read_text()
    sidecar.write_text({"garbage": "\x00 not json {", "truncated": text[:len(text) // 2],
                        "other-module": text.replace(json.loads(text)["module"], "0" * 16)
                        }[damage])
    out = child("einsum")
    assert out["backend"] == "python" and out["reason"] == first["reason"]
    assert json.loads(sidecar.read_text()) == json.loads(text)


def test_default_cache_folder_is_per_user_not_the_working_directory(child):
    xdg = child.folder / "xdg"
    out = child("plain", S2SGRAD_CACHE_DIR=None, XDG_CACHE_HOME=str(xdg),
                S2SGRAD_BACKEND="python")
    _check(out)
    assert pathlib.Path(out["path"]).parent == xdg / "s2sgrad"
    assert not (child.folder / "generated").exists()
    home = child.folder / "home"
    out = child("plain", S2SGRAD_CACHE_DIR=None, XDG_CACHE_HOME=None, HOME=str(home),
                S2SGRAD_BACKEND="python")
    assert pathlib.Path(out["path"]).parent == home / ".cache" / "s2sgrad"


@pytest.mark.parametrize("mode", ["plain", "float32"])
def test_a_warm_process_never_runs_the_code_as_python_to_learn_result_types(child, mode):
    cold = child(mode)
    assert cold["backend"] == "numba", cold["reason"]
    # one Python run in the cold process; its second gradient object reads the record
    assert cold["references"] == 1
    assert pathlib.Path(cold["path"][:-3] + ".types.json").exists()
    warm = child(mode)
    assert warm["references"] == 0
    assert warm["types"] == cold["types"]     # the same types as the Python run gave
    assert warm["types"][1] == ("float32" if mode == "float32" else "float64")
    assert warm["types"][0] == warm["types"][2] == (
        "float32" if mode == "float32" else "float64")
    value, grad = _expected(2.0)
    assert warm["value"] == pytest.approx(value, rel=1e-6)
    assert warm["grad"] == pytest.approx(grad, rel=1e-6)


def _damaged_types(text, damage):
    """The record of result types ``text`` with ``damage`` done to it."""
    data = json.loads(text)
    (key, skeleton), = data["types"].items()
    if damage == "garbage":
        return "\x00 not json {"
    if damage == "truncated":
        return text[:len(text) // 2]
    if damage == "other-module":
        data["module"] = "0" * 16
    elif damage == "edited":               # the checksum no longer matches the entries
        data["types"][key] = ["tuple", [["array", "<f8"]], True]
    elif damage == "other-numba":          # whole, but recorded under another Numba
        data["types"] = {key.replace("numba ", "numba 0.0.0-"): skeleton}
    elif damage == "wrong-structure":      # whole, but not what this code gives
        data["types"][key] = ["tuple", [["scalar", "<f8"]] * 3, True]
    if damage in ("other-numba", "wrong-structure"):
        from s2sgrad.backend import result_types
        data["check"] = result_types.checksum(data["types"])
    return json.dumps(data)


def test_a_corrupt_or_stale_record_of_result_types_is_rebuilt_never_trusted(child):
    first = child("plain")
    assert first["references"] == 1
    record = pathlib.Path(first["path"][:-3] + ".types.json")
    text = record.read_text()
    for damage in ["garbage", "truncated", "other-module", "edited", "other-numba",
                   "wrong-structure"]:
        record.write_text(_damaged_types(text, damage))
        out = child("plain")
        _check(out)
        assert out["references"] == 1, damage          # not trusted: a Python run
        assert out["types"] == first["types"], damage
        rebuilt = json.loads(record.read_text())
        assert rebuilt["types"].items() >= json.loads(text)["types"].items(), damage
        assert rebuilt["module"] == json.loads(text)["module"], damage
