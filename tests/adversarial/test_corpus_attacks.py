"""Attacks through a corpus that arrives in a stranger's pull request (issue 35): files that
are links, devices or huge; numbers that overflow, allocate or nest without end; temporary
files that are not fuzzkern's; a lock held forever; edits that silence a bug. Each holds: one
cannot-replay line, a non-zero exit, nothing else touched, within memory and time limits
(:func:`~tests.adversarial.conftest.run_limited`). docs/corpus.md, "Untrusted corpora", is the
table of what fuzzkern promises."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.adversarial.conftest import (
    KERNELS,
    MEMORY_LIMIT,
    corpus_entries,
    one_error_line,
    rows,
    run,
    run_limited,
)

GiB = 2**30
FIXED = ["--ref", "kernels.py::fixed"]
#: a run that finds `wrong`'s bug again (20 cases: a few seconds; the budget is for a busy CI)
RUN = ["run", "kernels.py::wrong", "--budget", "150s", "--seed", "1", "--no-db", "-j", "1", "-q",
       "--max-examples", "20"]


def _project_with(target: str, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("project")
    shutil.copy(KERNELS, root / "kernels.py")
    (root / "pyproject.toml").write_text('[tool.fuzzkern]\ntargets = ["kernels.py"]\n')
    res = run(["run", f"kernels.py::{target}", "--budget", "150s", "--seed", "1", "--no-db",
               "-j", "1", "-q", "--max-examples", "60"], root, timeout=300)
    assert res.returncode == 1, res.stdout + res.stderr
    assert len(corpus_entries(root / "corpus")) == 1
    return root


@pytest.fixture(scope="module")
def wrong_project(tmp_path_factory) -> Path:
    """A project with one entry of ``wrong`` (a wrong value when N > 3)."""
    return _project_with("wrong", tmp_path_factory)


@pytest.fixture(scope="module")
def oob_project(tmp_path_factory) -> Path:
    """A project with one entry of ``oob`` (a Triton kernel storing one past its output)."""
    return _project_with("oob", tmp_path_factory)


def _copy(project: Path, tmp_path: Path) -> tuple[Path, Path]:
    """A copy of ``project`` and the path of its entry's JSON file."""
    dst = tmp_path / "p"
    shutil.copytree(project, dst, symlinks=True)
    return dst, corpus_entries(dst / "corpus")[0]


def _edit(entry: Path, change) -> None:
    d = json.loads(entry.read_text())
    change(d)
    entry.write_text(json.dumps(d))


def _twin(entry: Path, name: str = "poisoned") -> Path:
    """A second entry beside ``entry``, id ``name``, with the same inputs."""
    d = json.loads(entry.read_text())
    d["id"], d["storages"] = name, f"{name}.safetensors"
    twin = entry.with_name(f"{name}.json")
    twin.write_text(json.dumps(d, indent=1))
    shutil.copy(entry.with_suffix(".safetensors"), twin.with_suffix(".safetensors"))
    return twin


def _limit_memory() -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def _sparse(path: Path, size: int = 20 * GiB) -> Path:
    with open(path, "wb") as fh:
        fh.truncate(size)
    return path


# -- item 1: files --------------------------------------------------------------------------


def _plant(victim: Path, kind: str, tmp_path: Path) -> None:
    victim.unlink()
    if kind == "link to /dev/zero":
        victim.symlink_to("/dev/zero")
    elif kind == "link to a sparse file":
        victim.symlink_to(_sparse(tmp_path / "big"))
    elif kind == "sparse file":
        _sparse(victim)
    else:
        os.mkfifo(victim)


EXPECT = {("json", "link to /dev/zero"): "symbolic link",
          ("json", "link to a sparse file"): "symbolic link",
          ("json", "sparse file"): "past entry_bytes",
          ("json", "fifo"): "not a regular file",
          ("safetensors", "link to /dev/zero"): "symbolic link",
          ("safetensors", "link to a sparse file"): "symbolic link",
          ("safetensors", "sparse file"): "past the size its entry declares",
          ("safetensors", "fifo"): "not a regular file"}


