"""The guides' code examples run: each guide's ```python blocks execute in order in one
namespace, compiled with the guide's path so errors (and tapeflow's messages naming user
lines) point into the guide."""
from __future__ import annotations

import os
import re

import pytest

DOCS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs")
GUIDES = sorted(f for f in os.listdir(DOCS) if f.endswith(".md")) if os.path.isdir(DOCS) else []
_BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def blocks(text: str) -> list[tuple[int, str]]:
    """(first line number, source) of every python block."""
    return [(text.count("\n", 0, m.start(1)) + 1, m.group(1)) for m in _BLOCK.finditer(text)]


def test_every_topic_has_a_guide():
    for topic in ("tapes", "forward-mode", "function", "memory", "extending", "training",
                  "debugging", "data"):
        assert f"{topic}.md" in GUIDES


README = os.path.join(os.path.dirname(DOCS), "README.md")


# pages that are an index or a reference, not a guide with examples
REFERENCE = {"README.md", "api.md"}


@pytest.mark.parametrize("guide", [g for g in GUIDES if g not in REFERENCE] + ["../README.md"])
def test_guide_examples_run(guide, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # examples that write files write here
    path = os.path.normpath(os.path.join(DOCS, guide))
    with open(path) as f:
        text = f.read()
    found = blocks(text)
    assert found, f"{guide} has no python example"
    namespace: dict = {"__name__": f"docs_{guide[:-3]}"}
    for line, source in found:
        code = compile("\n" * (line - 1) + source, path, "exec")
        exec(code, namespace)  # noqa: S102 - the repository's own documentation


_LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


@pytest.mark.parametrize("page", [g for g in GUIDES] + ["../README.md"])
def test_links_point_to_files_in_the_repository(page):
    path = os.path.normpath(os.path.join(DOCS, page))
    root = os.path.dirname(DOCS)
    with open(path) as f:
        text = f.read()
    for target in _LINK.findall(text):
        if "://" in target:
            continue
        resolved = os.path.normpath(os.path.join(os.path.dirname(path), target))
        assert resolved.startswith(root + os.sep) and os.path.exists(resolved), (page, target)
    assert "../shared" not in text, page
