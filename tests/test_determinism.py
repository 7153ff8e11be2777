"""Generated code does not depend on the process: the same gradients built in processes
with different PYTHONHASHSEED values give byte-identical source (so the disk cache and
Numba's cache are hit by every new process, and the code a person reads is stable)."""
import json
import os
import pathlib
import subprocess
import sys

SCRIPT = pathlib.Path(__file__).resolve().parent / "hashseed_programs.py"
ROOT = SCRIPT.parent.parent


def _sources(seed, cache):
    env = dict(os.environ, PYTHONHASHSEED=str(seed), S2SGRAD_BACKEND="python",
               S2SGRAD_CACHE_DIR=str(cache),
               PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, str(SCRIPT)], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def test_generated_source_is_the_same_under_every_hash_seed(tmp_path):
    runs = {seed: _sources(seed, tmp_path / f"cache{seed}") for seed in (0, 1, 2, 5, 11)}
    first = runs[0]
    assert set(first) == {"loops_and_branches", "lists_and_tuples", "nested_and_custom",
                          "branch_return", "cell"}
    for seed, sources in runs.items():
        for name, text in first.items():
            assert sources[name] == text, f"{name} differs under PYTHONHASHSEED={seed}"
