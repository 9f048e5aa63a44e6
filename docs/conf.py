"""Sphinx configuration of pgs's documentation: ``sphinx-build -W -b html docs OUT``
(``pip install ".[docs]"``; .ci/run builds it with warnings as errors).

The pages are Markdown (MyST) and reST; the API pages are autosummary stubs of the
docstrings (numpydoc). bench/README.md, bench/results/ and CHANGELOG.md live outside docs/:
they are copied under docs/_generated/ at each build, and every relative link of every
Markdown page, written as it resolves in the repository (GitHub shows the same files), is
rewritten to the copy's place in the site.
"""

import os
import re
import shutil
import sys
from pathlib import Path

import pgs

DOCS = Path(__file__).resolve().parent
REPO = DOCS.parent
GENERATED = DOCS / "_generated"
sys.path.insert(0, str(DOCS / "_ext"))

project = "pgs"
author = "The pgs developers"
copyright = "the pgs developers"
release = version = pgs.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    "myst_parser",
    "pgs_cli",
]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build", "_templates"]
templates_path = ["_templates"]
# `name` in a docstring links to the object where one is documented (plain text otherwise).
default_role = "py:obj"
# (Plain quotes and dashes: option names such as --max-passes stay as typed.)
smartquotes = False

autosummary_generate = True
autodoc_default_options = {"members": False}
numpydoc_show_class_members = False         # (the class template lists the methods)
numpydoc_class_members_toctree = False

myst_heading_anchors = 3
myst_enable_extensions = ["dollarmath"]

html_theme = "pydata_sphinx_theme"
html_title = f"pgs {release}"
html_theme_options = {"navigation_with_keys": False, "show_toc_level": 2}

# The files outside docs/ that the site shows, by their path in the repository.
MIRRORED = ["CHANGELOG.md", "bench/README.md", "bench/results/*.md", "bench/results/*.png"]


def _mirror():
    """Copy `MIRRORED` under docs/_generated/ (replacing an older copy)."""
    shutil.rmtree(GENERATED, ignore_errors=True)
    for pattern in MIRRORED:
        for path in REPO.glob(pattern):
            target = GENERATED / path.relative_to(REPO)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)


def site_path(repo_path):
    """Where a repository file is in the source tree of the site (relative to docs/)."""
    if repo_path.startswith("docs/"):
        return repo_path[len("docs/"):]
    return f"_generated/{repo_path}"


def repo_path(docname, suffix=".md"):
    """The repository path of a page of the site."""
    path = docname + suffix
    return path[len("_generated/"):] if path.startswith("_generated/") else f"docs/{path}"


_LINK = re.compile(r"(\]\()([^)#\s]+)((?:#[^)\s]*)?\))")


def rewrite_links(app, docname, source):
    """The relative links of a Markdown page, from its place in the repository to the copies'
    places in the site."""
    if app.env.doc2path(docname).suffix != ".md":
        return
    here = os.path.dirname(repo_path(docname))

    def move(match):
        target = match.group(2)
        if re.match(r"[a-z]+:", target) or target.startswith("/"):
            return match.group(0)
        in_repo = os.path.normpath(os.path.join(here, target))
        new = os.path.relpath(site_path(in_repo), os.path.dirname(docname + ".md"))
        return match.group(1) + new + match.group(3)

    source[0] = _LINK.sub(move, source[0])


def setup(app):
    _mirror()
    app.connect("source-read", rewrite_links)
