"""More attacks on keeping and replaying what a run found (issue 39), tried as a stranger's
pull request or a new user's layout would make them: an old-form entry whose inputs file is a
link to ``/dev/zero`` given to ``fuzzkern corpus upgrade``, two test files whose targets share
one ``name=`` collected by pytest, inputs stored under another dtype, payloads in the hashed
case. docs/corpus.md, "Untrusted corpora", is the table."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.adversarial.conftest import KERNELS, run, run_limited
from tests.adversarial.test_corpus_attacks import _copy, _edit, _project_with, _rehashed


@pytest.fixture(scope="module")
def wrong_project(tmp_path_factory) -> Path:
    """A project with one shrunk entry of ``wrong`` (a wrong value when N > 3)."""
    return _project_with("wrong", tmp_path_factory)


@pytest.mark.parametrize("kind", ["link to /dev/zero", "fifo"])
def test_corpus_upgrade_never_reads_inputs_through_a_link(wrong_project, tmp_path, kind):
    """An old-form entry (code locations stored, which ``corpus upgrade`` rewrites) whose
    ``.safetensors`` is a link to ``/dev/zero``, or a FIFO: the upgrade names it in one line
    and leaves it, exit 2, within memory and time limits (it read the inputs through the
    link, whole, until memory ran out; a FIFO blocked it)."""
    root, entry = _copy(wrong_project, tmp_path)
    loc = {"module": "posix", "qualname": "system", "file": "kernels.py"}
    _edit(entry, lambda d: d["target"].update(launcher=loc, reference=loc))
    before = entry.read_text()
    inputs = entry.with_suffix(".safetensors")
    inputs.unlink()
    if kind == "fifo":
        os.mkfifo(inputs)
    else:
        inputs.symlink_to("/dev/zero")
    res = run_limited(["corpus", "upgrade"], root, timeout=120)
    assert res.returncode == 2, res.stdout + res.stderr
    assert "Traceback" not in res.stderr, res.stderr
    (left,) = [ln for ln in res.stdout.splitlines() if ln.startswith("left as it is")]
    why = "symbolic link" if kind != "fifo" else "not a regular file"
    assert left.startswith(f"left as it is: {inputs}: refused: ") and why in left, res.stdout
    assert entry.read_text() == before


def test_two_test_files_with_one_target_name_share_no_entries(pytester, tmp_path):
    """Two test files whose targets share one ``name=`` (a copied file): pytest collects
    them both. Before, both replayed the corpus folder of that name, so the one entry showed
    as still failing under one and passing under the other; now the second is an item that
    fails saying so, and has no corpus items (``fuzzkern run`` refuses such targets too)."""
    shutil.copy(KERNELS, pytester.path / "kernels.py")
    res = run(["run", "kernels.py::wrong", "--budget", "150s", "--seed", "1", "--no-db", "-j",
               "1", "-q", "--max-examples", "20"], pytester.path, timeout=300)
    assert res.returncode == 1, res.stdout + res.stderr
    (entry,) = sorted((pytester.path / "corpus").rglob("*.json"))
    _rehashed(entry, lambda d: d["target"].update(id="dup"))
    for name, variable in (("test_a.py", "wrong"), ("test_b.py", "fixed")):
        (pytester.path / name).write_text(
            "import fuzzkern\nfrom fuzzkern import strategies as fks\nfrom kernels import "
            f"_X, _DIMS, {variable} as _t\n\n"
            "dup = fuzzkern.Target(name='dup', launcher=_t.launcher, reference=_t.reference, "
            "inputs=_X, dims=_DIMS)\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:randomly", "-v",
                                           "--fuzzkern-max-examples", "5", "--fuzzkern-seed",
                                           "1", "test_a.py", "test_b.py")
    out = result.stdout.str()
    assert "test_a.py::dup[corpus:" in out and "test_b.py::dup[corpus:" not in out, out
    assert "test_b.py::dup[fuzz] FAILED" in out, out
    assert "two targets are named 'dup'" in out, out


def test_inputs_stored_under_another_dtype_are_refused_by_replay_and_reproducer(wrong_project,
                                                                               tmp_path):
    """The ``.safetensors`` rewritten with its float32 storage declared int32 in the header
    (the same bytes, so the checksum holds): replay refuses it, and so does the reproducer
    script, exit 2 (it ran the kernel on the bytes read as int32 and said "the failure
    reproduces")."""
    import torch
    from safetensors.torch import load_file, save_file

    root, entry = _copy(wrong_project, tmp_path)
    inputs = entry.with_suffix(".safetensors")
    save_file({k: v.view(torch.int32) for k, v in load_file(inputs).items()}, inputs)
    res = run(["replay", str(entry)], root)
    assert res.returncode == 2 and "stored as torch.int32" in res.stdout, res.stdout
    res = run(["repro", str(entry), "-o", "r.py"], root)
    assert res.returncode == 0, res.stdout + res.stderr
    script = subprocess.run([sys.executable, str(root / "r.py")], cwd=tmp_path,
                            capture_output=True, text=True, timeout=300)
    assert script.returncode == 2, script.stdout + script.stderr
    assert "stored as torch.int32" in script.stdout, script.stdout


#: each payload, if it ever ran as Python, creates the file named by {mark}
CASE_PAYLOADS = [
    '\'"""\n__import__("os").mknod({mark!r})\n#',
    "\\N{{LATIN SMALL LETTER A}}\\\r\nopen({mark!r}, 'w').close() \ud800 \u2028 \x00",
    "x\n# -*- coding: utf-7 -*-\n+AAo-open({mark!r}, 'w').close()",
]


@pytest.mark.parametrize("payload", CASE_PAYLOADS)
def test_payloads_in_the_hashed_case_stay_data_in_the_reproducer(wrong_project, tmp_path,
                                                                  payload):
    """Payloads where an attacker who re-hashes the entry can put them: a dim's name, an
    autotuned kernel's name and its config (quotes, backslashes, ``\\N{...}``, a lone
    surrogate, line and paragraph separators, NUL, a coding line): the reproducer is ASCII,
    embeds them as data, runs none of them, and still shows the failure."""
    mark = tmp_path / "PWNED"
    text = payload.format(mark=str(mark))
    root, entry = _copy(wrong_project, tmp_path)

    def change(d):
        d["case"]["dims"][text] = 3
        d["case"]["configs"] = {text: 0}
        d["target"]["autotuners"] = [{"kernel": text, "index": 0, "count": 1, "config": text}]

    entry = _rehashed(entry, change)
    res = run(["repro", str(entry), "-o", str(tmp_path / "r.py")], root)
    assert res.returncode == 0, res.stdout + res.stderr
    source = (tmp_path / "r.py").read_bytes()
    assert source.isascii()
    proc = subprocess.run([sys.executable, str(tmp_path / "r.py")], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert not mark.exists(), "a payload in the entry ran as code"
    assert proc.returncode == 1 and "the failure reproduces" in proc.stdout, \
        proc.stdout + proc.stderr
