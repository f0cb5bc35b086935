"""Attacks on keeping and replaying what a run found (issue 39), each as an attacker, a user's
host code or an unfamiliar layout would make it: a full disk while an entry is re-shrunk, host
code that empties ``corpus/`` mid-run, a hidden ``.py`` inside ``corpus/``, a corpus far from
its target file, a reproducer of a bf16 target with a declared GPU, an old-form entry to
upgrade, target files named after standard-library modules, and unshrunk entries of one
failure written by several processes. docs/corpus.md, "Untrusted corpora", is the table."""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.adversarial.conftest import corpus_entries, one_error_line, rows, run, run_limited
from tests.adversarial.test_corpus_attacks import _copy, _edit, _project_with, _rehashed

ROOT = Path(__file__).parents[2]


@pytest.fixture(scope="module")
def wrong_project(tmp_path_factory) -> Path:
    """A project with one shrunk entry of ``wrong`` (a wrong value when N > 3)."""
    return _project_with("wrong", tmp_path_factory)


def _files(corpus: Path) -> dict[str, bytes]:
    return {str(p.relative_to(corpus)): p.read_bytes() for p in sorted(corpus.rglob("*"))
            if p.is_file()}


def _script(path: Path, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(path)], cwd=cwd, capture_output=True, text=True,
                          timeout=180)


# -- a full disk while an unshrunk entry is re-shrunk -----------------------------------------


def _unshrunk_instead(entry: Path) -> Path:
    """``entry``'s failure saved as a larger case whose shrinking the budget cut (N=13,
    ``"shrunk": false``), in place of ``entry``."""
    from fuzzkern.case.model import Case, TensorCase
    from fuzzkern.corpus import store

    old = store.load(entry)
    case = Case({"N": 13}, {"x": TensorCase.build((13,), "float32")})
    path = store.save(entry.parent.parent, old.target_id, old.ref, case, old.outcome,
                      modes=old.modes, shrunk=False)
    store.remove_entry(old)
    return Path(path)


def test_a_full_disk_while_an_entry_is_shrunk_again_keeps_the_old_entry(wrong_project,
                                                                         tmp_path):
    """A run replays an unshrunk entry that still fails and shrinks it to N=4, but no file may
    grow past 2 KiB (RLIMIT_FSIZE: a full disk): the new entry cannot be written, so the old
    one stays byte for byte (no stray inputs file either), the run says so, and replay still
    lists it as still failing, not minimal."""
    root, entry = _copy(wrong_project, tmp_path)
    unshrunk = _unshrunk_instead(entry)
    before = _files(root / "corpus")
    res = run_limited(["run", "kernels.py::wrong", "--budget", "60s", "--seed", "1", "--no-db",
                       "-j", "1", "--max-examples", "5"], root, timeout=180,
                      limits=((resource.RLIMIT_FSIZE, 2048),))
    out = " ".join(res.stdout.split())
    assert res.returncode == 1, res.stdout + res.stderr
    assert f"could not save {unshrunk} shrunk again" in out and "File too large" in out, out
    assert f"regression: corpus entry corpus/kernels_wrong/{unshrunk.name} still fails" in out
    assert "saved: " not in out.replace("NOT SAVED: ", "")
    assert _files(root / "corpus") == before
    res = run(["replay"], root)
    assert res.returncode == 1, res.stdout + res.stderr
    status, reason = rows(res.stdout)[unshrunk.name][2:]
    assert status == "still failing" and "not minimal" in reason


# -- host code that empties corpus/ during the run ----------------------------------------------

WIPER = textwrap.dedent('''
    import os
    import shutil

    import fuzzkern
    from fuzzkern import strategies as fks


    def _wipe(x):
        # host code that empties corpus/ whenever it runs (a clean-up fixture, a bad script)
        corpus = os.environ["FUZZKERN_TEST_CORPUS"]
        for name in os.listdir(corpus) if os.path.isdir(corpus) else ():
            shutil.rmtree(os.path.join(corpus, name), ignore_errors=True)
        return x * 1


    wiper = fuzzkern.Target(launcher=_wipe, reference=lambda x: x,
                            inputs=fks.inputs(x=fks.tensors(("N",), dtypes=["float32"])),
                            dims={"N": fks.sizes(max_value=8)})
''')


