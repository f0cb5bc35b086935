"""Every code block of README.md and docs/*.md runs, page by page, in an empty folder (the
rules are in docs/ci.md, "The docs are tested"): python blocks run (or, named by a first-line
``# file.py`` comment, are written and imported), bash blocks run and must exit 0 (or the
status a ``<!-- fuzzkern-docs: exit N -->`` marker gives), json blocks parse, text blocks are
output. ``<!-- fuzzkern-docs: not run (why) -->`` skips a block."""

from __future__ import annotations

import glob
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass

import pytest

pytestmark = pytest.mark.slow

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PAGES = ["README.md", *sorted(os.path.relpath(p, ROOT)
                              for p in glob.glob(os.path.join(ROOT, "docs", "*.md")))]
MARKER = re.compile(r"<!-- fuzzkern-docs: (not run|exit (\d+))\b.*-->")
FILE_BLOCK = re.compile(r"# ([\w./-]+\.py)\s*$")
LANGUAGES = {"python", "bash", "json", "text"}


@dataclass
class Block:
    page: str
    line: int
    lang: str
    code: str
    run: bool = True
    status: int = 0


def blocks(page: str) -> list[Block]:
    """The fenced blocks of a page, with the marker on the line before each (if any)."""
    with open(os.path.join(ROOT, page), encoding="utf-8") as fh:
        lines = fh.read().splitlines()
    out: list[Block] = []
    i = 0
    while i < len(lines):
        m = re.match(r"^( *)```(\S*)\s*$", lines[i])
        if not m:
            i += 1
            continue
        indent, lang = len(m.group(1)), m.group(2)
        end = next(j for j in range(i + 1, len(lines)) if lines[j].strip() == "```")
        code = "\n".join(ln[indent:] for ln in lines[i + 1:end]) + "\n"
        block = Block(page, i + 1, lang, code)
        before = next((lines[j] for j in range(i - 1, -1, -1) if lines[j].strip()), "")
        marker = MARKER.search(before)
        if marker:
            block.run = marker.group(1) != "not run"
            block.status = int(marker.group(2) or 0)
        out.append(block)
        i = end + 1
    return out


def _env() -> dict[str, str]:
    path = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")
    pythonpath = ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")
    env = {**os.environ, "PATH": path, "PYTHONPATH": pythonpath, "COLUMNS": "120"}
    for name in ("CI", "TF_BUILD", "FUZZKERN_PROFILE", "PYTEST_ADDOPTS", "TRITON_INTERPRET"):
        env.pop(name, None)
    return env


def _run(block: Block, cwd: str) -> subprocess.CompletedProcess[str]:
    if block.lang == "bash":
        cmd = ["bash", "-e", "-c", block.code]
    else:
        named = FILE_BLOCK.match(block.code.splitlines()[0])
        if named:
            with open(os.path.join(cwd, named.group(1)), "w", encoding="utf-8") as fh:
                fh.write(block.code)
            module = named.group(1)[:-3].replace("/", ".")
            cmd = [sys.executable, "-c", f"import {module}"]
        else:
            cmd = [sys.executable, "-c", block.code]
    return subprocess.run(cmd, cwd=cwd, env=_env(), capture_output=True, text=True,
                          timeout=600)


def test_every_block_says_what_it_is():
    untyped = [f"{b.page}:{b.line}" for p in PAGES for b in blocks(p)
               if b.lang not in LANGUAGES]
    assert untyped == [], "fenced blocks need a language among " + ", ".join(sorted(LANGUAGES))


def test_the_readme_is_short_and_names_the_two_commands():
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as fh:
        readme = fh.read()
    assert len(readme.splitlines()) < 150
    assert "fuzzkern run --budget 2m" in readme and "python -m pytest -n 2" in readme
    for page in ("tutorial", "strategies", "verdicts", "oracle", "corpus", "pytest", "ci",
                 "scaling", "reference"):
        assert f"(docs/{page}.md)" in readme


def test_the_block_parser_reads_markers():
    found = {(b.lang, b.run, b.status) for b in blocks("docs/tutorial.md")}
    assert ("bash", True, 1) in found and ("bash", False, 0) in found
    assert ("python", True, 0) in found and ("text", True, 0) in found


@pytest.mark.parametrize("page", PAGES)
def test_code_blocks_run(page, tmp_path):
    ran = 0
    for block in blocks(page):
        if not block.run or block.lang == "text":
            continue
        where = f"{page}:{block.line}"
        if block.lang == "json":
            json.loads(block.code)
            continue
        proc = _run(block, str(tmp_path))
        assert proc.returncode == block.status, (
            f"{where} exited {proc.returncode}, expected {block.status}\n{block.code}\n"
            f"--- stdout\n{proc.stdout[-4000:]}\n--- stderr\n{proc.stderr[-4000:]}")
        ran += 1
    if page in ("README.md", "docs/tutorial.md", "docs/strategies.md", "docs/pytest.md"):
        assert ran >= 2, f"{page}: its examples must run"