@pytest.mark.parametrize("file,kind", sorted(EXPECT))
def test_links_devices_fifos_and_huge_files_are_refused(wrong_project, tmp_path, file, kind):
    """Attack 1: an entry's JSON or .safetensors file as a link to /dev/zero or to a 20 GB
    sparse file, a 20 GB sparse file itself, a FIFO: replay, repro and run refuse it in one
    line, in little memory and time, and go on."""
    root, entry = _copy(wrong_project, tmp_path)
    victim = entry if file == "json" else entry.with_suffix(".safetensors")
    _plant(victim, kind, tmp_path)
    expect = EXPECT[file, kind]
    res = run_limited(["replay"], root, timeout=60)
    assert res.returncode == 2, res.stdout + res.stderr
    assert "could be replayed" in one_error_line(res.stderr)
    status, reason = rows(res.stdout)[entry.name][2:]
    assert status == "cannot replay" and expect in reason, res.stdout
    if file == "json":
        res = run_limited(["repro", str(entry), "-o", "r.py"], root, timeout=60)
        assert res.returncode == 2 and not (root / "r.py").exists()
        assert expect in one_error_line(res.stderr)
    else:  # the reproducer itself refuses the inputs file
        assert run(["repro", str(entry), "-o", "r.py"], root).returncode == 0
        proc = subprocess.run([sys.executable, "r.py"], cwd=root, capture_output=True,
                              text=True, timeout=120, preexec_fn=_limit_memory)
        assert proc.returncode == 2, proc.stdout + proc.stderr
        assert "refused: " in proc.stdout + proc.stderr
    if kind in ("link to /dev/zero", "sparse file"):
        res = run_limited(RUN, root, timeout=300)
        assert res.returncode == 1, res.stdout + res.stderr  # the bug, found again
        assert expect in " ".join(res.stdout.split()) and "Traceback" not in res.stderr


# -- item 2: numbers --------------------------------------------------------------------------


def _tiny_storage_huge_view(entry: Path) -> None:
    """The case's x as 3e9 elements of stride 0 over a storage of 1, with a valid checksum."""
    import safetensors.torch
    import torch

    one = torch.zeros(1, dtype=torch.float32)
    safetensors.torch.save_file({"x": one}, str(entry.with_suffix(".safetensors")))

    def change(d):
        t = d["case"]["inputs"]["x"]["tensor"]
        t.update(shape=[3_000_000_000], strides=[0], storage_offset=0, storage_size=1)
        t.pop("layout", None)
        d["case"]["dims"]["N"] = 3_000_000_000
        d["inputs"]["x"].update(elements=1, sha256=hashlib.sha256(one.numpy().tobytes())
                                .hexdigest())

    _edit(entry, change)


def test_a_huge_view_of_a_tiny_storage_is_refused_before_any_allocation(wrong_project, tmp_path):
    """Attack 2: shape [3e9], strides [0], storage_size 1 and a valid checksum (8 bytes on
    disk): refused by the elements limit, within 3 GiB of address space."""
    root, entry = _copy(wrong_project, tmp_path)
    _tiny_storage_huge_view(entry)
    start = time.monotonic()
    res = run_limited(["replay"], root, timeout=60)
    assert res.returncode == 2, res.stdout + res.stderr
    status, reason = rows(res.stdout)[entry.name][2:]
    assert status == "cannot replay" and "3000000000 elements" in reason
    assert "tensor_elements" in reason and time.monotonic() - start < 45