def test_host_code_that_empties_the_corpus_is_not_listed_as_saved(wrong_project, tmp_path):
    """``wrong`` finds its bug and saves it (then retires: --max-failures 1); ``wiper``'s host
    code empties corpus/ in its slice, which runs after (equal shares run in the targets'
    order). The summary re-checks every file it lists: the entry is NOT SAVED, with where it
    was, and no "saved:" line claims it."""
    root, _entry = _copy(wrong_project, tmp_path)
    shutil.rmtree(root / "corpus")
    (root / "wiper.py").write_text(WIPER)
    res = run_limited(["run", "kernels.py::wrong", "wiper.py::wiper", "--budget", "60s",
                       "--seed", "1", "--no-db", "-j", "1", "--max-failures", "1",
                       "--max-examples", "30", "--report", "r.json"], root,
                      timeout=180, extra_env={"FUZZKERN_TEST_CORPUS": str(root / "corpus")})
    out = " ".join(res.stdout.split())
    assert res.returncode == 1, res.stdout + res.stderr
    assert "kernels::wrong: kernel-bug" in out
    assert "NOT SAVED: corpus/kernels_wrong/" in out and "is gone now" in out, out
    assert "saved: " not in out.replace("NOT SAVED: ", ""), out
    assert corpus_entries(root / "corpus") == []
    (failure,) = json.loads((root / "r.json").read_text())["failures"]
    assert failure["corpus_path"] is None and "is gone now" in failure["not_saved"]


# -- a hidden .py inside corpus/, named by an entry ---------------------------------------------


def test_a_hidden_py_in_the_corpus_named_by_an_entry_never_runs(wrong_project, tmp_path):
    """A pull request adds ``corpus/kernels_wrong/.evil.py`` (a target whose import leaves a
    mark; ``evil.py`` copies beside it and in ``corpus/more/``) and entries naming it: as
    their target id (``.evil::wrong``), and as the source (``ref``) of a real target's entry.
    replay, ``replay --target .`` (the whole project, whose folder walk skips the corpus) and
    repro never import it; the first entry cannot replay and names its id, the
    second replays against the declared ``kernels.py``."""
    root, entry = _copy(wrong_project, tmp_path)
    mark = tmp_path / "imported"
    evil = entry.parent / ".evil.py"
    evil.write_text(f"open({str(mark)!r}, 'w').close()\n"
                    + (root / "kernels.py").read_text())
    for plain in (entry.parent / "evil.py", root / "corpus" / "more" / "evil.py"):
        plain.parent.mkdir(exist_ok=True)  # not hidden: a folder source skips a corpus too
        shutil.copy(evil, plain)
    copy = root / "corpus" / "copy" / entry.name
    copy.parent.mkdir()
    for suffix in (".json", ".safetensors"):
        shutil.copy(entry.with_suffix(suffix), copy.with_suffix(suffix))
    named = _rehashed(copy, lambda d: d["target"].update(id=".evil::wrong",
                                                         ref=str(evil) + "::wrong"))
    copy.parent.rmdir()
    _edit(entry, lambda d: d["target"].update(ref="corpus/kernels_wrong/.evil.py::wrong",
                                              ref_relative="corpus/kernels_wrong/.evil.py"))
    for args in (["replay"], ["replay", "--target", "."]):
        res = run(args, root)
        assert res.returncode == 1, res.stdout + res.stderr
        table = rows(res.stdout)
        assert table[entry.name][:3] == ["kernels::wrong", "kernel-bug", "still failing"]
        assert table[named.name][0] == ".evil::wrong", res.stdout
        assert "none of the declared target sources" in table[named.name][3]
    res = run(["repro", str(named), "-o", "r.py"], root)
    assert res.returncode == 2 and "none of the declared" in one_error_line(res.stderr)
    res = run(["repro", str(entry), "-o", "r.py"], root)
    assert res.returncode == 0, res.stdout + res.stderr
    assert ".evil" not in (root / "r.py").read_text()
    assert _script(root / "r.py", root).returncode == 1
    assert not mark.exists()


