"""The documentation stays true to the repository and the code, without Sphinx: every relative
link and every cited file of the Markdown pages exists, every public name has its entry in
the API pages and every name there exists, and every training parameter has its full
description in the docstrings that `pgs.rules.docstrings.fill_doc` fills."""

import importlib
import inspect
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
if not (ROOT / "docs" / "conf.py").exists():
    pytest.skip("run from a checkout (docs/ is not installed)", allow_module_level=True)

PAGES = [ROOT / "README.md", ROOT / "CHANGELOG.md", ROOT / "bench" / "README.md",
         *sorted((ROOT / "docs").rglob("*.md"))]
PAGES = [p for p in PAGES if "_generated" not in p.parts and "_build" not in p.parts]
API = ROOT / "docs" / "api"

#: A Markdown link or image: its target, up to an anchor.
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s#]*)(?:#[^)\s]*)?\)")
#: A file of the repository cited as code: `pgs/...`, `bench/...`, `docs/...`, `tests/...`.
CITED = re.compile(r"`((?:pgs|bench|docs|tests)/[\w./-]+)`")


def relative_links(text):
    """The local link targets of a Markdown text (not URLs, not anchors in the same page)."""
    return [t for t in LINK.findall(text) if t and not re.match(r"[a-z]+:", t)]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(page):
    text = page.read_text()
    missing = [t for t in relative_links(text) if not (page.parent / t).exists()]
    assert not missing, f"{page.relative_to(ROOT)} links to files that do not exist: {missing}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_cited_files_exist(page):
    """A path cited as code exists, but for what the sentence says is gone (a retired script
    "at commit" its hash), a placeholder (NAME) and git-ignored folders."""
    text = page.read_text()
    ignored = [line.strip("/") for line in (ROOT / ".gitignore").read_text().split()]
    missing = []
    for match in CITED.finditer(text):
        path = match.group(1)
        around = text[max(0, match.start() - 150):match.end() + 150]
        if re.search(r"retired|at commit|NAME", around) or path.strip("/") in ignored:
            continue
        if not (ROOT / path).exists():
            missing.append(path)
    assert not missing, f"{page.relative_to(ROOT)} cites files that do not exist: {missing}"


def test_the_link_checks_catch_a_broken_link(tmp_path):
    text = ("[ok](docs/design.md#1-the-objective) [web](https://example.org) [here](#top) "
            "![plot](bench/results/nothing.png) [gone](docs/none.md)")
    assert relative_links(text) == ["docs/design.md", "bench/results/nothing.png",
                                    "docs/none.md"]
    assert [t for t in relative_links(text) if not (ROOT / t).exists()] == [
        "bench/results/nothing.png", "docs/none.md"]


def _public_names():
    """{API page: the public names it must list}."""
    pytest.importorskip("sklearn")
    pytest.importorskip("distributed")
    import pgs.dask
    import pgs.estimators
    import pgs.io
    import pgs.models
    models = [name for name, obj in vars(pgs.models).items()
              if isinstance(obj, type) and not name.startswith("_")]
    return {
        "pgs.rst": [*pgs.__all__, *pgs._ESTIMATORS],
        "estimators.rst": [*pgs.estimators.__all__, "expected_failed_checks"],
        "dask.rst": [*pgs.dask.__all__, "PGSClassifier", "PGSRegressor"],
        "models.rst": models,
        "io.rst": ["write_atomic", "MAX_FEATURES"],
    }


def test_every_public_name_is_on_its_api_page():
    for page, names in _public_names().items():
        text = (API / page).read_text()
        missing = [n for n in names if not re.search(rf"(?<![\w]){re.escape(n)}(?![\w])", text)]
        assert not missing, f"docs/api/{page} lacks {missing}"


def documented_names(page):
    """The names a reST API page documents (autosummary entries and auto* directives), each
    with its module, as ``module.name``."""
    module, names, in_summary = None, [], False
    for line in page.read_text().splitlines():
        if m := re.match(r"\.\. (?:currentmodule|automodule):: ([\w.]+)", line):
            module = m.group(1)
        elif m := re.match(r"\.\. auto(?:data|function|class):: ([\w.]+)", line):
            name = m.group(1)
            names.append(name if name.startswith("pgs.") else f"{module}.{name}")
        in_summary = in_summary and (line.startswith("   ") or not line.strip())
        if in_summary and (m := re.match(r"   ([\w.]+)$", line)):
            names.append(f"{module}.{m.group(1)}")
        in_summary = in_summary or line.startswith(".. autosummary::")
    return names


def _resolve(dotted):
    """The object a dotted name names (a module's attribute, a submodule's, ...)."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for part in parts[cut:]:
            obj = getattr(obj, part)
        return obj
    raise ImportError(dotted)


@pytest.mark.parametrize("page", sorted(p.name for p in API.glob("*.rst")))
def test_every_api_entry_exists(page):
    pytest.importorskip("sklearn")
    pytest.importorskip("distributed")
    for dotted in documented_names(API / page):
        _resolve(dotted)           # (AttributeError or ImportError: a stale entry)


def _parameters_section(doc):
    """{name: its description's lines} of a numpydoc docstring's Parameters section."""
    section = re.search(r"Parameters\n-+\n(.*?)(?:\n\n|\Z)", inspect.cleandoc(doc), re.S).group(1)
    entries = {}
    for line in section.splitlines():
        if not line.startswith(" "):
            name = line.partition(" : ")[0]
            entries[name] = []
        else:
            entries[name].append(line)
    return entries


def _filled():
    """(object, the parameter names its docstring must describe) for every `fill_doc` user."""
    pytest.importorskip("sklearn")
    pytest.importorskip("distributed")
    import pgs.dask
    from pgs import estimators

    def names(obj):
        target = obj.__init__ if isinstance(obj, type) else obj
        return [str(p) if p.kind == p.VAR_KEYWORD else n
                for n, p in inspect.signature(target).parameters.items() if n != "self"]

    dask_rest = [n for n in names(pgs.train) if n not in names(pgs.dask.train)]
    return [(pgs.train, names(pgs.train)), (pgs.train_csgd, names(pgs.train_csgd)),
            (pgs.train_cadaline, names(pgs.train_cadaline)),
            (pgs.dask.train, names(pgs.dask.train) + dask_rest),
            *[(cls, names(cls)) for cls in (estimators.PGSClassifier, estimators.PGSRegressor,
                                            pgs.dask.PGSClassifier, pgs.dask.PGSRegressor)]]


def test_every_parameter_is_described_in_full():
    """Every parameter of pgs.train, the CSGD functions, the estimators and pgs.dask has its
    entry, in signature order, with a description of its own (not a pointer elsewhere)."""
    for obj, names in _filled():
        entries = _parameters_section(obj.__doc__)
        assert list(entries) == names, obj
        for name, lines in entries.items():
            assert lines, f"{obj.__qualname__}: {name} has no description"
            assert not re.match(r"\s*(As|See) (for|in) ", lines[0]), (obj.__qualname__, name)


def test_the_shared_descriptions_are_used_once_each():
    """The estimators' sigma is pgs.train's with the estimators' remark appended; the
    regressor's loss is its own."""
    from pgs.rules.docstrings import entry

    common, estimator = entry("sigma"), entry("sigma", ("classifier", "estimator"))
    assert estimator[:len(common)] == common and len(estimator) > len(common)
    assert entry("loss", ("regressor", "estimator"))[0].endswith('default "squared"')
    with pytest.raises(KeyError, match="no_such"):
        entry("no_such")
