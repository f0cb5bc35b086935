"""Bad input is refused up front with one line and exit 2; nothing ends green by accident;
output built from user strings never breaks."""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path

import pytest

from tests.adversarial.conftest import KERNELS, corpus_entries, one_error_line, run

HEAD = "import fuzzkern\nfrom fuzzkern import strategies as fks\n"
TARGET = ("fuzzkern.Target(launcher=lambda x: x * 1, reference=lambda x: x, "
          "inputs=fks.inputs(x=fks.tensors(('N',), dtypes=['float32'])), "
          "dims={{'N': fks.sizes(max_value=8)}}{extra})")


@pytest.fixture
def project(tmp_path) -> Path:
    shutil.copy(KERNELS, tmp_path / "kernels.py")
    return tmp_path


@pytest.mark.parametrize("source,expect", [
    (HEAD + "import sys\nsys.exit(0)\n", "sys.exit(0)"),
    (HEAD + "t = " + TARGET.format(extra=", tolerance=fuzzkern.Tolerance(rtol=float('nan'))"),
     "finite"),
    (HEAD + "a = " + TARGET.format(extra=", name='same'") + "\nb = "
     + TARGET.format(extra=", name='same'"), "two targets are named 'same'"),
])
def test_bad_target_files(tmp_path, source, expect):
    """Item 6: sys.exit(0) at import, Tolerance(rtol=nan), duplicate names: exit 2, one line."""
    (tmp_path / "t.py").write_text(source)
    res = run(["run", "t.py", "--budget", "5s", "--no-db", "-j", "1"], tmp_path)
    assert res.returncode == 2, res.stdout + res.stderr
    assert expect in one_error_line(res.stderr)


@pytest.mark.parametrize("args,expect", [
    (["--max-examples", "0"], "--max-examples"),
    (["--timeout", "nan"], "--timeout"),
    (["--timeout", "inf"], "--timeout"),
    (["--budget", "9" * 400 + "h"], "--budget"),
    (["--db", "kernels.py"], "is a file"),
    (["--report", "."], "is a folder"),
    (["--heartbeat", "nan"], "--heartbeat"),  # once: silently no heartbeat
    (["--heartbeat", "1e-300"], "--heartbeat"),  # once: a thread printing without a pause
    (["--corpus", ""], "--corpus: an empty folder name"),  # once: nothing saved, no word
    (["--corpus", "kernels.py"], "is a file"),  # once: NOT SAVED after the whole budget
])
def test_bad_options_up_front(project, args, expect):
    """Items 6 and 7: refused before any case runs, in one line."""
    res = run(["run", "kernels.py::wrong", "--budget", "5s", "-j", "1", *args], project)
    assert res.returncode == 2, res.stdout + res.stderr
    assert expect in one_error_line(res.stderr)
    assert not (project / "corpus").exists()


def test_reports_into_a_missing_folder_and_strict_json(project):
    """Item 7: --report/--html into a folder that does not exist yet: created up front (as
    pytest's --junitxml does); the JSON report is strict JSON."""
    res = run(["run", "kernels.py::wrong", "--budget", "150s", "--seed", "1", "--no-db", "-j",
               "1", "-q", "--report", "out/a/r.json", "--html", "out/b/r.html",
               "--max-examples", "20"], project, timeout=300)
    assert res.returncode == 1, res.stdout + res.stderr

    def no_constants(name):
        raise AssertionError(f"non-JSON constant {name}")

    report = json.loads((project / "out/a/r.json").read_text(), parse_constant=no_constants)
    assert len(report["failures"]) == 1
    assert (project / "out/b/r.html").stat().st_size > 0