# -- a corpus in a temporary folder, its target file elsewhere ----------------------------------


def test_a_corpus_anywhere_replays_with_its_target_named(wrong_project, tmp_path):
    """The corpus copied to a temporary folder, the target file in the project, the commands
    run from a third folder: ``fuzzkern replay <folder> --target <file>`` and ``repro`` work,
    and the reproducer runs from anywhere."""
    root, entry = _copy(wrong_project, tmp_path)
    corpus = tmp_path / "scratch" / "c"
    shutil.copytree(root / "corpus", corpus)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    kernels = os.path.relpath(root / "kernels.py", elsewhere)
    copied = corpus / "kernels_wrong" / entry.name
    res = run(["replay", str(corpus), "--target", kernels], elsewhere)
    assert res.returncode == 1, res.stdout + res.stderr
    assert [r[2] for r in rows(res.stdout).values()] == ["still failing"], res.stdout
    res = run(["repro", str(copied), "--target", kernels, "-o", "r.py"], elsewhere)
    assert res.returncode == 0, res.stdout + res.stderr
    script = _script(elsewhere / "r.py", tmp_path)
    assert script.returncode == 1 and "the failure reproduces" in script.stdout, script.stdout


# -- a reproducer with the target's assume_gpu and bf16 inputs ----------------------------------

BF16 = textwrap.dedent('''
    import torch

    import fuzzkern
    from fuzzkern import strategies as fks


    def launch(x):
        # a library's host code asks the GPU (no CUDA here: only assume_gpu answers)
        sms = torch.cuda.get_device_properties(0).multi_processor_count
        y = x * (sms // 132)
        if x.dtype == torch.bfloat16 and x.shape[0] > 3:
            y[0] = 7.0  # BUG, in bf16 only
        return y


    bf16 = fuzzkern.Target(launcher=launch, reference=lambda x: x, assume_gpu="H200",
                           inputs=fks.inputs(x=fks.tensors(("N",), dtypes=["bfloat16"])),
                           dims={"N": fks.sizes(max_value=16)})
''')


@pytest.mark.skipif(__import__("torch").cuda.is_available(),
                    reason="a CUDA GPU answers for itself here")
def test_repro_keeps_the_declared_gpu_and_bf16(tmp_path):
    """A target whose host code asks torch.cuda for the SM count (``assume_gpu="H200"``) and
    whose bug shows only in bf16: the reproducer assumes the GPU as fuzzkern did, keeps the
    input bf16, runs, and says the failure reproduces (exit 1)."""
    (tmp_path / "bf.py").write_text(BF16)
    res = run(["run", "bf.py", "--budget", "60s", "--seed", "1", "--no-db", "-j", "1", "-q",
               "--max-examples", "40"], tmp_path)
    assert res.returncode == 1, res.stdout + res.stderr
    (entry,) = corpus_entries(tmp_path / "corpus")
    assert json.loads(entry.read_text())["case"]["inputs"]["x"]["tensor"]["dtype"] == "bfloat16"
    res = run(["repro", str(entry), "--target", "bf.py", "-o", "r.py"], tmp_path)
    assert res.returncode == 0, res.stdout + res.stderr
    script = _script(tmp_path / "r.py", tmp_path.parent)
    assert script.returncode == 1, script.stdout + script.stderr
    assert "the failure reproduces" in script.stdout and "bfloat16" in script.stdout


# -- fuzzkern corpus upgrade --------------------------------------------------------------------


