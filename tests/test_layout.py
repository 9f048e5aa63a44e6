"""The package's architecture: imports go one way, down the layers, with no cycle; one
status table that matches the kernel's codes; every model kind known to `load_model` in
a fresh interpreter."""

import ast
import pathlib
import re
import subprocess
import sys
import types

import numpy as np
import pytest
import scipy.sparse as sp

import pgs
from pgs.engine.solver import STATUS, raise_status

PACKAGE = pathlib.Path(pgs.__file__).parent

#: The layers, bottom up: a module may import from a lower layer, or from its own
#: package (without a cycle); never from a higher layer or another package of its own.
LAYERS = (
    ("pgs._core", "pgs._csgd", "pgs._svmlight", "pgs._version"),
    ("pgs.rules", "pgs.io"),
    ("pgs.models", "pgs.engine"),
    ("pgs.training",),
    ("pgs.estimators",),
    ("pgs.dask", "pgs.cli"),
    ("pgs",),
)


def _unit(module):
    """The layer unit a module belongs to: its package under pgs, or itself."""
    for units in LAYERS:
        for unit in sorted(units, key=len, reverse=True):
            if module == unit or module.startswith(unit + "."):
                return unit
    raise AssertionError(f"{module} is in no layer of LAYERS")


def _rank(unit):
    return next(i for i, units in enumerate(LAYERS) if unit in units)


def module_names(root):
    """Every module of the package under `root` (a folder named pgs), by dotted name."""
    names = {}
    for path in root.rglob("*.py"):
        parts = path.relative_to(root.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        names[".".join(parts)] = path
    # the compiled modules: their sources in a checkout, their extensions once installed
    for path in [*root.glob("*.pyx"), *root.glob("*.so"), *root.glob("*.pyd")]:
        names[f"{root.name}.{path.name.split('.')[0]}"] = path
    return names


def import_graph(root):
    """module -> the pgs modules it imports, function-level imports included."""
    names = module_names(root)
    graph = {}
    for name, path in names.items():
        if path.suffix != ".py":        # (compiled: imports nothing of the Python layers)
            graph[name] = set()
            continue
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                mods = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(up + ([base] if base else []))
                # `from a import b` imports a.b when b is a module, else a
                mods = [f"{base}.{a.name}" if f"{base}.{a.name}" in names else base
                        for a in node.names]
            else:
                continue
            targets.update(m for m in mods if m in names and m != name)
        graph[name] = targets
    return graph


def layer_violations(graph):
    """The imports that go up, or sideways into another package of the same layer."""
    bad = []
    for src, targets in graph.items():
        for dst in targets:
            a, b = _unit(src), _unit(dst)
            if a != b and _rank(b) >= _rank(a):
                bad.append(f"{src} imports {dst}")
    return sorted(bad)


def cycles(graph):
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


def test_imports_only_go_down_the_layers():
    graph = import_graph(PACKAGE)
    assert {_unit(m) for m in graph} == {u for units in LAYERS for u in units}
    assert layer_violations(graph) == []


def test_no_import_cycle():
    assert cycles(import_graph(PACKAGE)) == []


def _write_package(root, files):
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_the_checks_catch_an_upward_import_and_a_cycle(tmp_path):
    """The walker finds imports inside functions and relative ones; an upward import
    and a cycle are reported."""
    root = tmp_path / "pgs"
    _write_package(root, {
        "__init__.py": "",
        "rules/__init__.py": "",
        "rules/a.py": "def f():\n    from pgs.training import t\n",
        "rules/b.py": "from . import c\n",
        "rules/c.py": "import pgs.rules.b\n",
        "training/__init__.py": "",
        "training/t.py": "from pgs.rules.a import f\n",
    })
    graph = import_graph(root)
    assert graph["pgs.rules.a"] == {"pgs.training.t"}
    assert graph["pgs.rules.b"] == {"pgs.rules.c"}
    assert layer_violations(graph) == ["pgs.rules.a imports pgs.training.t"]
    assert sorted(cycles(graph)) == [["pgs.rules.a", "pgs.training.t"],
                                     ["pgs.rules.b", "pgs.rules.c"]]


def test_status_table_is_the_kernels():
    """Every non-zero code of the kernel's PGSStatus enum has its message, and no other."""
    pxd = (PACKAGE / "_core.pxd").read_text()
    enum = re.search(r"cdef enum PGSStatus:(.*?)\n\n", pxd, re.S).group(1)
    codes = {int(v) for v in re.findall(r"PGS_\w+ = (\d+)", enum)}
    assert 0 in codes
    assert set(STATUS) == codes - {0}


@pytest.mark.parametrize("status", sorted(STATUS))
def test_each_status_raises_its_message(status):
    X = sp.csr_matrix(np.ones((2, 2)))
    solver = type("S", (), {"t": 4})()
    params = types.SimpleNamespace(sigma=0.1, intercept_scaling=1.0)
    error = {1: pgs.DivergedError, 4: MemoryError}.get(status, ValueError)
    with pytest.raises(error, match=re.escape(STATUS[status])) as info:
        raise_status(status, solver, pgs.rules.data.as_csr_buffers(X), params)
    if status == 1:
        assert "at iteration 5" in str(info.value)


def test_load_model_knows_every_kind_in_a_fresh_interpreter(tmp_path):
    """Files of every kind load in an interpreter that imported nothing but the file
    format module (the kinds are registered by the models package, not by whichever
    module happened to be imported)."""
    from pgs.estimators import PGSClassifier
    from pgs.models.file_format import MODEL_KINDS
    from pgs.models.ovr import model_from_estimator

    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 4))
    y3 = np.arange(60) % 3
    y2 = np.where(y3 == 0, -1.0, 1.0)
    files = {
        "pgs": pgs.train(X, y2, sigma=0.1, T=50, seed=0),
        "csgd": pgs.train_csgd(X, X[:, 0], T=50, eta0=0.01, seed=0),
        "cadaline": pgs.train_cadaline(X, y3, T=50, eta0=0.01, seed=0),
        "multiclass": pgs.train(X, y3, loss="multinomial", sigma=0.1, T=50, seed=0),
    }
    paths = {}
    for kind, model in files.items():
        paths[kind] = tmp_path / f"{kind}.npz"
        model.save(paths[kind])
    paths["ovr"] = tmp_path / "ovr.npz"
    model_from_estimator(PGSClassifier(sigma=0.1, T=100, random_state=0).fit(X, y3)).save(
        paths["ovr"])
    assert set(paths) == set(MODEL_KINDS)
    code = ("import sys; from pgs.models.file_format import load_model; "
            "print(' '.join(type(load_model(p)).__name__ for p in sys.argv[1:]))")
    # (run outside the checkout, so that the installed pgs is the one imported)
    out = subprocess.run([sys.executable, "-c", code, *map(str, paths.values())],
                         capture_output=True, text=True, check=True, cwd=tmp_path).stdout.split()
    assert out == [MODEL_KINDS[kind].__name__ for kind in paths]


