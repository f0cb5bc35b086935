"""Quality: every entry of the checked-in regression corpus (``corpus/`` at the repository root)
still fails, and with exactly the verdict it recorded.

``corpus/`` holds the shrunk failures fuzzkern found in the planted bench kernels
(``bench/planted/``) and in Liger-Kernel 0.8.5 (``examples/liger/``); corpus/README.md lists
them. They replay through the CLI as a reviewer runs them: ``python -m fuzzkern replay`` in a
fresh process from the repository root, on the entries' stored input bytes. An entry that now
passes, cannot be replayed, or fails with another verdict (for an ``error``, with another
exception type) fails here: fuzzkern no longer detects a bug it once found. The rows replayed
must be the entries on disk, one for one: the Liger entries (folders ``liger.*``) in one run,
every other entry in another, so no entry goes unreplayed unnoticed (the Liger run is skipped,
with its reason, only where liger-kernel 0.8.5 is not installed: without it every Liger entry
would fail with a ModuleNotFoundError).
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CORPUS = os.path.join(ROOT, "corpus")
LIGER_PINNED = "0.8.5"

try:
    LIGER: str | None = importlib.metadata.version("liger-kernel")
except importlib.metadata.PackageNotFoundError:
    LIGER = None

#: the target id prefix of the entry folders that need liger-kernel
LIGER_PREFIX = "liger."
COLUMNS = ("entry", "target", "verdict", "status", "reason")


def _folders(liger: bool | None = None) -> list[str]:
    """The entry folders: all of them, or only those of Liger targets (True) or of the others
    (False)."""
    return sorted(d for d in os.listdir(CORPUS) if os.path.isdir(os.path.join(CORPUS, d))
                  and (liger is None or d.startswith(LIGER_PREFIX) == liger))


def _entries(liger: bool | None = None) -> list[str]:
    """The entry files in those folders, as paths relative to the repository root."""
    return sorted(f"corpus/{d}/{f}" for d in _folders(liger)
                  for f in os.listdir(os.path.join(CORPUS, d))
                  if f.endswith(".json") and not f.startswith("."))


def _recorded(entry: str) -> tuple[str, str, str]:
    """(target id, verdict, message) as the entry's JSON records them: data, read with json
    only."""
    with open(os.path.join(ROOT, entry), encoding="utf-8") as fh:
        data = json.load(fh)
    return data["target"]["id"], data["verdict"], data["message"]


def _table_rows(stdout: str) -> list[dict[str, str]]:
    """The rows of ``fuzzkern replay``'s table. A row whose cells wrap spans several lines; a
    new row starts where the entry cell starts with ``corpus/`` (the paths are shown relative
    to the repository root). A cell's pieces are joined with a space, except the entry path's,
    which folds without one."""
    rows: list[list[list[str]]] = []
    for line in stdout.splitlines():
        line = line.strip()
        if not line.startswith("│"):
            continue
        cells = [c.strip() for c in line.strip("│").split("│")]
        assert len(cells) == len(COLUMNS), f"unexpected table line: {line!r}"
        if cells[0].startswith("corpus/"):
            rows.append([[c] for c in cells])
        else:
            assert rows, f"a continuation line before any row: {line!r}"
            for pieces, cell in zip(rows[-1], cells, strict=True):
                if cell:
                    pieces.append(cell)
    return [{col: ("" if col == "entry" else " ").join(pieces)
             for col, pieces in zip(COLUMNS, row, strict=True)} for row in rows]


def _squeeze(text: str) -> str:
    """``text`` without whitespace: where a wrapped cell broke a word does not matter."""
    return "".join(text.split())


def _replay(liger: bool) -> None:
    entries = _entries(liger)
    assert entries, f"no entries (liger: {liger})"
    # the plain-text table a pipe gets: no colours, even where CI forces them (FORCE_COLOR)
    env = {**os.environ, "TTY_COMPATIBLE": "0", "NO_COLOR": "1"}
    proc = subprocess.run([sys.executable, "-m", "fuzzkern", "replay",
                           *(f"corpus/{d}" for d in _folders(liger))],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    shown = f"exit {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    # 1: at least one entry still fails (and, with the checks below, every one does)
    assert proc.returncode == 1, shown
    assert f"fuzzkern replay ({len(entries)} entries)" in proc.stdout, shown
    rows = _table_rows(proc.stdout)
    assert sorted(r["entry"] for r in rows) == entries, shown
    for row in rows:
        target_id, verdict, message = _recorded(row["entry"])
        where = f"{row['entry']} ({target_id}, recorded {verdict})"
        assert row["target"] == target_id, where
        assert _squeeze(row["verdict"]) == verdict, where
        assert _squeeze(row["status"]) == "stillfailing", f"{where}: {row}\n{shown}"
        # the worker's verdict now: "<verdict>: <message>", or "verdict changed from A to B"
        assert _squeeze(row["reason"]).startswith(verdict + ":"), f"{where}: {row}\n{shown}"
        if verdict == "error":
            # any exception is an `error` (a missing module too): the same exception type
            kind = re.search(r"\b\w+(Error|Exception)\b", message)
            assert kind, f"{where}: no exception type in the recorded message {message!r}"
            assert kind.group(0) in row["reason"], f"{where}: {row}\n{shown}"


def test_every_entry_is_a_json_file_and_its_input_bytes():
    assert "README.md" in os.listdir(CORPUS)
    assert _folders(liger=False) and _folders(liger=True), "corpus/ lacks a kind of entry"
    for folder in _folders():
        files = sorted(os.listdir(os.path.join(CORPUS, folder)))
        stems = {os.path.splitext(f)[0] for f in files}
        # each entry: its JSON and the safetensors file of its input bytes, nothing else
        assert files == sorted(f"{s}{ext}" for s in stems for ext in (".json", ".safetensors")), (
            f"corpus/{folder}: {files}")


def test_readme_lists_every_entry():
    """corpus/README.md's table names each entry by id, and names none that is not on disk."""
    with open(os.path.join(CORPUS, "README.md"), encoding="utf-8") as fh:
        readme = fh.read()
    on_disk = {os.path.basename(e)[:-5] for e in _entries()}
    listed = set(re.findall(r"`([0-9a-f]{16})`", readme))
    assert listed == on_disk, (sorted(on_disk - listed), sorted(listed - on_disk))


def test_entries_still_fail_with_their_verdicts():
    _replay(liger=False)


@pytest.mark.liger
@pytest.mark.skipif(LIGER != LIGER_PINNED,
                    reason=f"the liger entries need liger-kernel {LIGER_PINNED} (found "
                           f"{LIGER or 'none'}): pip install --no-deps "
                           f"liger-kernel=={LIGER_PINNED}")
def test_liger_entries_still_fail_with_their_verdicts():
    _replay(liger=True)