def test_corpus_upgrade_moves_an_old_entry_and_names_a_malformed_one(wrong_project, tmp_path):
    """An entry of an older fuzzkern (the target's old id ``kernels::wrong`` from before ids
    carried the folder, code locations stored) and a truncated file: ``fuzzkern corpus
    upgrade`` rewrites the first under the target's id ``tests.kernels::wrong`` with the same
    case and input bytes (read back; the old files go), names the second in one line and
    leaves it, exit 2. The upgraded entry still fails; nothing is lost."""
    root, entry = _copy(wrong_project, tmp_path)
    (root / "tests").mkdir()
    (root / "kernels.py").rename(root / "tests" / "kernels.py")
    (root / "pyproject.toml").write_text('[tool.fuzzkern]\ntargets = ["tests/kernels.py"]\n')
    loc = {"module": "kernels", "qualname": "_wrong_above_3", "file": "kernels.py"}
    _edit(entry, lambda d: d["target"].update(launcher=loc, reference=loc,
                                              ref_relative="kernels.py::wrong"))
    old = json.loads(entry.read_text())
    stored = entry.with_suffix(".safetensors").read_bytes()
    broken = entry.parent / "0123456789abcdef.json"
    broken.write_text(entry.read_text()[:300])
    res = run(["corpus", "upgrade"], root)
    assert res.returncode == 2, res.stdout + res.stderr
    lines = res.stdout.splitlines()
    left = [ln for ln in lines if ln.startswith("left as it is")]
    assert len(left) == 1 and left[0].startswith(f"left as it is: {broken}: truncated JSON")
    assert any(ln.startswith(f"upgraded: {entry} -> ") for ln in lines), res.stdout
    assert lines[-1] == "fuzzkern corpus upgrade: 1 entry upgraded, 1 left as they are"
    assert not entry.exists() and broken.exists()
    (new,) = [p for p in corpus_entries(root / "corpus") if p != broken]
    d = json.loads(new.read_text())
    assert new.parent.name == "tests.kernels_wrong"
    assert d["target"]["id"] == "tests.kernels::wrong" and "launcher" not in d["target"]
    assert (d["case"], d["verdict"], d["inputs"]) == (old["case"], old["verdict"], old["inputs"])
    assert new.with_suffix(".safetensors").read_bytes() == stored
    res = run(["replay", str(new)], root)
    assert res.returncode == 1 and rows(res.stdout)[new.name][2] == "still failing"


# -- target files named after the standard library ----------------------------------------------

STDLIB_NAMED = textwrap.dedent('''
    import fuzzkern
    from fuzzkern import strategies as fks


    def _wrong(x):
        y = x * 1
        if x.shape[0] > 3:
            y[0] = 7.0
        return y


    wrong = fuzzkern.Target(launcher=_wrong, reference=lambda x: x,
                            inputs=fks.inputs(x=fks.tensors(("N",), dtypes=["float32"])),
                            dims={"N": fks.sizes(max_value=16)})
''')


def test_target_files_named_html_and_statistics_shadow_nothing(tmp_path):
    """``html.py`` and ``statistics.py`` target files (the run's --html report needs the
    standard library's html, torch its statistics): the run finds both bugs and writes the
    HTML report; the printed replay command (html's) and repro command (statistics') work,
    and so does the script."""
    for name in ("html", "statistics"):
        (tmp_path / f"{name}.py").write_text(STDLIB_NAMED)
    res = run(["run", "html.py", "statistics.py", "--budget", "60s", "--seed", "1", "--no-db",
               "-j", "1", "--max-examples", "30", "--html", "r.html"], tmp_path)
    assert res.returncode == 1, res.stdout + res.stderr
    assert "Traceback" not in res.stderr and "<html" in (tmp_path / "r.html").read_text()
    printed = {name: [ln.split("to reproduce this failure: fuzzkern ", 1)[1]
                      for ln in res.stdout.splitlines()
                      if f"{name}_wrong" in ln and "to reproduce this failure: " in ln]
               for name in ("html", "statistics")}
    assert all(len(commands) == 1 for commands in printed.values()), res.stdout
    got = run(printed["html"][0].split(), tmp_path)
    assert got.returncode == 1 and "still failing" in got.stdout, got.stdout + got.stderr
    got = run(printed["statistics"][0].replace("replay", "repro", 1).split() + ["-o", "r.py"],
              tmp_path)
    assert got.returncode == 0, got.stdout + got.stderr
    script = _script(tmp_path / "r.py", tmp_path)
    assert script.returncode == 1 and "the failure reproduces" in script.stdout



