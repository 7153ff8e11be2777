"""README.md's examples of generated code cannot drift from what s2sgrad generates.

Every README code block that shows generated code is an excerpt of a committed file under
generated/examples/ (tests/test_generated_examples.py keeps those files equal to what the
code generator writes), named on the line just before the block:

    <!-- excerpt of generated/examples/function.py -->

A line that is just ``...`` stands for lines left out; the lines between two of them
appear in the file as they are shown (indentation included), one after the other, and the
runs of lines appear in the file in the order shown.
"""
import re

import pytest

from examples_loader import ROOT

README = ROOT / "README.md"
MARK = re.compile(r"<!-- excerpt of (generated/examples/[\w./-]+\.py) -->")
#: what marks a block as generated code: a generated function's def, an adjoint's comment
GENERATED = re.compile(r"def \w+_(value_and_grad|jvp|jacfwd|vjp|hvp)\(|# grad of: |"
                       r"\brt\.\w+\(")


def blocks(text):
    """Every fenced code block of ``text``: (line number, the line before it, its lines)."""
    lines = text.splitlines()
    found, i = [], 0
    while i < len(lines):
        if lines[i].startswith("```") and lines[i].strip() != "```":
            end = lines.index("```", i + 1)
            before = next((line for line in reversed(lines[:i]) if line.strip()), "")
            found.append((i + 1, before, lines[i + 1:end]))
            i = end
        i += 1
    return found


def runs(block):
    """The block's lines in runs, split where a line is just ``...``."""
    out = [[]]
    for line in block:
        if line.strip() == "...":
            out.append([])
        else:
            out[-1].append(line.rstrip())
    return [run for run in out if run]


def missing(block, lines):
    """The first run of ``block`` that does not appear in ``lines`` (after the previous
    run), or None when the whole block is an excerpt of ``lines``."""
    start = 0
    for run in runs(block):
        at = next((i for i in range(start, len(lines) - len(run) + 1)
                   if lines[i:i + len(run)] == run), None)
        if at is None:
            return run
        start = at + len(run)
    return None


def excerpts():
    return [(line, before, block) for line, before, block in blocks(README.read_text())
            if any(GENERATED.search(text) for text in block)]


def test_readme_shows_generated_code():
    assert len(excerpts()) >= 3      # the gradient, the JVP and the loop's adjoint


@pytest.mark.parametrize("line, before, block", excerpts(),
                         ids=lambda value: f"README.md:{value}" if isinstance(value, int)
                         else "")
def test_each_block_of_generated_code_is_an_excerpt_of_a_committed_file(line, before,
                                                                        block):
    mark = MARK.fullmatch(before.strip())
    assert mark, (f"README.md:{line} shows generated code: name the committed file it is "
                  f"an excerpt of on the line before it: <!-- excerpt of generated/"
                  f"examples/NAME.py -->")
    path = ROOT / mark.group(1)
    assert path.exists(), f"README.md:{line}: {path} is not committed"
    run = missing(block, [text.rstrip() for text in path.read_text().splitlines()])
    assert run is None, (f"README.md:{line}: these lines are not in {mark.group(1)} as "
                         f"shown (in order, between the `...`):\n" + "\n".join(run))


def test_an_edited_line_is_caught():
    lines = ["def f():", "    a = 1", "    b = 2", "    c = 3"]
    assert missing(["def f():", "    ...", "    c = 3"], lines) is None
    assert missing(["def f():", "    a = 1", "    b = 2"], lines) is None
    assert missing(["    a = 2"], lines) == ["    a = 2"]                  # edited
    assert missing(["    b = 2", "    ...", "    a = 1"], lines) == ["    a = 1"]  # order
    assert missing(["    a = 1", "    c = 3"], lines) == ["    a = 1", "    c = 3"]  # a gap
    assert missing(["  a = 1"], lines) == ["  a = 1"]                      # indentation
