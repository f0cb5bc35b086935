"""Hostile surroundings (issue 42): environment variables, full disks, killed workers. Each
attack ends in one clear line or a run that goes on, within memory and time limits."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from tests.adversarial.conftest import (
    KERNELS,
    env,
    fuzzkern_cmd,
    one_error_line,
    run_limited,
    start,
    wait_for,
)

#: a short run: a case count, not seconds, decides what it does (the budget is for a busy CI)
RUN = ["--budget", "120s", "--seed", "1", "--no-db", "-j", "1", "-q"]

BAD_VARIABLES = [
    ("FUZZKERN_AHEAD", "many", "FUZZKERN_AHEAD"),
    ("FUZZKERN_AHEAD", "-3", "FUZZKERN_AHEAD"),
    ("FUZZKERN_AHEAD", "9" * 30, "at most"),
    ("FUZZKERN_CORPUS_LIMITS", "speed=3", "unknown limit 'speed'"),
    ("FUZZKERN_CORPUS_LIMITS", "depth=1e3", "depth must be"),
    ("FUZZKERN_CORPUS_LIMITS", "depth=2KiB", "depth must be a positive whole number (of levels)"),
    ("FUZZKERN_GPUS", "two", "FUZZKERN_GPUS"),
    ("FUZZKERN_PROFILE", "fastest", "profile='fastest'"),
    ("FUZZKERN_AHEAD", "4\n--evil", "one line"),
]


@pytest.fixture
def project(tmp_path) -> Path:
    shutil.copy(KERNELS, tmp_path / "kernels.py")
    return tmp_path


@pytest.mark.parametrize("command", ["run", "replay"])
@pytest.mark.parametrize("name,value,expect", BAD_VARIABLES)
def test_a_bad_variable_is_one_line_and_exit_2(project, command, name, value, expect):
    """A bad FUZZKERN_* value: one line naming it, exit 2, nothing run or written."""
    args = (["run", "kernels.py::wrong", *RUN, "--max-examples", "3"] if command == "run"
            else ["replay"])
    res = run_limited(args, project, timeout=120, extra_env={name: value})
    assert res.returncode == 2, res.stdout + res.stderr
    assert expect in one_error_line(res.stderr)
    assert not (project / "corpus").exists()


@pytest.mark.parametrize("name,value,expect", BAD_VARIABLES[::3])
def test_a_bad_variable_is_a_usage_error_in_pytest(pytester, monkeypatch, name, value, expect):
    """The pytest plugin: a usage error naming the variable, no traceback, no INTERNALERROR."""
    shutil.copy(KERNELS, pytester.path / "test_k.py")
    monkeypatch.setenv(name, value)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "test_k.py")
    text = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.USAGE_ERROR, text
    assert expect in text
    assert "Traceback" not in text and "INTERNALERROR" not in text


def _signal_the_worker(project, tmp_path, signum):
    """Run tells_its_pid for 60 cases, send ``signum`` to its first worker after five cases;
    the run's returncode, output and the pids its cases ran in."""
    mark = tmp_path / "pids"
    proc = start(["run", "kernels.py::tells_its_pid", *RUN, "--max-examples", "60"], project,
                 {"FUZZKERN_TEST_MARK": str(mark)})
    try:
        wait_for(lambda: mark.exists() and len(mark.read_text().split()) >= 5, 120,
                 "five cases", proc)
        os.kill(int(mark.read_text().split()[0]), signum)
        out, err = proc.communicate(timeout=240)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return proc.returncode, out, err, mark.read_text().split()


def test_a_worker_killed_from_outside_is_replaced_and_the_run_goes_on(project, tmp_path):
    """One SIGKILL to the worker mid-run (as an OOM killer or a CI agent sends): the worker is
    replaced, its case runs again, the run does every case it was asked for (no early stop),
    finds nothing false and exits 0."""
    returncode, out, err, pids = _signal_the_worker(project, tmp_path, signal.SIGKILL)
    assert returncode == 0, out + err
    assert len(set(pids)) >= 2  # a new worker took over
    text = " ".join(out.split())
    assert "fuzzkern-limit" not in text and "crash" not in text, text
    assert "│ kernels::tells_its_pid │ ok │ 60 │ " in text, text  # every case asked for ran


def test_a_worker_stopped_from_outside_is_resumed(project, tmp_path):
    """One SIGSTOP to the worker mid-run (a person, a CI agent): it is sent SIGCONT and its
    case goes on in the same worker. It once waited, unnoticed, for its 60 s timeout (a
    ``hang``, the worker replaced) or for the budget's end (the run's cases lost)."""
    returncode, out, err, pids = _signal_the_worker(project, tmp_path, signal.SIGSTOP)
    assert returncode == 0, out + err
    assert len(set(pids)) == 1  # the one worker did every case
    text = " ".join(out.split())
    assert "hang" not in text and "slow" not in text, text
    assert "│ kernels::tells_its_pid │ ok │ 60 │ " in text, text