def test_target_files_named_copy_and_code_break_no_worker(tmp_path):
    """``copy.py`` and ``code.py`` in the folder fuzzkern runs from: the workers' fork server
    runs as ``python -c``, which put that folder first on its sys.path, so torch's ``import
    copy`` got the target file in the server's preload and every case was a ``crash`` (saved
    to the corpus). Both bugs are found as what they are."""
    for name in ("copy", "code"):
        (tmp_path / f"{name}.py").write_text(STDLIB_NAMED)
    res = run(["run", "copy.py", "code.py", "--budget", "60s", "--seed", "1", "--no-db",
               "-j", "1", "-q", "--max-examples", "30"], tmp_path)
    assert res.returncode == 1, res.stdout + res.stderr
    assert "Traceback" not in res.stderr and "crash" not in res.stdout, res.stdout + res.stderr
    for name in ("copy", "code"):
        assert f"{name}::wrong: kernel-bug" in res.stdout, res.stdout

# -- unshrunk entries of one failure, written by several processes ------------------------------

SAVE = textwrap.dedent("""
    import sys
    from tests.unit import _corpus_writers as w
    from fuzzkern.corpus import store
    from fuzzkern.judge.outcome import ModeResult, Outcome
    corpus, seed, error, shrunk = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    outcome = Outcome("error", error, {"interpret": ModeResult("interpret", "error",
                                                               error=error)})
    store.save(corpus, w.TARGET_ID, w.REF, w.case_for(seed, n=64), outcome,
               modes=("interpret",), shrunk=shrunk == "1")
""")


def _save(corpus: Path, seed: int, error: str, shrunk: bool) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", SAVE, str(corpus), str(seed), error,
                             "1" if shrunk else "0"], cwd=ROOT)


def _errors(corpus: Path) -> list[tuple[str, bool]]:
    return sorted((d["message"], d["shrunk"]) for d in
                  (json.loads(p.read_text()) for p in corpus_entries(corpus)))


def test_a_shrunk_entry_replaces_only_its_own_failures_unshrunk_entries(tmp_path):
    """Four processes save unshrunk cases of one failure (ValueError raised at one place)
    and a fifth an unshrunk case of another failure of the same verdict (KeyError): five
    entries, none yields. A shrunk save of the first failure replaces its four unshrunk
    entries and never the other failure's."""
    corpus = tmp_path / "corpus"
    procs = [_save(corpus, seed, "ValueError: a", False) for seed in (1, 2, 3, 4)]
    procs.append(_save(corpus, 5, "KeyError: b", False))
    assert [p.wait(180) for p in procs] == [0] * 5
    assert _errors(corpus) == [("KeyError: b", False)] + [("ValueError: a", False)] * 4
    assert _save(corpus, 6, "ValueError: a", True).wait(180) == 0
    assert _errors(corpus) == [("KeyError: b", False), ("ValueError: a", True)]


# -- every form of a target's name fuzzkern prints is accepted back -----------------------------


def test_every_printed_form_of_a_target_is_accepted_back(wrong_project, tmp_path):
    """The target as fuzzkern prints it: its id (``kernels::wrong``, the summary's), the
    source of the printed commands (``kernels.py``), ``kernels.py::wrong`` and the module:
    each works as ``--target`` (the id for replay and the module for repro here; the files
    everywhere else); a command a run printed in a subfolder works there."""
    root, entry = _copy(wrong_project, tmp_path)
    res = run(["replay", str(entry), "--target", "kernels::wrong"], root)
    assert res.returncode == 1 and "still failing" in res.stdout, res.stdout
    res = run(["repro", str(entry), "--target", "kernels", "-o", "-"], root)
    assert res.returncode == 0 and "ENTRY" in res.stdout, res.stdout + res.stderr
    sub = root / "sub"
    sub.mkdir()
    res = run(["run", "../kernels.py::wrong", "--corpus", "../corpus", "--budget", "60s",
               "--seed", "1", "--no-db", "-j", "1", "--max-examples", "5"], sub)
    assert res.returncode == 1, res.stdout + res.stderr
    (command,) = [ln.split("to reproduce this failure: fuzzkern ", 1)[1]
                  for ln in res.stdout.splitlines() if "to reproduce this failure: " in ln]
    got = run(command.split(), sub)
    assert got.returncode == 1 and "still failing" in got.stdout, (command, got.stdout)


