"""Attacks through corpus entries: an entry may come from someone else's pull request, so
nothing read from it may run as code (reproducers, replay), and malformed ones are refused
with one line."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.adversarial.conftest import KERNELS, corpus_entries, one_error_line, run

#: each payload, if it ever ran as Python, creates the file named by {mark}
PAYLOADS = [
    '"""\nopen({mark!r}, "w").close()\n"""',
    "'''\nopen({mark!r}, 'w').close()\n'''",
    '\\N{{BOGUS NAME}} \\x00 \\ trailing backslash \\',
    '\r__import__("os").mknod({mark!r})\r',
    "x\n# coding: utf-7\n+AAo-open({mark!r}, 'w').close()",
    '"); open({mark!r}, "w").close(); ("',
    "[/dev/shm/x] [bold]markup[/] \u2028 \u0000 done",
]


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    """A project folder with the test kernels and one corpus entry found by fuzzkern."""
    root = tmp_path_factory.mktemp("project")
    shutil.copy(KERNELS, root / "kernels.py")
    (root / "pyproject.toml").write_text('[tool.fuzzkern]\ntargets = ["kernels.py"]\n')
    # bounded by a case count; the budget is large enough at load 8 on 2 cores
    res = run(["run", "kernels.py::wrong", "--budget", "150s", "--seed", "1", "--no-db",
               "-j", "1", "-q", "--max-examples", "40"], root, timeout=300)
    assert res.returncode == 1, res.stdout + res.stderr
    assert len(corpus_entries(root / "corpus")) == 1
    return root


def _tampered(project: Path, tmp_path: Path, change) -> Path:
    """A copy of the project whose entry ``change(entry_dict)`` edited."""
    dst = tmp_path / "p"
    shutil.copytree(project, dst)
    path = corpus_entries(dst / "corpus")[0]
    d = json.loads(path.read_text())
    change(d)
    path.write_text(json.dumps(d))
    return path


@pytest.mark.parametrize("payload", PAYLOADS)
def test_reproducer_runs_no_payload(project, tmp_path, payload):
    """Item 1: the message, explanations and environment of an entry are data in its
    reproducer; the script still runs and shows the failure. (A payload in the target id: the
    id no longer hashes the content, or names no declared target: refused.)"""
    mark = tmp_path / "PWNED"
    text = payload.format(mark=str(mark))

    def change(d):
        d["message"] = text
        d["target"]["ref"] = "wrong" + text
        d["explanations"] = [text]
        d["environment"]["fuzzkern"] = text
        d["environment"]["gpu"] = text

    entry = _tampered(project, tmp_path, change)
    res = run(["repro", str(entry), "-o", str(tmp_path / "repro.py")], entry.parents[2])
    assert res.returncode == 0, res.stdout + res.stderr
    proc = subprocess.run([sys.executable, str(tmp_path / "repro.py")], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert not mark.exists(), "a payload in the entry ran as code"
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "the failure reproduces" in proc.stdout


def test_replay_and_repro_never_load_code_an_entry_names(project, tmp_path):
    """Item 2: an entry naming a target file outside its project (its ref, its launcher's and
    reference's files) is replayed and reproduced with the declared target: the named file is
    never imported, and no flag makes it so."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    mark = tmp_path / "IMPORTED"
    (elsewhere / "evil.py").write_text(
        f"open({str(mark)!r}, 'w').close()\n" + (project / "kernels.py").read_text())

    def change(d):
        d["target"]["ref"] = f"{elsewhere / 'evil.py'}::wrong"
        d["target"]["ref_relative"] = "../elsewhere/evil.py::wrong"
        for key in ("launcher", "reference"):
            d["target"][key] = {"module": "evil", "qualname": "wrong",
                                "file": str(elsewhere / "evil.py")}

    entry = _tampered(project, tmp_path, change)
    root = entry.parents[2]
    res = run(["replay"], root)
    assert res.returncode == 1 and "still failing" in res.stdout, res.stdout + res.stderr
    res = run(["repro", str(entry), "-o", str(tmp_path / "r.py")], root)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "evil" not in (tmp_path / "r.py").read_text()
    proc = subprocess.run([sys.executable, str(tmp_path / "r.py")], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and "the failure reproduces" in proc.stdout, proc.stdout
    assert not mark.exists()
    res = run(["replay", "--allow-outside-root"], root)
    assert res.returncode == 2 and not mark.exists()


@pytest.mark.parametrize("bad_id", ["../../x", "a/b", "..", "x.y", "", "a" * 65])
def test_entry_ids_cannot_name_paths(project, tmp_path, bad_id):
    """Item 2: an id names files; one with separators or dots is a malformed entry."""

    def change(d):
        d["id"] = bad_id

    entry = _tampered(project, tmp_path, change)
    res = run(["repro", str(entry)], tmp_path)
    assert res.returncode == 2
    assert "bad entry id" in one_error_line(res.stderr)
    assert not list(tmp_path.rglob("repro_*.py")) and not (tmp_path.parent / "x.py").exists()


@pytest.mark.parametrize("content", [b"{", b"[]", b'{"format": "fuzzkern-corpus-entry"}',
                                     b"\xff\xfe", b'{"format": "fuzzkern-corpus-entry", '
                                     b'"schema_version": 1, "id": "x", "target": 5}'])
def test_malformed_entries_one_line_and_non_zero(tmp_path, content):
    """Item 6: a corpus of only broken entries does not replay green; repro of one is one
    error line."""
    folder = tmp_path / "corpus" / "t"
    folder.mkdir(parents=True)
    (folder / "e.json").write_bytes(content)
    res = run(["replay"], tmp_path)
    assert res.returncode == 2, res.stdout + res.stderr
    assert "could be replayed" in one_error_line(res.stderr)
    res = run(["repro", str(folder / "e.json")], tmp_path)
    assert res.returncode == 2
    one_error_line(res.stderr)


def test_terminal_escapes_never_reach_the_terminal(tmp_path):
    """A kernel's message with terminal escape sequences (a new title, a cleared screen),
    and a corpus file whose name holds them (from a pull request): `fuzzkern run` and
    `fuzzkern replay` print each escaped (``\\x1b``), never the bytes."""
    shutil.copy(KERNELS, tmp_path / "kernels.py")
    res = run(["run", "kernels.py::raises_escapes", "--budget", "120s", "--seed", "1",
               "--no-db", "-j", "1", "-q", "--max-examples", "20"], tmp_path, timeout=300)
    assert res.returncode == 1, res.stdout + res.stderr
    assert "\\x1b]0;PWNED" in res.stdout and "\x1b" not in res.stdout + res.stderr
    folder = tmp_path / "corpus" / "evil\x1b]0;PWNED\x07"
    folder.mkdir()
    (folder / "x\x1b[2Jy.json").write_text('{"format": 1}')
    res = run(["replay", "--target", "kernels.py"], tmp_path)
    assert res.returncode == 1, res.stdout + res.stderr  # the kernel's entry still fails
    assert "evil\\x1b]0;PWNED\\x07/x\\x1b[2Jy.json" in res.stdout
    assert "\\x1b]0;PWNED" in res.stdout.split("raises_escapes", 1)[1]
    for res_text in (res.stdout, res.stderr):
        assert "\x1b" not in res_text and "\x07" not in res_text


def test_a_file_name_with_a_newline_stays_on_one_line(tmp_path):
    """A corpus file named ``"x\\nPASSED ..."`` (from a pull request) would print a line of its
    own, one that reads as a result: `fuzzkern replay` shows the name with ``\\n`` escaped in
    its one row, and pytest's item for it has a one-line node id of plain characters."""
    shutil.copy(KERNELS, tmp_path / "test_k.py")
    folder = tmp_path / "corpus" / "test_k_wrong"
    folder.mkdir(parents=True)
    (folder / "x\nPASSED all entries.json").write_text("{}")
    res = run(["replay", "--target", "test_k.py"], tmp_path)
    assert res.returncode == 2, res.stdout + res.stderr
    assert "x\\nPASSED all entries.json" in res.stdout
    assert not any(line.startswith("PASSED") for line in res.stdout.splitlines())
    res = subprocess.run([sys.executable, "-m", "pytest", "test_k.py", "-k", "wrong and corpus",
                          "-p", "no:cacheprovider", "-q", "-rf"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=600)
    assert "1 failed" in res.stdout, res.stdout + res.stderr
    (failed,) = [line for line in res.stdout.splitlines() if line.startswith("FAILED")]
    assert failed.startswith("FAILED test_k.py::wrong[corpus:xx0aPASS]"), failed
