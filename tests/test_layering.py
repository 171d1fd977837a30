"""The plan of the code holds in the code: no import cycle anywhere under src/ (function-
local imports included), no function-local import of a tapeflow module, and every module
imports only from its own floor or below (ARCHITECTURE.md's floors)."""
from __future__ import annotations

import ast
import pathlib

import pytest

SRC = pathlib.Path(__file__).resolve().parents[1] / "src"
PACKAGE = SRC / "tapeflow"
# Floors, bottom up (ARCHITECTURE.md); a module's floor is its first package under tapeflow/
# saved_model (TensorFlow's SavedModel writer, #32) sits on train, below keras whose
# Model.export uses it; ARCHITECTURE.md's floor list does not name it yet
FLOORS = ["_core", "backends", "ops", "autodiff", "function", "data", "summary", "distribute",
          "train", "saved_model", "keras"]
PUBLIC = len(FLOORS)  # tapeflow/__init__.py and the thin public namespaces (math.py ...)
# Packages a module may import inside a function, because they are optional extras.
OPTIONAL = {"matplotlib", "numba", "mpi4py", "h5py", "cupy", "array_api_compat",
            "array_api_strict", "tqdm", "pydot", "PIL", "scipy"}


def _module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {_module_name(p): p for p in PACKAGE.rglob("*.py")}


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> list[str]:
    """The tapeflow modules an ImportFrom names (a `from . import x` of a submodule too)."""
    if node.level:
        base = module.split(".") if is_package else module.split(".")[:-1]
        base = base[:len(base) - (node.level - 1)]
        target = ".".join(base + ([node.module] if node.module else []))
    else:
        target = node.module or ""
    if not target.startswith("tapeflow"):
        return []
    found = []
    for alias in node.names:
        sub = f"{target}.{alias.name}"
        found.append(sub if sub in MODULES else target)
    return found


def _imports(module: str) -> list[tuple[str, bool, ast.AST]]:
    """(imported tapeflow module, is function-local, node) for every import of `module`."""
    path = MODULES[module]
    tree = ast.parse(path.read_text())
    local = set()
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            local.update(id(n) for n in ast.walk(fn) if isinstance(n, (ast.Import, ast.ImportFrom)))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            targets = _resolve(module, path.name == "__init__.py", node)
        elif isinstance(node, ast.Import):
            targets = [a.name for a in node.names if a.name.startswith("tapeflow")]
        else:
            continue
        out += [(t, id(node) in local, node) for t in targets]
    return out


def _floor(module: str) -> int:
    parts = module.split(".")
    if len(parts) > 1 and parts[1] in FLOORS and (len(parts) > 2 or
                                                  (SRC / "tapeflow" / parts[1]).is_dir()):
        return FLOORS.index(parts[1])
    return PUBLIC


GRAPH = {m: sorted({t for t, _, _ in _imports(m) if t != m}) for m in MODULES}


def _cycles(graph: dict) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_the_scan_sees_the_known_edges():
    # the checker must be able to fail: edges it has to find, local ones included
    assert "tapeflow._core.dispatch" in GRAPH["tapeflow._core.prims"]
    assert "tapeflow.ops.math" in GRAPH["tapeflow.ops.operators"]
    assert _cycles({"a": ["b"], "b": ["c"], "c": ["a"], "d": ["a"]}) == [["a", "b", "c"]]
    assert _floor("tapeflow._core.tensor") == 0 and _floor("tapeflow.math") == PUBLIC
    assert _floor("tapeflow.ops.nn") == FLOORS.index("ops")


def test_no_import_cycle_under_src():
    assert _cycles(GRAPH) == []


def test_no_function_local_import_of_tapeflow_modules():
    local = [f"{m}:{node.lineno} imports {t}" for m in MODULES
             for t, is_local, node in _imports(m) if is_local]
    assert local == []


def test_function_local_imports_only_for_optional_packages_with_a_reason():
    bad = []
    for module, path in MODULES.items():
        lines = path.read_text().split("\n")
        tree = ast.parse("\n".join(lines))
        for fn in ast.walk(tree):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(fn):
                if not isinstance(node, (ast.Import, ast.ImportFrom)):
                    continue
                names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                         else [node.module or ""])
                top = {n.split(".")[0] for n in names}
                near = " ".join(lines[max(0, node.lineno - 4):node.lineno])
                if not top <= OPTIONAL or "#" not in near:
                    bad.append(f"{module}:{node.lineno} {names}")
    assert bad == []


@pytest.mark.parametrize("module", sorted(MODULES))
def test_imports_stay_on_their_floor_or_below(module):
    own = _floor(module)
    up = [f"{t} (floor {FLOORS[_floor(t)] if _floor(t) < PUBLIC else 'public'})"
          for t, _, _ in _imports(module) if _floor(t) > own]
    assert up == [], f"{module} (floor {FLOORS[own] if own < PUBLIC else 'public'}) imports upward"
