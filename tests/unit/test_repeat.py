"""Runs that repeat (issue 32, item 3): the "to repeat" line of ``fuzzkern run`` (seed, case
count, no database) draws the same cases again, even when the first run was cut by its budget
and used an example database; a target that ran fewer cases than the floor gets a warning,
and ``--min-cases`` makes it an error."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import textwrap

# A correct kernel whose launcher writes each case it gets to $DRAWS_LOG (one line per call,
# from the worker process): the log is the sequence of draws.
TARGET = '''
import os

import fuzzkern
from fuzzkern import strategies as fks
from fuzzkern.targets.kernels import vector_add


def logged_add(x, y, BLOCK):
    with open(os.environ["DRAWS_LOG"], "a") as log:
        log.write(f"{tuple(x.shape)} {x.stride()} {x.dtype} {float(x.sum()):.6g} {BLOCK}\\n")
    return vector_add(x, y, BLOCK)


add = fuzzkern.Target(
    launcher=logged_add, reference=lambda x, y: x + y,
    inputs=fks.inputs(x=fks.tensors(("N",), dtypes=["float32", "float16"]),
                      y=fks.tensors(("N",), dtype_of="x"),
                      BLOCK=fks.sizes(min_value=64, max_value=64)),
    dims={"N": fks.sizes(max_value=300)},
)
'''


def _run(cwd, args, log):
    return subprocess.run([sys.executable, "-m", "fuzzkern", "run", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=240,
                          env={**os.environ, "DRAWS_LOG": str(log), "COLUMNS": "200"})


def test_the_repeat_line_draws_the_same_cases_again(tmp_path):
    (tmp_path / "ops.py").write_text(textwrap.dedent(TARGET))
    first_log, again_log = tmp_path / "first.log", tmp_path / "again.log"
    # unseeded, an example database, cut by its budget: what a first run looks like (no case
    # floor: its top-up draws from another seed, which the line cannot repeat, and a loaded
    # machine runs fewer than the floor's 20 cases in a short budget)
    first = _run(tmp_path, ["ops.py", "--budget", "15s", "--db", str(tmp_path / "db"),
                            "--no-corpus", "-j", "1", "--case-floor", "0"], first_log)
    assert first.returncode == 0, first.stdout + first.stderr
    line = next((ln for ln in first.stdout.splitlines() if ln.startswith("to repeat: ")), None)
    assert line, first.stdout
    argv = shlex.split(line[len("to repeat: "):])
    assert argv[:3] == ["fuzzkern", "run", "ops.py"] and "--no-db" in argv, line
    cases = int(argv[argv.index("--max-examples") + 1])
    assert cases >= 5, first.stdout
    again = _run(tmp_path, argv[2:], again_log)
    assert again.returncode == 0, again.stdout + again.stderr
    drawn, repeated = first_log.read_text().splitlines(), again_log.read_text().splitlines()
    # the first run may have been stopped in the middle of one more case than it counted
    assert len(repeated) == cases and drawn[:cases] == repeated, (drawn, repeated)
    assert re.search(rf"ok\s+ops::add: {cases} cases", again.stdout), again.stdout


def test_too_few_cases_warn_and_min_cases_makes_them_an_error(tmp_path):
    (tmp_path / "ops.py").write_text(textwrap.dedent(TARGET))
    log = tmp_path / "draws.log"
    res = _run(tmp_path, ["ops.py", "--budget", "60s", "--no-db", "--no-corpus",
                          "--max-examples", "3", "--seed", "1"], log)
    # asking for 3 cases and getting them is no warning
    assert res.returncode == 0 and "warning" not in res.stdout, res.stdout + res.stderr
    res = _run(tmp_path, ["ops.py", "--budget", "60s", "--no-db", "--no-corpus",
                          "--max-examples", "3", "--seed", "1", "--min-cases", "2"], log)
    assert res.returncode == 0, res.stdout + res.stderr
    res = _run(tmp_path, ["ops.py", "--budget", "60s", "--no-db", "--no-corpus",
                          "--max-examples", "3", "--seed", "1", "--min-cases", "5"], log)
    assert res.returncode == 2
    assert "--min-cases 5 asks for more cases than --max-examples 3" in res.stderr
    # a budget too small for the floor: a warning by default, an error with --min-cases
    slow = textwrap.dedent(TARGET).replace("    with open(", "    import time\n"
                                           "    time.sleep(0.4)\n    with open(")
    (tmp_path / "slow.py").write_text(slow)
    # (without the case floor, which fuzzes on toward 20 cases for up to the budget again:
    # 0.4 s cases in 3 s are fewer than 15 however fast, one or more however loaded)
    res = _run(tmp_path, ["slow.py", "--budget", "3s", "--no-db", "--no-corpus", "--seed",
                          "1", "-j", "1", "--case-floor", "0"], log)
    assert res.returncode == 0, res.stdout + res.stderr
    assert re.search(r"^warning: slow::add ran \d+ cases?, fewer than 20: it tested little; "
                     r"raise --budget \(--min-cases N makes this an error\)$", res.stdout,
                     re.MULTILINE), res.stdout
    res = _run(tmp_path, ["slow.py", "--budget", "3s", "--no-db", "--no-corpus", "--seed",
                          "1", "-j", "1", "--min-cases", "15", "--case-floor", "0"], log)
    assert res.returncode == 2, res.stdout + res.stderr
    assert re.search(r"fuzzkern: error: slow::add ran \d+ cases?, fewer than --min-cases 15",
                     res.stderr), res.stderr