def test_the_limits_are_settable(wrong_project, tmp_path):
    """Item 2: FUZZKERN_CORPUS_LIMITS lowers (or raises) a limit; a bad value is one usage
    error line."""
    root, entry = _copy(wrong_project, tmp_path)
    res = run(["replay"], root, env={**os.environ, "FUZZKERN_CORPUS_LIMITS": "tensor_elements=2"})
    assert res.returncode == 2
    assert "past the limit of 2" in rows(res.stdout)[entry.name][3]
    res = run(["replay"], root, env={**os.environ, "FUZZKERN_CORPUS_LIMITS": "entry_bytes=100"})
    assert "past entry_bytes (100 bytes)" in rows(res.stdout)[entry.name][3]
    for bad in ("tensor_elements=lots", "speed=3", "depth=0"):
        res = run(["replay"], root, env={**os.environ, "FUZZKERN_CORPUS_LIMITS": bad})
        assert res.returncode == 2
        assert "FUZZKERN_CORPUS_LIMITS" in one_error_line(res.stderr)


def _nested(text: str) -> str:
    return text.replace('"environment": {', '"environment": {"deep": ' + "[" * 990 + "]" * 990
                        + ", ", 1)


#: name -> how the entry's text is poisoned
POISONS = {
    "storage_size {$float: inf}": lambda t: t.replace('"storage_size": 4',
                                                      '"storage_size": {"$float": "inf"}'),
    "storage_size 1e400": lambda t: t.replace('"storage_size": 4', '"storage_size": 1e400'),
    "a 5000-digit integer": lambda t: t.replace('"storage_size": 4',
                                                '"storage_size": ' + "9" * 5000),
    "JSON nested 990 deep": _nested,
    "a NaN token": lambda t: t.replace('"storage_size": 4', '"storage_size": NaN'),
    "a dim of 1e300": lambda t: t.replace('"N": 4', '"N": 1e300'),
    "a whole number as 4.5": lambda t: t.replace('"storage_size": 4', '"storage_size": 4.5'),
    "repeat_compiled 10**9": lambda t: t.replace('"debug": false',
                                                 '"debug": false, "repeat_compiled": 1000000000'),
    # a key said twice: a reviewer reads the first, a replay once used the last
    "a duplicate key": lambda t: t.replace('"verdict": "kernel-bug",',
                                           '"verdict": "pass", "verdict": "kernel-bug",', 1),
}

#: what each poison's cannot-replay line says
POISON_REASONS = {
    "storage_size {$float: inf}": "storage_size must be a whole number",
    "storage_size 1e400": "not finite",
    "a 5000-digit integer": "digits",
    "JSON nested 990 deep": "nested deeper",
    "a NaN token": "NaN",
    "a dim of 1e300": "dims['N'] must be a whole number",
    "a whole number as 4.5": "storage_size must be a whole number",
    "repeat_compiled 10**9": "repeat_compiled must be a whole number in [1, 100]",
    "a duplicate key": "the key 'verdict' twice in one object",
}


@pytest.mark.parametrize("poison", sorted(POISONS))
def test_one_poisoned_value_is_one_line_and_the_rest_replays(wrong_project, tmp_path, poison):
    """Attack 5: infinity, 1e400, 5000 digits, 990-deep nesting (and NaN tokens, fractional
    and overflowing whole numbers): one cannot-replay line, exit 2 (never 1, which reads as
    still failing), the rest of the corpus replays; `fuzzkern run` goes on."""
    root, entry = _copy(wrong_project, tmp_path)
    text = json.dumps(json.loads(entry.read_text()), indent=1)
    twin = _twin(entry)
    poisoned = POISONS[poison](text.replace(f'"id": "{entry.stem}"', '"id": "poisoned"'))
    assert poisoned != text
    twin.write_text(poisoned)
    res = run_limited(["replay", *FIXED], root, timeout=60)
    assert res.returncode == 2, res.stdout + res.stderr
    assert "1 of the 2 corpus entries could not be replayed" in one_error_line(res.stderr)
    table = rows(res.stdout)
    assert table[entry.name][2] == "now passing", res.stdout
    assert table[twin.name][2] == "cannot replay"
    assert POISON_REASONS[poison] in table[twin.name][3], res.stdout
    res = run_limited(RUN, root, timeout=300)
    assert res.returncode == 1 and "Traceback" not in res.stderr, res.stdout + res.stderr
    assert "corpus: skipped" in res.stdout and "poisoned.json" in res.stdout