# -- a second bug of one verdict family, its shrinking cut short --------------------------------

TWO_BUGS = textwrap.dedent('''
    import os

    import fuzzkern
    from fuzzkern import strategies as fks


    def launch(x):
        a, b = x.clone(), x * 2
        n = x.shape[0]
        if 3 < n <= 5:
            a[0] += 1  # bug A: output 0
        if n > 5 and os.environ.get("FUZZKERN_TEST_BUG_B"):
            b[0] += 1  # bug B: output 1, only once the variable is set (the second run)
        return a, b


    two = fuzzkern.Target(launcher=launch, reference=lambda x: (x.clone(), x * 2),
                          dims={"N": fks.sizes(max_value=12)},
                          inputs=fks.inputs(x=fks.tensors(("N",), dtypes=["float32"])))
''')


def test_a_second_bug_of_one_family_gets_its_own_entry(tmp_path):
    """Run 1 saves bug A (output 0) shrunk; run 2 finds bug B (output 1, one verdict family
    with A) with its shrinking cut short: B is saved in a file of its own, the "saved:" line
    names that file (never A's), and both entries replay as still failing."""
    (tmp_path / "two.py").write_text(TWO_BUGS)
    args = ["run", "two.py", "--seed", "1", "--no-db", "-j", "1", "--max-examples", "80",
            "--budget", "120s"]
    res = run(args, tmp_path)
    assert res.returncode == 1, res.stdout + res.stderr
    (a,) = corpus_entries(tmp_path / "corpus")
    assert 3 < json.loads(a.read_text())["case"]["dims"]["N"] <= 5
    res = run(args + ["--shrink-time", "0.01"], tmp_path,
              env={**os.environ, "COLUMNS": "200", "FUZZKERN_TEST_BUG_B": "1"})
    assert res.returncode == 1, res.stdout + res.stderr
    saved = [tmp_path / ln.removeprefix("saved: ") for ln in res.stdout.splitlines()
             if ln.startswith("saved: ")]
    entries = corpus_entries(tmp_path / "corpus")
    assert a in entries and len(entries) == 2, res.stdout
    (b,) = [e for e in entries if e != a]
    assert saved == [b], res.stdout
    assert json.loads(b.read_text())["case"]["dims"]["N"] > 5
    res = run(["replay", "--target", "two.py"], tmp_path,
              env={**os.environ, "COLUMNS": "200", "FUZZKERN_TEST_BUG_B": "1"})
    assert res.returncode == 1, res.stdout + res.stderr
    assert [r[2] for r in rows(res.stdout).values()] == ["still failing"] * 2, res.stdout


# -- a passing entry planted at the id of a future finding --------------------------------------


