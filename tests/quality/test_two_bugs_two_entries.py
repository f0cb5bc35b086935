"""Quality: a target with two distinct bugs of one verdict family (bug A on output 0 for
3 < N <= 5, bug B on output 1 for N > 5) ends with both found, each in its own entry that
replays as still failing: an unshrunk finding never yields to another failure's entry."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.adversarial.test_corpus_attacks_2 import TWO_BUGS as TARGETS

pytestmark = pytest.mark.slow

#: bug B shows only with this variable set (the adversarial twin sets it for its second run)
BUG_B = {**os.environ, "FUZZKERN_TEST_BUG_B": "1"}


def _fuzzkern(cwd, *args):
    return subprocess.run([sys.executable, "-m", "fuzzkern", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=400, env=BUG_B)


def test_two_bugs_of_one_family_get_two_replayable_entries(tmp_path):
    (tmp_path / "targets.py").write_text(TARGETS)
    (tmp_path / "pyproject.toml").write_text('[tool.fuzzkern]\ntargets = ["targets.py"]\n')
    # two runs, the second with shrinking cut short: both bugs are kept either way
    for extra in ((), ("--shrink-time", "0.01")):
        res = _fuzzkern(tmp_path, "run", "targets.py", "--seed", "1", "--no-db", "-j", "1",
                        "--max-examples", "200", "--budget", "120s", "-q", *extra)
        assert res.returncode == 1, res.stdout + res.stderr
        for line in res.stdout.splitlines():
            if line.startswith("saved: "):
                assert (tmp_path / line.removeprefix("saved: ")).is_file(), line
    entries = sorted((tmp_path / "corpus").glob("*/*.json"))
    found = {json.loads(e.read_text())["message"] for e in entries}
    assert len(entries) >= 2, found
    ns = sorted(json.loads(e.read_text())["case"]["dims"]["N"] for e in entries)
    assert any(3 < n <= 5 for n in ns) and any(n > 5 for n in ns), ns
    res = _fuzzkern(tmp_path, "replay")
    assert res.returncode == 1, res.stdout
    assert res.stdout.count("still failing") == len(entries), res.stdout
