"""Memory and size from data (issue 42): what a case views, not what it stores, decides what
it may allocate; messages and reports stay bounded and keep the finding. Every run is under
:data:`~tests.adversarial.conftest.MEMORY_LIMIT`, so a regression fails fast."""

from __future__ import annotations

import json

import pytest

from tests.adversarial.conftest import one_error_line, rows, run_limited
from tests.adversarial.test_corpus_attacks import FIXED, _copy, _edit, _rehashed, wrong_project

__all__ = ["wrong_project"]  # a fixture, shared with the corpus attacks


def _stride_0(elements: int, dtype: str | None = None):
    def change(d):
        x = d["case"]["inputs"]["x"]["tensor"]
        x.update(shape=[elements], strides=[0], layout=None)  # (no layout cuts it)
        if dtype:
            x["dtype"] = dtype
    return change


@pytest.mark.parametrize("elements,limits,expect", [
    (2**28, "", "tensor_elements"),  # the 72-byte entry: 2**28 elements over 4 stored
    (2**22, "storage_bytes=8MiB", "a view of 4194304 float32 elements (16777216 bytes"),
    (2**22, "case_bytes=8MiB", "its views and storages take 16777216 bytes"),
])
def test_a_tiny_entry_that_views_a_lot_is_refused(wrong_project, tmp_path, elements, limits,
                                                   expect):
    """A stride-0 view over a few stored elements counts what it views: refused before
    anything is allocated, one line, within the memory limit."""
    root, entry = _copy(wrong_project, tmp_path)
    _edit(entry, _stride_0(elements))
    assert entry.stat().st_size < 4096
    res = run_limited(["replay", *FIXED], root, timeout=120,
                      extra_env={"FUZZKERN_CORPUS_LIMITS": limits} if limits else None)
    assert res.returncode == 2, res.stdout + res.stderr
    one_error_line(res.stderr)
    _target, _verdict, status, reason = rows(res.stdout)[entry.name]
    assert status == "cannot replay" and expect in reason, res.stdout