def test_a_passing_entry_planted_at_a_findings_id_does_not_swallow_it(wrong_project, tmp_path):
    """An entry with the very case (so the very id) the next run's finding will have, but
    input bytes that pass (every element 7.0, checksum updated): replay says now passing;
    the run that finds the bug again replaces it (an entry of an id is kept only when it
    holds the same input bytes) and the entry fails again."""
    import hashlib

    import safetensors.torch

    root, entry = _copy(wrong_project, tmp_path)
    stored = entry.with_suffix(".safetensors")
    tensors = safetensors.torch.load_file(str(stored))
    tensors["x"].fill_(7.0)
    safetensors.torch.save_file(tensors, str(stored))
    digest = hashlib.sha256(tensors["x"].numpy().tobytes()).hexdigest()
    _edit(entry, lambda d: d["inputs"]["x"].update(sha256=digest))
    res = run(["replay"], root)
    assert res.returncode == 0 and rows(res.stdout)[entry.name][2] == "now passing", res.stdout
    # the case count binds, not the budget (as the other runs of this file: a loaded machine
    # finds and shrinks the same failure)
    res = run(["run", "kernels.py::wrong", "--budget", "150s", "--seed", "1", "--no-db", "-j",
               "1", "--max-examples", "60"], root, timeout=300)
    assert res.returncode == 1, res.stdout + res.stderr
    assert f"saved: corpus/kernels_wrong/{entry.name}" in res.stdout, res.stdout
    assert json.loads(entry.read_text())["inputs"]["x"]["sha256"] != digest
    res = run(["replay"], root)
    assert res.returncode == 1 and rows(res.stdout)[entry.name][2] == "still failing"


# -- a failed import says what is missing -------------------------------------------------------


def test_a_failed_import_says_what_to_install_or_which_folder_is_missing(tmp_path, monkeypatch):
    """A target file importing its project's ``src/mypkg`` (not installed, no pythonpath), or
    a package nobody installed: one line naming the folder and the two fixes, or what to
    install."""
    from fuzzkern.errors import TargetError
    from fuzzkern.target import loader

    monkeypatch.setattr(sys, "path", list(sys.path))
    (tmp_path / "src" / "mypkg").mkdir(parents=True)
    (tmp_path / "src" / "mypkg" / "__init__.py").write_text("")
    (tmp_path / "tests").mkdir()
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "mypkg"\n')
    for name, hint in (("mypkg", f"hint: 'mypkg' is in {tmp_path / 'src'}: `pip install -e "
                                 f"{tmp_path}` or add pythonpath = [\"src\"]"),
                       ("nopkg_at_all", "hint: install the package that provides "
                                        "'nopkg_at_all', or put the folder holding it on "
                                        "PYTHONPATH")):
        target = tmp_path / "tests" / f"test_{name}.py"
        target.write_text(f"import {name}.kern\n")
        with pytest.raises(TargetError) as e:
            loader.load(str(target))
        assert len(str(e.value).splitlines()) == 1 and hint in str(e.value), str(e.value)


def test_a_folder_or_file_that_cannot_be_read_is_one_refused_item(tmp_path, monkeypatch):
    """A corpus folder fuzzkern may not read (chmod 000 for another user; `fuzzkern replay /`
    met /proc/1/cwd) and an item whose type cannot be read: each one refused item, never a
    traceback (it was PermissionError out of `fuzzkern replay`)."""
    import os

    from fuzzkern.corpus import store

    corpus = tmp_path / "corpus"
    locked = corpus / store.target_dirname("kernels::wrong")
    locked.mkdir(parents=True)
    (corpus / "open").mkdir()
    (corpus / "open" / "odd.json").write_text("{}")
    real_scandir = os.scandir

    class Unreadable:  # an item whose type cannot be read
        def __init__(self, entry):
            self.name, self.path = entry.name, entry.path

        def is_symlink(self):
            raise PermissionError(13, "Permission denied")

        def is_dir(self, **kw):  # (what os.walk asks)
            return False

    class Listing:  # os.scandir's iterator, one item of it unreadable
        def __init__(self, path):
            self.it = real_scandir(path)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.it.close()

        def __iter__(self):
            return self

        def __next__(self):
            e = next(self.it)
            return Unreadable(e) if e.name == "odd.json" else e

        def close(self):
            self.it.close()

    def scandir(path):
        if str(path) == str(locked):
            raise PermissionError(13, "Permission denied")
        return Listing(path)

    monkeypatch.setattr(store.os, "scandir", scandir)
    found = {os.path.basename(p): str(e) for p, e in store.scan(corpus)}
    assert "cannot read it: Permission denied" in found["odd.json"], found
    (path, error), = store.scan(corpus, "kernels::wrong")  # what `fuzzkern run` reads
    assert path == str(locked) and "cannot read the folder: Permission denied" in str(error)