def test_every_module_of_the_source_tree_is_installed():
    """pgs/meson.build lists the installed files by hand: a module missing there would
    import in a checkout and fail in an installed package."""
    source = pathlib.Path(__file__).resolve().parents[1] / "pgs"
    if not (source / "meson.build").exists():
        pytest.skip("no source tree beside the tests")
    modules = {str(p.relative_to(source)) for p in source.rglob("*.py")}
    installed = {str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py")}
    assert modules <= installed


def test_design_references_resolve_inside_the_repository():
    """Every "docs/design.md N" (or "section N") the code, tests, bench and docs cite names
    a section of docs/design.md, and nothing cites a design file outside the repository."""
    import re
    root = pathlib.Path(__file__).resolve().parents[1]
    if not (root / "docs" / "design.md").exists():
        pytest.skip("run from a checkout (docs/ is not installed)")
    sections = set(re.findall(r"^## (\w+)\. ", (root / "docs" / "design.md").read_text(),
                              re.M))
    cited = {}
    for path in [*root.glob("pgs/**/*.py*"), *root.glob("pgs/**/*.h"), *root.glob("tests/*.py"),
                 *root.glob("bench/**/*.py"), *root.glob("docs/*.md"), root / "README.md"]:
        text = path.read_text()
        assert not re.search("DESIGN" + r"(\.md| \d)", text), path   # (the old outside file)
        for ref in re.findall(r"design\.md\)?(?: section| §)? ?(\d+[a-e]?)\b", text):
            cited.setdefault(ref, path)
    assert cited and set(cited) <= sections, {r: str(p) for r, p in cited.items()
                                               if r not in sections}
