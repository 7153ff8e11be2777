"""The command line, run in a subprocess: python -m s2sgrad show / cache list / cache clear,
and --help on each."""
import importlib.util
import os
import pathlib
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import s2sgrad as ms

ROOT = pathlib.Path(__file__).resolve().parent.parent

MODULE = textwrap.dedent("""\
    import numpy as np


    def loss(x, y, scale=None):
        if scale is None:
            return np.sum(np.tanh(x) * y)
        return np.sum(x * y) * scale
    """)


def run(*args, cwd=None, cache=None):
    env = dict(os.environ, PYTHONPATH=str(ROOT), S2SGRAD_BACKEND="python")
    if cache is not None:
        env["S2SGRAD_CACHE_DIR"] = str(cache)
    return subprocess.run([sys.executable, "-m", "s2sgrad", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("args, words", [
    ((), ["show", "cache"]),
    (("show",), ["module:function", "--grad-position", "--has-aux"]),
    (("cache",), ["list", "clear"]),
    (("cache", "list"), ["function", "backend", "size", "date"]),
    (("cache", "clear"), ["Delete the generated modules"]),
])
def test_help_on_every_command(args, words):
    done = run(*args, "--help")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: python -m s2sgrad")
    for word in words:
        assert word in done.stdout


@pytest.fixture
def user_module(tmp_path):
    path = tmp_path / "mymodel.py"
    path.write_text(MODULE)
    spec = importlib.util.spec_from_file_location("mymodel_for_cli_test", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return path, module


def test_show_a_file_function_prints_the_generic_build(user_module, tmp_path):
    path, module = user_module
    done = run("show", f"{path}:loss", "--grad-position", "0,1", cache=tmp_path / "c")
    assert done.returncode == 0, done.stderr
    header, source = done.stdout.split("\n", 1)
    assert header.startswith("# s2sgrad.show: generic build") and "scale=None" in header
    assert "def loss_value_and_grad(x, y, scale):" in source
    assert "w.r.t. x, y" in source
    assert source == ms.show(module.loss, grad_position=(0, 1)) + "\n"


def test_show_with_example_arguments_prints_the_code_that_runs_for_them(user_module, tmp_path):
    path, module = user_module
    done = run("show", f"{path}:loss", "--arg", "float32[2,3]", "--arg", "float32[3]",
               "--arg", "2.0", cache=tmp_path / "c")
    assert done.returncode != 0 and "--arg takes dtype[shape]" in done.stderr
    done = run("show", f"{path}:loss", "--arg", "float32[2,3]", "--arg", "float32[3]",
               "--arg", "float", cache=tmp_path / "c")
    assert done.returncode == 0, done.stderr
    header, source = done.stdout.split("\n", 1)
    assert "the code that runs for arguments like (float32[2, 3], float32[3], float)" in header
    assert source == ms.show(module.loss, np.ones((2, 3), np.float32),
                             np.ones(3, np.float32), 1.0) + "\n"
    assert "np.tanh" not in source      # scale given: the branch for None is folded away


def test_show_a_module_by_name_from_the_current_folder(user_module):
    path, _ = user_module
    done = run("show", "mymodel:loss", cwd=path.parent, cache=path.parent / "c")
    assert done.returncode == 0, done.stderr
    assert "w.r.t. x\n" in done.stdout and "(mymodel.py:4)" in done.stdout


@pytest.mark.parametrize("target, extra, message", [
    ("mymodel", (), "name the function as module:function"),
    ("mymodel:nothing", (), "has no 'nothing'"),
    ("no_such_module_here:f", (), "No module named 'no_such_module_here'"),
    ("mymodel:loss", ("--grad-position", "a"), "integers separated by commas"),
])
def test_show_errors_say_what_to_do(user_module, target, extra, message):
    path, _ = user_module
    done = run("show", target, *extra, cwd=path.parent)
    assert done.returncode != 0 and message in done.stderr
    assert "Traceback" not in done.stderr


def test_cache_list_and_clear(user_module, tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv("S2SGRAD_CACHE_DIR", str(cache))
    monkeypatch.setenv("S2SGRAD_BACKEND", "python")
    _, module = user_module
    ms.grad(module.loss)(np.ones(3), np.ones(3))
    (cache / "notes.txt").write_text("not s2sgrad's")
    done = run("cache", "list", cache=cache)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == f"cache folder: {cache} (1 module, {lines[0].split(', ')[1]}"
    assert lines[1].split() == ["function", "source", "backend", "size", "date"]
    row = lines[2].split()
    assert row[:3] == ["loss", "mymodel.py:4", "numpy"]
    assert row[4] in ("B", "KiB") and float(row[3]) > 0
    assert row[5].count("-") == 2 and row[6].count(":") == 1       # date and time
    done = run("cache", "clear", cache=cache)
    assert done.returncode == 0 and re.search(r"removed [1-9]\d* files? \(", done.stdout)
    assert sorted(p.name for p in cache.iterdir()) == ["notes.txt"]
    assert "(0 modules" in run("cache", "list", cache=cache).stdout
