"""The project's own configuration (issue 32, item 5): one figure for the test suite's
duration, stated in one place (docs/ci.md), and pytest's cache provider kept, so ``--lf``
works for contributors."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
#: where a duration of the suite could be stated
PLACES = ["README.md", "tox.ini", "tests/README.md", "pyproject.toml",
          ".github/workflows/tests.yml"] + [f"docs/{n}" for n in os.listdir(
              os.path.join(ROOT, "docs")) if n.endswith(".md")]
DURATION = re.compile(r"(suite|tests?)\b[^.\n]{0,40}\b(about|takes|~)\s*\d+\s*min", re.I)


def test_the_suite_duration_is_stated_once_in_docs_ci():
    found = {}
    for name in PLACES:
        with open(os.path.join(ROOT, name), encoding="utf-8") as fh:
            text = fh.read()
        hits = DURATION.findall(text) + re.findall(r"\d+ minutes (?:per env )?on 2", text)
        if hits:
            found[name] = hits
    assert list(found) == ["docs/ci.md"], found
    with open(os.path.join(ROOT, "docs", "ci.md"), encoding="utf-8") as fh:
        assert re.search(r"about \d+ minutes on 2 cores\*\*\s*\(\d+ s in the last CI run",
                         fh.read())


def test_the_cache_provider_is_on_so_last_failed_works(tmp_path):
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as fh:
        addopts = tomllib.load(fh)["tool"]["pytest"]["ini_options"]["addopts"]
    assert "cacheprovider" not in addopts
    # the project's own configuration, on a throwaway test: --lf reruns only what failed
    (tmp_path / "test_two.py").write_text("def test_ok():\n    pass\n\n"
                                          "def test_bad():\n    assert False\n")
    args = [sys.executable, "-m", "pytest", "-c", os.path.join(ROOT, "pyproject.toml"),
            "--rootdir", str(tmp_path), "-p", "no:randomly", "-p", "no:fuzzkern",
            "-o", f"cache_dir={tmp_path / '.cache'}", str(tmp_path / "test_two.py")]
    subprocess.run(args, capture_output=True, text=True, timeout=120)
    again = subprocess.run([*args, "--lf", "-q"], capture_output=True, text=True, timeout=120)
    assert "1 failed" in again.stdout and "passed" not in again.stdout, again.stdout
    assert "1 deselected" in again.stdout, again.stdout
