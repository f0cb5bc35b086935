"""Hostile surroundings (issue 42): environment variables, full disks, killed workers. Each
attack ends in one clear line or a run that goes on, within memory and time limits."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.adversarial.conftest import KERNELS, one_error_line, run_limited

#: a short run: a case count, not seconds, decides what it does (the budget is for a busy CI)
RUN = ["--budget", "120s", "--seed", "1", "--no-db", "-j", "1", "-q"]

BAD_VARIABLES = [
    ("FUZZKERN_AHEAD", "many", "FUZZKERN_AHEAD"),
    ("FUZZKERN_AHEAD", "-3", "FUZZKERN_AHEAD"),
    ("FUZZKERN_AHEAD", "9" * 30, "at most"),
    ("FUZZKERN_CORPUS_LIMITS", "speed=3", "unknown limit 'speed'"),
    ("FUZZKERN_CORPUS_LIMITS", "depth=1e3", "depth must be"),
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