def test_markup_in_names_and_messages(tmp_path):
    """Item 5: rich markup in a target name and an error message is shown as text in run,
    list and replay."""
    (tmp_path / "m.py").write_text(HEAD + textwrap.dedent("""
        def launch(x):
            if x.shape[0] > 2:
                raise RuntimeError("cannot open [/dev/shm/x] [bold]")
            return x * 1
        t = fuzzkern.Target(launcher=launch, reference=lambda x: x,
                            inputs=fks.inputs(x=fks.tensors(("N",), dtypes=["float32"])),
                            dims={"N": fks.sizes(max_value=8)}, name="evil[/x]")
    """))
    res = run(["run", "m.py", "--budget", "150s", "--seed", "1", "--no-db", "-j", "1",
               "--max-examples", "20"], tmp_path, timeout=300)
    assert res.returncode == 1, res.stdout + res.stderr
    assert "evil[/x]" in res.stdout and "fuzzkern summary" in res.stdout
    assert "[/dev/shm/x]" in res.stdout and "Traceback" not in res.stderr
    res = run(["list", "m.py"], tmp_path)
    assert res.returncode == 0 and "evil[/x]" in res.stdout, res.stdout + res.stderr
    res = run(["replay", "--target", "m.py"], tmp_path)
    assert res.returncode == 1 and "evil[/x]" in res.stdout, res.stdout + res.stderr


def test_corpus_growth(project):
    """Item 8: a replayed entry found again is listed once; stale .tmp files of dead writers
    are swept when the corpus is opened; kernel output is captured, capped, reported."""
    # every case fails: 20 of them, not the whole budget
    args = ["run", "kernels.py::wrong", "--budget", "150s", "--seed", "1", "--no-db", "-j", "1",
            "-q", "--report", "r.json", "--max-examples", "20"]
    assert run(args, project, timeout=300).returncode == 1
    res = run(args, project, timeout=300)
    assert res.returncode == 1
    report = json.loads((project / "r.json").read_text())
    assert len(report["failures"]) == 1, report["failures"]
    entries = corpus_entries(project / "corpus")
    assert len(entries) == 1
    stale = entries[0].parent / f".{entries[0].name}.999999999.abcdefgh.tmp"
    stale.write_bytes(b"half an entry")
    assert run(["replay", "--target", "kernels.py"], project).returncode == 1
    assert not stale.exists()
    res = run(["run", "kernels.py::chatty", "--budget", "150s", "--seed", "1", "--no-db", "-j",
               "1", "-q", "--max-examples", "20"], project, timeout=300)
    assert res.returncode == 1
    assert "output of the case (" in res.stdout and "KERNEL-STDOUT" in res.stdout
    assert len(res.stdout) + len(res.stderr) < 50_000


def test_unshrunk_duplicates_from_several_processes(tmp_path):
    """Item 8: several processes saving the same failure, unshrunk, with different cases:
    none is lost (each case its own content id), and a shrunk one replaces them all."""
    import subprocess
    import sys

    code = textwrap.dedent("""
        import sys
        from tests.unit import _corpus_writers as w
        from fuzzkern.corpus import store as corpus
        n = int(sys.argv[2])
        corpus.save(sys.argv[1], w.TARGET_ID, w.REF, w.case_for(n, n=n), w.outcome(),
                    modes=("interpret",), shrunk=sys.argv[3] == "1")
    """)
    root = str(Path(__file__).parents[2])
    corpus_dir = tmp_path / "corpus"
    procs = [subprocess.Popen([sys.executable, "-c", code, str(corpus_dir), str(n), "0"],
                              cwd=root) for n in (4000, 3000, 5000, 2000)]
    assert all(p.wait(120) == 0 for p in procs)
    entries = corpus_entries(corpus_dir)
    assert 1 <= len(entries) <= 4
    assert {json.loads(e.read_text())["case"]["dims"]["N"] for e in entries} <= {
        4000, 3000, 5000, 2000}
    subprocess.run([sys.executable, "-c", code, str(corpus_dir), "100", "1"], cwd=root,
                   check=True, timeout=120)
    entries = corpus_entries(corpus_dir)
    assert len(entries) == 1 and json.loads(entries[0].read_text())["shrunk"] is True
