"""The guides' code examples run as written in a user's own file: each guide's ```python
blocks are copied, in order, into one script with another name in a temporary directory
(each block at its line in the guide, so errors and tapeflow's messages naming user lines
give the guide's line numbers) and that script runs as `__main__`."""
from __future__ import annotations

import os
import re
import runpy

import pytest

DOCS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs")
GUIDES = sorted(f for f in os.listdir(DOCS) if f.endswith(".md")) if os.path.isdir(DOCS) else []
_BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def blocks(text: str) -> list[tuple[int, str]]:
    """(first line number, source) of every python block."""
    return [(text.count("\n", 0, m.start(1)) + 1, m.group(1)) for m in _BLOCK.finditer(text)]


def test_every_topic_has_a_guide():
    for topic in ("tapes", "forward-mode", "function", "memory", "extending", "training",
                  "debugging", "data", "distributed", "keras"):
        assert f"{topic}.md" in GUIDES


README = os.path.join(os.path.dirname(DOCS), "README.md")


# pages that are an index or a reference, not a guide with examples
REFERENCE = {"README.md", "api.md"}


def as_script(text: str) -> str:
    """The guide's python blocks as one script, every other line left blank."""
    lines = [""] * (text.count("\n") + 1)
    for line, source in blocks(text):
        for i, code in enumerate(source.splitlines()):
            lines[line - 1 + i] = code
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("guide", [g for g in GUIDES if g not in REFERENCE] + ["../README.md"])
def test_guide_examples_run(guide, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # examples that write files write here
    path = os.path.normpath(os.path.join(DOCS, guide))
    with open(path) as f:
        text = f.read()
    assert blocks(text), f"{guide} has no python example"
    # a file of the user's, named unlike the guide: an example may not rely on its own name
    script = tmp_path / "my_experiment.py"
    script.write_text(as_script(text))
    runpy.run_path(str(script), run_name="__main__")


def test_examples_run_from_a_file_named_unlike_the_guide(tmp_path, monkeypatch):
    # the debugging guide's message names the user's line: the script's, not the guide's
    monkeypatch.chdir(tmp_path)
    with open(os.path.join(DOCS, "debugging.md")) as f:
        text = f.read()
    script = tmp_path / "my_experiment.py"
    script.write_text(as_script(text))
    namespace = runpy.run_path(str(script), run_name="__main__")
    assert "my_experiment.py:" in namespace["message"]
    assert "debugging.md" not in namespace["message"]


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