@pytest.mark.parametrize("target,refused", [("wrong", "--html"), ("chatty", "--report")])
def test_a_full_disk_while_reports_are_written(tmp_path, target, refused):
    """A file size limit (RLIMIT_FSIZE, as a full disk: writes fail) between the sizes of the
    two reports: the one past it is one error line, the other is still written (the HTML
    after a failed JSON too), no ``*.tmp<pid>`` file is left, the finding is in the corpus
    and the run exits 1."""
    import resource

    sizes = {}
    for name in ("measure", "limited"):
        project = tmp_path / name
        project.mkdir()
        shutil.copy(KERNELS, project / "kernels.py")
        args = ["run", f"kernels.py::{target}", *RUN, "--max-examples", "20",
                "--report", "r.json", "--html", "r.html"]
        if name == "measure":
            res = run_limited(args, project, timeout=180)
            assert res.returncode == 1, res.stdout + res.stderr
            sizes = {"--report": (project / "r.json").stat().st_size,
                     "--html": (project / "r.html").stat().st_size,
                     "corpus": max(p.stat().st_size for p in (project / "corpus").rglob("*"))}
            kept = max(v for k, v in sizes.items() if k != refused)
            assert sizes[refused] > kept + 1000, sizes  # room for the limit between them
            limit = (sizes[refused] + kept) // 2
            continue
        res = run_limited(args, project, timeout=180,
                          limits=((resource.RLIMIT_FSIZE, limit),))
    assert res.returncode == 1, res.stdout + res.stderr
    assert "Traceback" not in res.stderr
    errors = [ln for ln in res.stderr.splitlines() if ln.startswith("fuzzkern: error:")]
    assert len(errors) == 1 and errors[0].startswith(f"fuzzkern: error: {refused}: cannot "
                                                     "write"), res.stderr
    written = "r.html" if refused == "--report" else "r.json"
    assert (project / written).stat().st_size > 1000  # still written, whole
    assert not (project / ("r.json" if refused == "--report" else "r.html")).exists()
    assert list(project.glob("*.tmp*")) == []
    assert len(list((project / "corpus").rglob("*.json"))) == 1


def test_reports_named_as_a_fifo_or_a_link_are_written_through(project, tmp_path):
    """``--report`` a FIFO (``/dev/stdout`` piped, ``/dev/null``: not regular files) and
    ``--html`` a symbolic link: each written through, never replaced by a rename (as root,
    a rename over /dev/null makes it a regular file for the whole machine). A FIFO nobody
    reads is one error line, not a hang; ``repro -o`` alike."""
    import stat
    import threading

    fifo, link, real = project / "r.fifo", project / "r.html", tmp_path / "elsewhere.html"
    os.mkfifo(fifo)
    link.symlink_to(real)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    res = run_limited(["run", "kernels.py::wrong", *RUN, "--max-examples", "20", "--report",
                       str(fifo), "--html", str(link)], project, timeout=180)
    reader.join(30)
    assert res.returncode == 1, res.stdout + res.stderr
    assert "fuzzkern: error" not in res.stderr, res.stderr
    assert stat.S_ISFIFO(fifo.lstat().st_mode) and link.is_symlink()
    assert got and b'"failures"' in got[0]
    assert real.read_text().startswith("<!DOCTYPE html>")
    assert list(project.glob("*.tmp*")) == []
    # nobody reads the FIFO now: one line and exit 2 (the run itself found the bug: exit 1)
    entry = next((project / "corpus").rglob("*.json"))
    res = run_limited(["repro", str(entry), "--target", "kernels.py", "-o", str(fifo)],
                      project, timeout=120)
    assert res.returncode == 2, res.stdout + res.stderr
    assert "cannot write the script" in one_error_line(res.stderr)
    assert stat.S_ISFIFO(fifo.lstat().st_mode)


def test_a_removed_current_folder_is_one_line(tmp_path):
    """The folder a shell stands in is removed (a CI workspace cleaned under it): `fuzzkern
    run` says so in one line, exit 2 (Hypothesis read the folder on import: a traceback)."""
    gone = tmp_path / "gone"
    gone.mkdir()
    script = f'cd "{gone}" && rmdir "{gone}" && exec "$@"'
    res = subprocess.run(["sh", "-c", script, "sh", *fuzzkern_cmd(), "run", "x.py::y"],
                         capture_output=True, text=True, timeout=120, env=env())
    assert res.returncode == 2, res.stdout + res.stderr
    assert "current folder no longer exists" in one_error_line(res.stderr)


@pytest.fixture
def read_only_folder(tmp_path):
    """A folder fuzzkern cannot write in: a read-only tmpfs as root (permission bits do not
    stop root), mode 555 otherwise."""
    folder = tmp_path / "ro"
    folder.mkdir()
    if os.geteuid() != 0:
        folder.chmod(0o555)
        yield folder
        folder.chmod(0o755)
        return
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(folder)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"root here cannot mount a read-only tmpfs: {mounted.stderr.strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", str(folder)], check=True)


def test_a_read_only_corpus_loses_no_finding(project, read_only_folder):
    """A corpus on a read-only file system (a CI cache mounted read-only): the run fuzzes on,
    prints the finding whole with NOT SAVED and why, and exits 1 (a finding), not a
    traceback."""
    res = run_limited(["run", "kernels.py::wrong", *RUN, "--max-failures", "1",
                       "--corpus", str(read_only_folder)], project, timeout=300)
    assert res.returncode == 1, res.stdout + res.stderr
    assert "NOT SAVED: could not write it to" in res.stdout, res.stdout
    assert "Traceback" not in res.stdout + res.stderr
    assert "kernel-bug" in res.stdout and "to repeat: fuzzkern run kernels.py::wrong" in res.stdout
    assert os.listdir(read_only_folder) == []
