"""The package's import graph has no cycles, and no module imports another's private names.

The graph is read from the source, not from ``sys.modules``: every ``import`` and
``from ... import`` in every module under ``s2sgrad/``, at any depth (an import inside a
function counts: hiding one there is how a cycle is usually dodged), with relative
imports resolved.  An edge goes to the module named, or to the submodule when the
imported name is one (``from . import literals``); a package's ``__init__`` counts as
the package's module.
"""
import ast
import functools
import pathlib

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parent.parent / "s2sgrad"


def _modules():
    """{dotted module name: (path, is a package __init__)} of every module of s2sgrad."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        package = parts[-1] == "__init__"
        found[".".join(parts[:-1] if package else parts)] = (path, package)
    return found


def _targets(module, package, node, modules):
    """(s2sgrad module imported, the names imported from it) for one import statement."""
    if isinstance(node, ast.Import):
        return [(a.name, ()) for a in node.names if a.name in modules]
    base = module.split(".") if package else module.split(".")[:-1]
    if node.level:
        base = base[:len(base) - (node.level - 1)]
        target = ".".join(base + ([node.module] if node.module else []))
    else:
        target = node.module or ""
    out = []
    for alias in node.names:
        if f"{target}.{alias.name}" in modules:
            out.append((f"{target}.{alias.name}", ()))
        elif target in modules:
            out.append((target, (alias.name,)))
    return out


@functools.cache
def import_graph():
    """{module: {module it imports: [(line, names imported)]}} over s2sgrad (read once
    per process: the tests only read it)."""
    modules = _modules()
    graph = {}
    for module, (path, package) in modules.items():
        edges = graph.setdefault(module, {})
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for target, names in _targets(module, package, node, modules):
                    if target != module:
                        edges.setdefault(target, []).append((node.lineno, names))
    return graph


def _cycles(graph):
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_graph_is_read():
    graph = import_graph()
    calls = graph["s2sgrad.compiler.front.lower_calls"]
    assert "s2sgrad.compiler.ir" in calls
    assert "s2sgrad.compiler.front.literals" in calls                      # from . import x
    assert "s2sgrad.rules" in calls                                        # a package
    assert "s2sgrad.primitives" in graph["s2sgrad.rules.no_gradient"]       # from .. import x


def test_no_import_cycles():
    graph = import_graph()
    cycles = _cycles(graph)
    detail = []
    for component in cycles:
        for a in component:
            for b, where in graph[a].items():
                if b in component:
                    detail.append(f"{a} imports {b} (line {where[0][0]})")
    assert not cycles, "import cycles: " + "; ".join(detail)


@pytest.mark.parametrize("graph, expected", [
    ({"a": {"b": []}, "b": {"c": []}, "c": {"a": []}}, [["a", "b", "c"]]),
    ({"a": {"b": []}, "b": {"c": []}, "c": {}}, []),
])
def test_a_cycle_is_found(graph, expected):
    assert _cycles(graph) == expected


def test_no_private_names_imported_from_another_module():
    private = [f"{module}:{line} imports {target}.{name}"
               for module, edges in import_graph().items()
               for target, uses in edges.items() for line, names in uses
               for name in names if name.startswith("_") and not name.startswith("__")]
    assert not private, "\n".join(private)


#: compiler/'s stages, in pipeline order.  A module may import its own stage and earlier
#: ones, never a later one: the IR is the contract, syntax/ the vocabulary of generated
#: code every stage writes, analysis/ what lowering and the transforms ask of the IR,
#: front/ source -> IR, reverse/ and forward/ the two transforms (forward mode reuses the
#: reverse rules' templates), batch/ the batching transform (vmap), optimize/ the passes
#: over generated statements, emit/ the text a person reads, and the pipelines at the top
#: run them all.
STAGES = ("ir", "syntax", "analysis", "front", "reverse", "forward", "batch", "optimize",
          "emit", "pipeline")
COMPILER = "s2sgrad.compiler"


def stage_of(module):
    """The stage of a module of compiler/ (its folder; ``ir`` and the ``pipeline*``
    modules at compiler/'s top are their own), or None outside compiler/."""
    if not module.startswith(COMPILER + "."):
        return None
    first = module[len(COMPILER) + 1:].split(".")[0]
    return "pipeline" if first.startswith("pipeline") else first


def test_every_compiler_module_has_a_stage():
    strays = [m for m in import_graph() if m.startswith(COMPILER + ".")
              and stage_of(m) not in STAGES]
    assert not strays, f"modules of compiler/ outside the stages {STAGES}: {strays}"


def backward_arrows(graph):
    """"a (stage) imports b (stage)" for each import of a later stage by an earlier one."""
    return [f"{a} ({stage_of(a)}) imports {b} ({stage_of(b)}), line {uses[0][0]}"
            for a, edges in graph.items() if stage_of(a)
            for b, uses in edges.items() if stage_of(b)
            and STAGES.index(stage_of(b)) > STAGES.index(stage_of(a))]


def test_no_import_runs_back_from_a_later_stage_to_an_earlier_one():
    backwards = backward_arrows(import_graph())
    assert not backwards, "\n".join(backwards)


def test_stages_are_read_from_the_tree():
    assert stage_of("s2sgrad.compiler.front.lower") == "front"
    assert stage_of("s2sgrad.compiler.pipeline_forward") == "pipeline"
    assert stage_of("s2sgrad.compiler.ir") == "ir"
    assert stage_of("s2sgrad.rules.registry") is None
    assert "s2sgrad.compiler.syntax.nodes" in import_graph()["s2sgrad.compiler.reverse.transform"]


def test_a_backward_arrow_is_found():
    graph = {"s2sgrad.compiler.front.lower": {"s2sgrad.compiler.emit.layout": [(3, ())],
                                              "s2sgrad.compiler.ir": [(4, ())]},
             "s2sgrad.compiler.emit.layout": {"s2sgrad.compiler.syntax.nodes": [(5, ())]}}
    assert backward_arrows(graph) == ["s2sgrad.compiler.front.lower (front) imports "
                                      "s2sgrad.compiler.emit.layout (emit), line 3"]