def test_poisoned_entries_do_not_break_pytest_collection(pytester, monkeypatch):
    """Attack 5: the pytest plugin collects a corpus with poisoned entries; each is an item
    that fails with its reason, the good one replays."""
    shutil.copy(KERNELS, pytester.path / "test_k.py")
    res = run(["run", "test_k.py::wrong", "--budget", "150s", "--seed", "1", "--no-db", "-j", "1",
               "-q", "--max-examples", "60"], pytester.path, timeout=300)
    assert res.returncode == 1, res.stdout + res.stderr
    (entry,) = corpus_entries(pytester.path / "corpus")
    text = entry.read_text()
    for name, poison in (("deep", "JSON nested 990 deep"),
                         ("digits", "a 5000-digit integer")):
        twin = _twin(entry, name)
        twin.write_text(POISONS[poison](text.replace(f'"id": "{entry.stem}"',
                                                     f'"id": "{name}"')))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-k", "wrong and corpus",
                                           "-rf", "test_k.py")
    out = result.stdout.str()
    assert "INTERNALERROR" not in out and "ERROR collecting" not in out, out
    result.assert_outcomes(failed=3)
    assert "corpus entry corpus/test_k_wrong/deep.json cannot be read" in out
    assert "nested deeper" in out and "digits" in out
    assert f"regression case corpus/test_k_wrong/{entry.name} still fails" in out
    monkeypatch.setenv("FUZZKERN_CORPUS_LIMITS", "depth=deep")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "test_k.py")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "fuzzkern: FUZZKERN_CORPUS_LIMITS: depth must be" in result.stderr.str()


# -- item 3: the sweep ------------------------------------------------------------------------


def test_the_sweep_removes_only_fuzzkern_temporaries_in_target_folders(wrong_project, tmp_path):
    """Attack 3: `fuzzkern replay` of a project (or of its corpus) removes the dead writers'
    temporary files of entries, and no other .tmp file: not beside the corpus, not in it,
    not below .git."""
    root, entry = _copy(wrong_project, tmp_path)
    ours = f".{entry.name}.999999999.abcdefgh.tmp"
    theirs = [root / "docs/drafts/.thesis.tmp", root / ".git/objects/.pack.tmp",
              root / ".report.99999.ab.tmp", root / "corpus/.notes.tmp",
              entry.parent / ".draft.tmp", entry.parent / ".notes.999999999.abcdefgh.tmp",
              root / ".git/objects" / ours, root / "docs" / ours, root / "corpus" / ours]
    for path in theirs:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("someone's work")
        os.utime(path, (time.time() - 3600,) * 2)
    mine = entry.parent / ours
    mine.write_bytes(b"half an entry")
    res = run(["replay", str(root)], tmp_path)
    assert "Traceback" not in res.stderr
    assert not mine.exists()
    assert [p for p in theirs if not p.exists()] == []
    mine.write_bytes(b"half an entry")
    run(["replay"], root)
    assert not mine.exists() and [p for p in theirs if not p.exists()] == []


# -- item 4: the lock -------------------------------------------------------------------------


