"""`fuzzkern run` in logs and CI: a seed for every run, repeat commands with relative paths,
a heartbeat at a steady interval, a summary that never wraps, module targets found in the
current folder as `python -m` finds them."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap

HERE = os.path.dirname(os.path.abspath(__file__))
MISBEHAVING = os.path.join(HERE, "targets", "misbehaving.py")


def _fuzzkern(tmp_path, args, env=None, timeout=240):
    """The CLI as the `fuzzkern` console script runs it: from a script in another folder, so
    sys.path[0] is that folder and not the current one (unlike `python -m fuzzkern`)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    script = bin_dir / "fuzzkern"
    script.write_text("import sys\nfrom fuzzkern.cli import main\n\n"
                      "if __name__ == '__main__':\n    sys.exit(main())\n")
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    return subprocess.run([sys.executable, str(script), *args], cwd=work, capture_output=True,
                          text=True, timeout=timeout, env={**os.environ, **(env or {})})


def test_a_module_target_in_the_current_folder_is_found(tmp_path):
    pkg = tmp_path / "work" / "mypkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "ops.py").write_text(textwrap.dedent('''
        import fuzzkern
        from fuzzkern import strategies as fks
        from fuzzkern.targets.kernels import vector_add

        add = fuzzkern.Target(
            launcher=vector_add, reference=lambda x, y: x + y,
            inputs=fks.inputs(x=fks.tensors(("N",)), y=fks.tensors(("N",), dtype_of="x"),
                              BLOCK=fks.sizes(min_value=64, max_value=64)),
            dims={"N": fks.sizes(max_value=100)})
    '''))
    res = _fuzzkern(tmp_path, ["run", "mypkg.ops:add", "--budget", "30s", "--no-db",
                               "--max-examples", "5"])
    assert res.returncode == 0, res.stdout + res.stderr
    assert re.search(r"ok\s+mypkg\.ops::add: \d+ cases", res.stdout), res.stdout


def test_every_run_prints_its_seed_and_failures_a_relative_repeat_command(tmp_path):
    (tmp_path / "work").mkdir()
    shutil.copy(MISBEHAVING, tmp_path / "work" / "misbehaving.py")
    # every case fails the same way: the run would go on for its whole budget; 20 cases do
    res = _fuzzkern(tmp_path, ["run", "misbehaving.py::raises", "--budget", "60s", "--no-db",
                               "--no-corpus", "-j", "1", "--max-examples", "20"],
                    env={"COLUMNS": "70"})
    assert res.returncode == 1, res.stdout + res.stderr
    seed = re.search(r"seed (\d+)\n", res.stdout)
    assert seed, res.stdout
    # the failure's repeat command: the seed, the cases the run drew, no database, and a budget
    # that the case count reaches first
    assert (f"to repeat: fuzzkern run misbehaving.py::raises --seed {seed.group(1)} "
            "--max-examples 20 --no-db --budget 600s" in res.stdout.splitlines()), res.stdout
    assert re.search(rf"^to repeat: fuzzkern run misbehaving.py::raises --no-corpus --seed "
                     rf"{seed.group(1)} --max-examples 20 --no-db --budget \d+s$", res.stdout,
                     re.MULTILINE), res.stdout
    assert "fuzzkern summary (" in res.stdout and f"seed {seed.group(1)})" in res.stdout
    seeded = _fuzzkern(tmp_path, ["run", "misbehaving.py::raises", "--budget", "60s", "--no-db",
                                  "--no-corpus", "-j", "1", "--seed", "3", "--report", "r.json",
                                  "--max-examples", "20"])
    report = json.loads((tmp_path / "work" / "r.json").read_text())
    assert (report["seed"], report["seeded"]) == (3, True)
    assert report["repeat"].startswith("fuzzkern run misbehaving.py::raises --no-corpus --seed 3 "
                                       "--max-examples 20 --no-db --budget ")
    assert ", seed 3\n" in seeded.stdout
    assert ("to repeat: fuzzkern run misbehaving.py::raises --seed 3 --max-examples 20 --no-db "
            "--budget 600s" in seeded.stdout.splitlines())


def test_logs_get_a_heartbeat_line_at_a_steady_interval(tmp_path):
    # a narrow log ($COLUMNS): the summary drops columns, the plain lines never wrap
    res = _fuzzkern(tmp_path, ["run", "fuzzkern.targets.builtin:vector_add",
                               "fuzzkern.targets.builtin:axpy", "--budget", "9s", "--no-db",
                               "--no-corpus", "-j", "1", "--heartbeat", "2"],
                    env={"COLUMNS": "60"})
    assert res.returncode == 0, res.stdout + res.stderr
    beats = [ln for ln in res.stdout.splitlines() if ln.startswith("[")]
    assert len(beats) >= 3, res.stdout
    pattern = re.compile(r"\[(\d+):(\d\d) of 0:09, (\d+):(\d\d) left\] (\d)/2 targets done, "
                         r"(\d+) cases, (\d+) new failures?(; running: builtin\.\w+ \(\d+ cases\)"
                         r"(, builtin\.\w+ \(\d+ cases\))*)?$")
    elapsed = []
    for line in beats:
        m = pattern.match(line)
        assert m, line
        elapsed.append(int(m.group(1)) * 60 + int(m.group(2)))
    # every 2 s (whole seconds shown; a loaded machine may stretch one a little)
    gaps = [b - a for a, b in zip(elapsed, elapsed[1:], strict=False)]
    assert all(1 <= g <= 4 for g in gaps), (elapsed, res.stdout)
    assert any("running: builtin." in ln for ln in beats)
    quiet = _fuzzkern(tmp_path, ["run", "fuzzkern.targets.builtin:axpy", "--budget", "3s",
                                 "--no-db", "--no-corpus", "--heartbeat", "0"])
    assert not [ln for ln in quiet.stdout.splitlines() if ln.startswith("[")]


def test_the_summary_never_wraps_a_row_on_a_narrow_screen(tmp_path):
    from types import SimpleNamespace

    from rich.console import Console

    from fuzzkern.cli import summary_table
    from fuzzkern.search.engine import TargetResult

    r = TargetResult("builtin.matmul_persistent", "fuzzkern.targets.builtin:matmul_persistent")
    r.cases, r.seconds = 1234, 10.0
    r.devices = {"NVIDIA H200 (CUDA_VISIBLE_DEVICES=0, pci 0000:19:00.0)": 600,
                 "NVIDIA H200 (CUDA_VISIBLE_DEVICES=1, pci 0000:3b:00.0)": 634}
    other = TargetResult("builtin.axpy", "fuzzkern.targets.builtin:axpy")
    other.cases, other.seconds = 99, 1.0
    other.failures = [SimpleNamespace(outcome=SimpleNamespace(verdict="kernel-bug", message=""),
                                      found_at=None, shows=None, also=[])]
    for width in (60, 80, 140):
        console = Console(width=width, record=True, file=open(os.devnull, "w"))
        console.print(summary_table([r, other], "fuzzkern summary", width))
        lines = console.export_text().splitlines()
        rows = [ln for ln in lines if ln.startswith("│")]
        assert len(rows) == 2, "\n".join(lines)  # one line per target, nothing wrapped
        assert all(len(ln) <= width for ln in lines)
        assert "builtin.matmul_persistent" in rows[0] and "1234" in rows[0]
        assert "kernel-bug" in rows[1]
    wide = Console(width=200, record=True, file=open(os.devnull, "w"))
    wide.print(summary_table([r, other], "fuzzkern summary", 200))
    assert "0: 600, 1: 634" in wide.export_text()


def test_coverage_in_the_summary_is_the_kernel_coverage_and_classes_are_apart(tmp_path):
    """A newcomer read "coverage 12" in the summary and the per-target line beside "80.0%"
    in the kernel coverage below (issue 43's second trial): one word, one concept. The
    coverage column and line give the kernel coverage; the specialization classes seen have
    a column of their own, ``classes``."""
    # the case count binds, not the budget (a loaded machine runs the same 6 cases)
    res = _fuzzkern(tmp_path, ["run", "fuzzkern.targets.builtin:vector_add", "--budget", "120s",
                               "--max-examples", "6", "--no-db", "--no-corpus", "--seed", "1",
                               "--heartbeat", "0"], env={"COLUMNS": "200"})
    assert res.returncode == 0, res.stdout + res.stderr
    import re

    percent = re.search(r"builtin\.vector_add: (\d+\.\d)%", res.stdout).group(1)
    line = next(ln for ln in res.stdout.splitlines() if "builtin.vector_add: 6 cases" in ln)
    assert line.endswith(f"coverage {percent}%"), line
    header = next(ln for ln in res.stdout.splitlines() if "target" in ln and "status" in ln)
    assert "coverage" in header and "classes" in header
    row = next(ln for ln in res.stdout.splitlines() if ln.startswith("│ builtin.vector_add"))
    assert f"{percent}%" in row