def test_the_largest_view_the_limits_allow_replays_in_bounded_memory(wrong_project, tmp_path):
    """At the default limits, the largest stride-0 view an entry may hold replays a correct
    kernel as "now passing" within the memory limit (no hang, no reference-error)."""
    from fuzzkern.corpus.limits import Limits

    root, entry = _copy(wrong_project, tmp_path)
    entry = _rehashed(entry, _stride_0(Limits().tensor_elements))  # a consistent entry
    res = run_limited(["replay", *FIXED], root, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    assert rows(res.stdout)[entry.name][2] == "now passing", res.stdout


def test_the_replay_worker_checks_views_before_allocating(wrong_project, tmp_path):
    """The worker side of a replay (``tensors_from_storages``) refuses a case whose views
    pass the limit it is given before it loads or allocates anything."""
    from fuzzkern.case.model import Case
    from fuzzkern.case.storage import tensors_from_storages, viewed_bytes
    from fuzzkern.errors import CorpusError

    _root, entry = _copy(wrong_project, tmp_path)
    d = json.loads(entry.read_text())
    _stride_0(2**30)(d)
    case = Case.from_json(d["case"])
    assert viewed_bytes(case) == 4 * 2**30
    with pytest.raises(CorpusError, match="view 4294967296 bytes, past the limit of 1024"):
        tensors_from_storages(str(tmp_path / "absent.safetensors"), case, 1024)


def test_a_40_mb_exception_message_is_cut_and_the_finding_kept(tmp_path):
    """A launcher raising a 40 MB message: found (exit 1), the entry and the JSON report
    small, the output small, the message's head kept; within the memory limit."""
    import shutil

    from tests.adversarial.conftest import KERNELS, corpus_entries

    shutil.copy(KERNELS, tmp_path / "kernels.py")
    res = run_limited(["run", "kernels.py::raises_40mb", "--budget", "120s", "--seed", "1",
                       "--no-db", "-j", "1", "-q", "--max-examples", "30",
                       "--report", "r.json"], tmp_path, timeout=300)
    assert res.returncode == 1, res.stdout[-3000:] + res.stderr[-3000:]
    assert len(res.stdout) + len(res.stderr) < 200_000
    (entry,) = corpus_entries(tmp_path / "corpus")
    assert entry.stat().st_size < 200_000
    assert (tmp_path / "r.json").stat().st_size < 400_000
    d = json.loads(entry.read_text())
    assert "ValueError" in json.dumps(d["outcome"]) and "BAD-INDEX" in d["message"], d["message"]
    assert d["case"]["dims"]["N"] == 4  # shrunk to the smallest failing case
    res = run_limited(["replay", "--target", "kernels.py"], tmp_path, timeout=200)
    assert res.returncode == 1, res.stdout[-3000:] + res.stderr[-3000:]
    assert rows(res.stdout)[entry.name][2] == "still failing"


def test_outputs_nested_3000_deep_still_find_the_bug(tmp_path):
    """A launcher and reference returning a list nested 3000 deep: not a fuzzkern limit on
    every case (status ok), but the bug found and shrunk (exit 1)."""
    import shutil

    from tests.adversarial.conftest import KERNELS, corpus_entries

    shutil.copy(KERNELS, tmp_path / "kernels.py")
    res = run_limited(["run", "kernels.py::deep_outputs", "--budget", "150s", "--seed", "1",
                       "--no-db", "-j", "1", "-q", "--max-examples", "30"], tmp_path,
                      timeout=300)
    assert res.returncode == 1, res.stdout[-3000:] + res.stderr[-3000:]
    assert "fuzzkern-limit" not in res.stdout and "RecursionError" not in res.stdout
    (entry,) = corpus_entries(tmp_path / "corpus")
    d = json.loads(entry.read_text())
    assert d["verdict"] == "kernel-bug" and d["case"]["dims"]["N"] == 4


def _unshrunk_recipe(change):
    """An unshrunk entry (its next run shrinks it: new values drawn from its recipe, dims
    lowered) whose recipe ``change`` edits."""
    def edit(d):
        d["shrunk"] = False
        change(d["case"]["inputs"]["x"]["tensor"])
    return edit


@pytest.mark.parametrize("change,expect", [
    # a layout that does not give the view's strides: a dim lowered by the shrinker rebuilt
    # the storage from it, 2**40 elements apart
    (lambda x: x["layout"].update(steps=[2**40]), "its layout does not give its strides"),
    # values drawn in a block of 2**40 copies of the view when regenerated
    (lambda x: x["values"].update(block=[2**40, 0]), "values block count must be in [1, 32]"),
    # a zero dim hides a huge one from the element count (numpy refused it in the worker)
    (lambda x: x.update(shape=[2**62, 0], strides=[1, 1], layout=None),
     "has 4611686018427387904 elements besides its zero dims"),
    (lambda x: x.update(shape=[4] + [1] * 70, strides=[1] * 71, layout=None),
     "71 dims, past the 64"),
])
def test_a_recipe_that_allocates_when_rebuilt_is_refused(wrong_project, tmp_path, change,
                                                          expect):
    """What a case is rebuilt from when it changes (its layout, its value recipe), and the
    dims a zero dim hides, are checked with the view: one cannot-replay line, exit 2,
    within the memory limit."""
    root, entry = _copy(wrong_project, tmp_path)
    entry = _rehashed(entry, _unshrunk_recipe(change))
    res = run_limited(["replay"], root, timeout=120)
    assert res.returncode == 2, res.stdout + res.stderr
    one_error_line(res.stderr)
    _target, _verdict, status, reason = rows(res.stdout)[entry.name]
    assert status == "cannot replay" and expect in reason, res.stdout


def test_an_entry_with_huge_texts_prints_and_reports_them_cut(wrong_project, tmp_path):
    """An entry (within entry_bytes) with a 6 MB explanation, 100000 more and a 4 MB
    message: the run that replays it still finds the failure, and its output and JSON report
    stay small (it once printed 11 MB at every run)."""
    from tests.adversarial.test_corpus_attacks import RUN

    root, entry = _copy(wrong_project, tmp_path)

    def change(d):
        d["explanations"] = ["EXPL " + "x" * (6 << 20)] + ["y"] * 100_000
        d["message"] = "M" * (4 << 20)
        d["outcome"]["message"] = "O" * (4 << 20)
    _edit(entry, change)
    res = run_limited([*RUN, "--report", "r.json"], root, timeout=300)
    assert res.returncode == 1, res.stdout[-3000:] + res.stderr[-3000:]
    assert "still fails" in res.stdout and "EXPL xxx" in res.stdout
    assert len(res.stdout) + len(res.stderr) < 200_000
    assert (root / "r.json").stat().st_size < 400_000


def test_a_huge_scalar_in_an_entry_is_shown_cut(tmp_path_factory, tmp_path):
    """An entry whose scalar input is a 10 MB string (its id hashes it: a consistent entry):
    replayed by `fuzzkern run`, still failing, its case shown cut (it once printed the
    string whole in the case's description)."""
    from tests.adversarial.test_corpus_attacks import _project_with

    root, entry = _copy(_project_with("wrong_tagged", tmp_path_factory), tmp_path)
    entry = _rehashed(entry, lambda d: d["case"]["inputs"]["tag"].update(scalar="s" * 10**7))
    res = run_limited(["run", "kernels.py::wrong_tagged", "--budget", "150s", "--seed", "1",
                       "--no-db", "-j", "1", "-q", "--max-examples", "10"], root, timeout=300)
    assert res.returncode == 1, res.stdout[-3000:] + res.stderr[-3000:]
    assert "still fails" in res.stdout and "[10000002 characters]" in res.stdout
    assert len(res.stdout) + len(res.stderr) < 200_000