def test_a_corpus_lock_held_forever_costs_budget_not_a_hang(wrong_project, tmp_path):
    """Attack 4: another process holds the target folder's lock and is stopped (Ctrl-Z while
    saving): `fuzzkern run` waits at most 30 s for it, warns, and saves the finding anyway.
    The run is bounded by a case count, not its budget (large enough at load 8 on 2 cores)."""
    root, entry = _copy(wrong_project, tmp_path)
    folder = entry.parent
    for path in folder.iterdir():
        path.unlink()
    holder = subprocess.Popen(
        [sys.executable, "-c", "import fcntl, os, sys, time\n"
         f"fd = os.open({str(folder)!r}, os.O_RDONLY)\nfcntl.flock(fd, fcntl.LOCK_EX)\n"
         "print('locked', flush=True)\ntime.sleep(600)"], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        os.kill(holder.pid, signal.SIGSTOP)
        start = time.monotonic()
        res = run_limited(["run", "kernels.py::wrong", "--budget", "150s", "--seed", "1",
                           "--no-db", "-j", "1", "--max-examples", "20"], root, timeout=280)
        took = time.monotonic() - start
    finally:
        holder.kill()
        holder.wait()
    assert res.returncode == 1, res.stdout + res.stderr
    assert took < 270, f"took {took:.0f} s for a budget of 150 s"
    out = " ".join(res.stdout.split())
    assert "stayed locked by another process for" in out and "without the lock" in out
    # the wait is at most the lock's 30 s (or the run's hard stop, were it sooner)
    waited = int(out.split("stayed locked by another process for ")[1].split(" s;")[0])
    assert waited <= 32
    (saved,) = corpus_entries(root / "corpus")
    assert json.loads(saved.read_text())["verdict"] == "kernel-bug"
    assert f"saved: corpus/kernels_wrong/{saved.name}" in out and "NOT SAVED" not in out


# -- item 6: an entry cannot weaken a target --------------------------------------------------


def test_edited_checks_cannot_silence_an_out_of_bounds_write(oob_project, tmp_path):
    """Attack 7: an entry whose options.checks were edited to all false still fails (the
    checks are the target's), and the replay says what was recorded."""
    root, entry = _copy(oob_project, tmp_path)

    def change(d):
        d["options"]["checks"] = {k: False for k in ("bounds", "view", "poison", "mutation",
                                                      "redzone")}

    _edit(entry, change)
    res = run(["replay"], root)
    assert res.returncode == 1, res.stdout + res.stderr
    _target, verdict, status, reason = rows(res.stdout)[entry.name]
    assert (verdict, status) == ("oob", "still failing"), res.stdout
    assert "past the end" in reason
    assert "recorded with check(s) bounds, mutation, poison, redzone, view off" in reason


def test_an_edited_tolerance_is_shown_not_used(wrong_project, tmp_path):
    root, entry = _copy(wrong_project, tmp_path)

    def change(d):
        d["target"]["tolerance"] = {"rtol": 1e9, "atol": 1e9, "equal_nan": True}

    _edit(entry, change)
    res = run(["replay"], root)
    assert res.returncode == 1
    _target, _verdict, status, reason = rows(res.stdout)[entry.name]
    assert status == "still failing" and "recorded with tolerance" in reason


def test_dangling_links_and_linked_folders_are_listed_and_fail_the_replay(wrong_project,
                                                                          tmp_path):
    """Attack 7: a dangling entry link is listed (not skipped) and makes replay exit 2 though
    the other entry now passes; a target folder that is a link out is not followed."""
    root, entry = _copy(wrong_project, tmp_path)
    outside = tmp_path / "outside"
    shutil.copytree(entry.parent, outside)
    (entry.parent / "gone.json").symlink_to(tmp_path / "nowhere.json")
    (root / "corpus" / "elsewhere").symlink_to(outside)
    res = run(["replay", *FIXED], root)
    assert res.returncode == 2, res.stdout + res.stderr
    assert "2 of the 3 corpus entries could not be replayed" in one_error_line(res.stderr)
    table = rows(res.stdout)
    assert table[entry.name][2] == "now passing"
    assert table["gone.json"][2:] == ["cannot replay", "refused: a symbolic link (dangling) "
                                      "(corpus files and folders must not be links)"]
    assert "elsewhere" in res.stdout and "symbolic link" in res.stdout
    res = run(["replay", *FIXED, str(root / "corpus" / "elsewhere" / entry.name)], root)
    # (the reason's cell folded over lines where the temporary folder's name is long: joined)
    assert res.returncode == 2 and "outside the corpus folder" in rows(res.stdout)[entry.name][3]


def test_a_target_whose_every_case_is_empty_is_not_green(tmp_path):
    """Attack 7: `sizes(0, 0)`: every case has no element; the run says nothing was tested
    and exits 2, as when every case was rejected."""
    shutil.copy(KERNELS, tmp_path / "kernels.py")
    res = run(["run", "kernels.py::empty", "--budget", "120s", "--seed", "1", "--no-db", "-j", "1",
               "--max-examples", "15"], tmp_path)
    assert res.returncode == 2, res.stdout + res.stderr
    line = one_error_line(res.stderr)
    assert "no case was tested: all 15 cases ended" in line and "15 empty" in line


# -- what held: views, storages and headers that lie ------------------------------------------


def _lying_header(entry: Path) -> None:
    sf = entry.with_suffix(".safetensors")
    raw = sf.read_bytes()
    sf.write_bytes((2**40).to_bytes(8, "little") + raw[8:])


def _header_too_long(entry: Path) -> None:
    sf = entry.with_suffix(".safetensors")
    header = json.dumps({"x": {"dtype": "F32", "shape": [4], "data_offsets": [0, 10**12]}})
    sf.write_bytes(len(header).to_bytes(8, "little") + header.encode() + b"\0" * 16)


def _tensor(**fields):
    def change(d):
        d["case"]["inputs"]["x"]["tensor"].update(fields)
    return change


HELD = {
    "a negative stride": (_tensor(strides=[-1]), "strides must be in [0"),
    "a huge stride": (_tensor(strides=[2**62]), "reaches element"),
    "a storage too small for the view": (_tensor(storage_size=2), "a storage of 2"),
    "a storage of 2**40 elements": (_tensor(storage_size=2**40), "storage_bytes"),
    "a header length of 2**40": (_lying_header, "truncated safetensors file (header)"),
    "a header past the file's end": (_header_too_long, "truncated safetensors file"),
}


@pytest.mark.parametrize("attack", sorted(HELD))
def test_views_storages_and_headers_that_lie_are_one_line(wrong_project, tmp_path, attack):
    root, entry = _copy(wrong_project, tmp_path)
    change, expect = HELD[attack]
    if change in (_lying_header, _header_too_long):
        change(entry)
    else:
        _edit(entry, change)
    res = run_limited(["replay"], root, timeout=60)
    assert res.returncode == 2, res.stdout + res.stderr
    one_error_line(res.stderr)
    _target, _verdict, status, reason = rows(res.stdout)[entry.name]
    assert status == "cannot replay" and expect in reason, res.stdout


# -- an entry is data ----------------------------------------------------------------------


def _rehashed(entry: Path, change) -> Path:
    """``entry`` edited by ``change`` and saved under the id its new content hashes to (what
    an attacker who read the source does), in its target's folder; returns the new JSON."""
    from fuzzkern.case.model import Case
    from fuzzkern.corpus import store

    d = json.loads(entry.read_text())
    change(d)
    d["id"] = store.entry_id(d["target"]["id"], d["verdict"], Case.from_json(d["case"]))
    d["storages"] = f"{d['id']}.safetensors"
    folder = entry.parent.parent / store.target_dirname(d["target"]["id"])
    folder.mkdir(exist_ok=True)
    new = folder / f"{d['id']}.json"
    shutil.copy(entry.with_suffix(".safetensors"), new.with_suffix(".safetensors"))
    new.write_text(json.dumps(d, indent=1))
    if new != entry:
        entry.unlink()
        entry.with_suffix(".safetensors").unlink()
    return new


def test_code_locations_in_an_entry_are_never_used(wrong_project, tmp_path):
    """Data became code: an entry naming ``posix.system`` as its reference (and a shell
    command as an input) replays and reproduces its declared target; nothing it names runs."""
    root, entry = _copy(wrong_project, tmp_path)
    mark = tmp_path / "pwned"

    def change(d):
        loc = {"module": "posix", "qualname": "system", "file": None}
        d["target"].update(reference=loc, launcher=loc, ref="this:x", ref_relative="x.py::y")
        d["message"] = f"touch {mark}"

    _edit(entry, change)
    res = run(["replay"], root)
    assert res.returncode == 1 and rows(res.stdout)[entry.name][2] == "still failing", res.stdout
    res = run(["repro", str(entry), "-o", "r.py"], root)
    assert res.returncode == 0, res.stdout + res.stderr
    text = (root / "r.py").read_text()
    assert "posix" not in text and "system" not in text
    script = subprocess.run([sys.executable, "r.py"], cwd=root, capture_output=True, text=True,
                            timeout=120)
    assert script.returncode == 1 and "the failure reproduces" in script.stdout, script.stdout
    assert not mark.exists()


def test_an_entry_naming_a_module_as_its_target_imports_nothing(wrong_project, tmp_path):
    """``this::wrong`` (no .py): the id is compared with the declared targets' ids, never
    imported (the Zen of Python is not printed), and the entry cannot replay, exit 2."""
    root, entry = _copy(wrong_project, tmp_path)
    new = _rehashed(entry, lambda d: d["target"].update(id="this::wrong"))
    res = run(["replay"], root)
    assert res.returncode == 2, res.stdout + res.stderr
    assert "Zen of Python" not in res.stdout + res.stderr
    assert "none of the declared target sources" in rows(res.stdout)[new.name][3]


def test_an_edited_entry_is_refused_by_its_content_id(wrong_project, tmp_path):
    """A passing case planted at a real entry's id (its bytes and case edited): the id no
    longer hashes its content, so it is refused, never trusted."""
    root, entry = _copy(wrong_project, tmp_path)
    _edit(entry, lambda d: d["case"]["dims"].update(N=1))
    res = run(["replay"], root)
    assert res.returncode == 2
    assert "is not the hash" in rows(res.stdout)[entry.name][3]


def test_edited_modes_do_not_hide_an_interpreter_failure(wrong_project, tmp_path):
    """``"modes": ["compiled"]`` on an entry that failed in the interpreter: CPU replay still
    runs it in the interpreter, still failing, exit 1."""
    root, entry = _copy(wrong_project, tmp_path)
    _edit(entry, lambda d: d.update(modes=["compiled"]))
    res = run(["replay"], root)
    assert res.returncode == 1, res.stdout + res.stderr
    assert rows(res.stdout)[entry.name][2] == "still failing"


@pytest.mark.parametrize("where", ["/usr/share", "/", "../outside"])
def test_a_corpus_folder_that_is_a_link_is_refused_in_one_line(wrong_project, tmp_path, where):
    """``corpus`` a symbolic link: replay names it and walks nothing; a run saves nothing
    through it (its finding is still reported)."""
    root, _entry = _copy(wrong_project, tmp_path)
    shutil.rmtree(root / "corpus")
    if where.startswith(".."):
        (tmp_path / "outside").mkdir()
    (root / "corpus").symlink_to(where)
    start = time.monotonic()
    res = run(["replay"], root, timeout=60)
    assert res.returncode == 2 and "symbolic link" in res.stdout + res.stderr
    assert "Traceback" not in res.stderr and time.monotonic() - start < 30
    res = run(["run", "kernels.py::wrong", "--budget", "150s", "--seed", "1", "--no-db", "-j",
               "1", "-q", "--max-examples", "60"], root, timeout=300)
    assert res.returncode == 1 and "symbolic link" in res.stdout + res.stderr
    assert "Traceback" not in res.stderr
    if where.startswith(".."):
        assert not list((tmp_path / "outside").iterdir())
