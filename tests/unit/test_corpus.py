"""The corpus: entries round-trip bit for bit, writes are atomic under concurrency and SIGKILL,
damaged files are reported by name and skipped, and replays say still failing / now passing /
cannot replay (and why)."""

import json
import os
import random
import shutil
import signal
import time

import pytest
import torch
from click.testing import CliRunner

from fuzzkern import cli
from fuzzkern.case.model import ALL_DTYPES, Case, Layout, TensorCase, Values, materialize
from fuzzkern.case.storage import tensors_from_storages
from fuzzkern.corpus import store as corpus
from fuzzkern.errors import CorpusError
from fuzzkern.execution.pool import WorkerPool, _context
from fuzzkern.judge.outcome import Outcome
from fuzzkern.search import engine, explain
from fuzzkern.target import loader
from tests import corpus_support
from tests.unit import _corpus_writers as writers

HERE = os.path.dirname(__file__)
TARGETS = os.path.join(HERE, "targets", "corpus_targets.py")
KERNEL_BUG = Outcome("kernel-bug", "interpret disagrees with the reference")


@pytest.fixture(scope="module")
def pool():
    p = WorkerPool()
    yield p
    p.close()


def _bits(t):
    """The raw bytes of a tensor's whole storage, and its view geometry."""
    n = t.untyped_storage().nbytes() // t.element_size()
    flat = t.as_strided((n,), (1,), 0).contiguous()
    raw = flat.view(torch.uint8).tolist() if n else []
    return raw, tuple(t.shape), t.stride(), t.storage_offset(), n


def _save(tmp_path, case, outcome=KERNEL_BUG, target_id="tests.corpus", **kw):
    return corpus.save(str(tmp_path / "corpus"), target_id, f"{TARGETS}::strided", case, outcome,
                       modes=("interpret",), **kw)


# --------------------------------------------------------------------------------------------
# Round trips


def _specials(dtype):
    if dtype.startswith(("float", "bfloat")):
        return ((0, "nan"), (1, "-0.0"), (2, "inf"), (3, "subnormal"))
    return ((0, "max"), (1, "min"))


LAYOUTS = {
    "contiguous": ((5, 3), Layout.contiguous(2)),
    "strided+offset": ((5, 3), Layout((0, 1), (2, 3), (1, 0), 3, ())),
    "permuted": ((5, 3), Layout((1, 0), (1, 1), (0, 0), 0, ())),
    "expanded": ((5, 3), Layout((0, 1), (1, 1), (0, 0), 1, (1,))),
    "zero-size": ((0, 3), Layout((0, 1), (1, 2), (0, 0), 2, ())),
}


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_every_dtype_and_layout_round_trips_bit_for_bit(tmp_path, dtype, layout):
    shape, lay = LAYOUTS[layout]
    x = TensorCase.build(shape, dtype, lay, Values(3, "normal" if dtype.startswith(
        ("float", "bfloat")) else "uniform", _specials(dtype)))
    case = Case({"M": shape[0], "N": shape[1]}, {"x": x, "alpha": -0.0, "BLOCK": 16,
                                                 "eps": float("nan"), "pair": (1, float("inf"))})
    path = _save(tmp_path, case)
    entry = corpus.load(path)
    assert entry.case.to_json() == case.to_json()
    assert entry.case.tensors["x"] == x
    assert repr(entry.case.scalars["alpha"]) == "-0.0"
    corpus.check_storages(entry)
    rebuilt = tensors_from_storages(entry.storages_path, entry.case)["x"]
    assert _bits(rebuilt) == _bits(materialize(x))
    assert rebuilt.dtype == getattr(torch, dtype)


def test_nan_payloads_and_negative_zero_survive_bit_for_bit(tmp_path):
    # hand-made storages: NaNs with payloads and signs, -0.0, in every float width
    patterns = {
        "float32": [0x7FC00001, 0xFFC12345, 0x7F800001, 0x80000000, 0x00000001],
        "float64": [0x7FF8000000000ABC, 0xFFF0000000000001, 0x8000000000000000],
        "float16": [0x7E01, 0xFE7F, 0x8000, 0x7C01],
        "bfloat16": [0x7FC1, 0xFFFF, 0x8000, 0x7F81],
        "float8_e4m3fn": [0x7F, 0xFF, 0x80],
        "float8_e5m2": [0x7D, 0xFE, 0x80],
    }
    ints = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}
    inputs, storages = {}, {}
    for dtype, bits in patterns.items():
        dt = getattr(torch, dtype)
        size = torch.empty(0, dtype=dt).element_size()
        raw = torch.tensor([b - (1 << (8 * size)) if size > 1 and b >= 1 << (8 * size - 1)
                            else b for b in bits], dtype=ints[size])
        storages[dtype] = raw.view(dt)
        inputs[dtype] = TensorCase((len(bits),), dtype, (1,), 0, len(bits))
    case = Case({}, inputs)
    path = _save(tmp_path, case, storages=storages)
    entry = corpus.load(path)
    corpus.check_storages(entry)
    rebuilt = tensors_from_storages(entry.storages_path, entry.case)
    for dtype, t in storages.items():
        assert _bits(rebuilt[dtype]) == _bits(t), dtype


def test_replay_worker_rebuilds_the_exact_layout(tmp_path):
    from fuzzkern.execution.runner import _Run

    x = TensorCase.build((4, 3), "bfloat16", Layout((1, 0), (2, 1), (1, 0), 5, ()),
                         Values(1, "wide", ((2, "nan"), (5, "-0.0"))))
    case = Case({"M": 4, "N": 3}, {"x": x})
    entry = corpus.load(_save(tmp_path, case))
    target = loader.load_ref(f"{TARGETS}::strided")
    from_bytes = _Run(target, entry.case, {"storages": entry.storages_path}).base["x"]
    from_recipe = _Run(target, case, {}).base["x"]
    assert _bits(from_bytes) == _bits(from_recipe)
    # its own allocation: exactly the case's storage, never the whole file
    assert from_bytes.untyped_storage().nbytes() == x.storage_size * 2


def test_entry_json_is_strict_and_readable(tmp_path):
    case = Case({"N": 2}, {"x": TensorCase.build((2,), "float32"), "eps": float("nan")})
    outcome = Outcome("kernel-bug", "wrong", score=float("inf"))
    path = _save(tmp_path, case, outcome, explanations=["fails only when `x` is strided"])
    text = open(path).read()
    json.loads(text, parse_constant=lambda c: pytest.fail(f"non-JSON constant {c}"))
    data = json.loads(text)
    assert data["schema_version"] == corpus.SCHEMA_VERSION
    assert data["target"]["id"] == "tests.corpus"
    assert data["verdict"] == "kernel-bug"
    assert data["explanations"] == ["fails only when `x` is strided"]
    assert set(data["environment"]) >= {"fuzzkern", "torch", "triton", "python", "gpu", "date"}
    assert '"shape": [2]' in text  # lists of numbers on one line, for diffs
    assert corpus.load(path).outcome.score == float("inf")
    assert not any(n.endswith(".tmp") for n in os.listdir(os.path.dirname(path)))


def test_the_same_failure_found_twice_is_one_entry(tmp_path):
    case = writers.case_for(1, n=8)
    first = _save(tmp_path, case)
    mtime = os.stat(first).st_mtime_ns
    time.sleep(0.01)
    assert _save(tmp_path, case) == first
    assert os.stat(first).st_mtime_ns == mtime  # kept as it was: the first finding is the record
    assert _save(tmp_path, writers.case_for(2, n=8)) != first
    assert _save(tmp_path, case, Outcome("oob", "x")) != first  # another verdict, another entry
    assert len(corpus.scan(str(tmp_path / "corpus"))) == 3


def test_older_schema_versions_are_migrated(tmp_path, monkeypatch):
    path = _save(tmp_path, writers.case_for(1, n=8))
    seen = []

    def migrate(d):
        seen.append(d["schema_version"])
        d["explanations"] = ["migrated"]
        return d

    monkeypatch.setattr(corpus, "SCHEMA_VERSION", 2)
    monkeypatch.setitem(corpus.MIGRATIONS, 1, migrate)
    entry = corpus.load(path)
    assert seen == [1] and entry.explanations == ["migrated"] and entry.schema_version == 2


# --------------------------------------------------------------------------------------------
# Damaged files


def test_malformed_truncated_foreign_and_too_new_files_are_reported_by_name(tmp_path):
    good = _save(tmp_path, writers.case_for(1, n=8))
    folder = os.path.dirname(good)
    text = open(good).read()
    files = {
        "truncated.json": text[: len(text) // 2],
        "malformed.json": '{"verdict": nope}',
        "foreign.json": json.dumps({"hello": "world"}),
        "array.json": "[1, 2, 3]",
        "too_new.json": text.replace('"schema_version": 1', '"schema_version": 99'),
        "bad_case.json": text.replace('"dtype": "float32"', '"dtype": "float7"'),
        "notes.txt": "a note someone left here",
        "binary.json": "\xff\xfe\x00garbage",
    }
    for name, content in files.items():
        with open(os.path.join(folder, name), "w", encoding="latin-1") as fh:
            fh.write(content)
    with open(os.path.join(folder, ".abc.json.123.tmp"), "w") as fh:
        fh.write("{half a wri")  # a writer's temporary file: not an entry, not an error
    scanned = dict(corpus.scan(str(tmp_path / "corpus")))
    assert isinstance(scanned.pop(good), corpus.Entry)
    reasons = {os.path.basename(p): str(e) for p, e in scanned.items()}
    assert set(reasons) == set(files)
    for name, reason in reasons.items():
        assert reason.startswith(os.path.join(folder, name)), reason
    assert "truncated JSON" in reasons["truncated.json"]
    assert "malformed JSON" in reasons["malformed.json"]
    assert "not a fuzzkern corpus entry" in reasons["foreign.json"]
    assert "not a fuzzkern corpus entry" in reasons["array.json"]
    assert "schema too new" in reasons["too_new.json"]
    assert "float7" in reasons["bad_case.json"]
    assert "not a corpus file" in reasons["notes.txt"]
    with pytest.raises(CorpusError, match="schema too new"):
        corpus.load(os.path.join(folder, "too_new.json"))


def test_missing_or_changed_inputs_cannot_replay(tmp_path, pool):
    entry = corpus.load(_save(tmp_path, writers.case_for(1, n=8)))
    sf = entry.storages_path
    raw = bytearray(open(sf, "rb").read())
    raw[-1] ^= 0x01  # one flipped bit in the stored bytes
    with open(sf, "wb") as fh:
        fh.write(raw)
    r = corpus_support.replay(entry, pool)
    assert r.status == corpus.CANNOT_REPLAY and "checksum mismatch" in r.reason
    with open(sf, "wb") as fh:
        fh.write(raw[:20])
    assert "truncated" in corpus_support.replay(entry, pool).reason
    os.unlink(sf)
    r = corpus_support.replay(entry, pool)
    assert r.status == corpus.CANNOT_REPLAY and "missing" in r.reason


def test_a_run_reports_damaged_corpus_files_and_goes_on(tmp_path):
    (lt,) = loader.load(f"{TARGETS}::strided")
    corpus_dir = tmp_path / "corpus"
    folder = corpus_dir / corpus.target_dirname(lt.id)
    folder.mkdir(parents=True)
    (folder / "0123456789abcdef.json").write_text('{"format": "fuzzkern-corpus-entry", "sch')
    (folder / "README.md").write_text("entries of the strided target")  # not worth a word
    p = WorkerPool()
    try:
        # ended by its first failure, not the clock (the budget is a cap for a loaded machine)
        opts = engine.CampaignOptions(budget=120.0, seed=0, database=None, max_failures=1,
                                      corpus=str(corpus_dir), explain=False)
        result = engine.fuzz_target(lt, p, opts, 120.0)
    finally:
        p.close()
    assert len(result.corpus_problems) == 1
    assert "0123456789abcdef.json" in result.corpus_problems[0]
    assert "truncated JSON" in result.corpus_problems[0]
    assert result.cases > 1 and [f.outcome.verdict for f in result.failures] == ["kernel-bug"]
    assert result.failures[0].corpus_path.startswith(str(folder))


# --------------------------------------------------------------------------------------------
# Concurrency and SIGKILL


def test_eight_concurrent_writers_leave_every_entry_whole(tmp_path):
    corpus_dir = str(tmp_path / "corpus")
    seeds = list(range(12))
    ctx = _context()
    procs = [ctx.Process(target=writers.write_many, args=(corpus_dir, seeds, i))
             for i in range(8)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    scanned = corpus.scan(corpus_dir)
    assert len(scanned) == len(seeds)
    for _path, entry in scanned:
        assert isinstance(entry, corpus.Entry), entry
        corpus.check_storages(entry)
    ids = {corpus.entry_id(writers.TARGET_ID, "kernel-bug", writers.case_for(s)) for s in seeds}
    assert {e.id for _, e in scanned} == ids
    folder = os.path.join(corpus_dir, corpus.target_dirname(writers.TARGET_ID))
    assert sorted(os.listdir(folder)) == sorted(
        [f"{i}.json" for i in ids] + [f"{i}.safetensors" for i in ids])


def _check_after_kills(corpus_dir, log_path):
    scanned = corpus.scan(corpus_dir)
    for path, entry in scanned:
        assert isinstance(entry, corpus.Entry), f"{path}: {entry}"
        corpus.check_storages(entry)  # a visible entry always has its whole inputs
        rebuilt = tensors_from_storages(entry.storages_path, entry.case)["x"]
        assert _bits(rebuilt) == _bits(materialize(entry.case.tensors["x"]))
    visible = {os.path.basename(p) for p, _ in scanned}
    logged = set(open(log_path).read().split()) if os.path.exists(log_path) else set()
    assert logged <= visible  # nothing a writer finished was lost
    return visible, logged


@pytest.mark.parametrize("kill_at_fsync", [1, 2, 3, 5])
def test_a_writer_killed_at_each_step_of_a_write_leaves_no_corrupt_entry(tmp_path,
                                                                         kill_at_fsync):
    # fsync 1: inputs written to their temporary file; 2: JSON written to its temporary file,
    # inputs already in place; 3: after the JSON was renamed in; 5: in the second entry.
    corpus_dir = str(tmp_path / "corpus")
    log_path = str(tmp_path / "done.log")
    p = _context().Process(target=writers.write_until_killed,
                           args=(corpus_dir, 0, log_path, kill_at_fsync, 5000))
    p.start()
    p.join(60)
    assert p.exitcode == -signal.SIGKILL
    visible, logged = _check_after_kills(corpus_dir, log_path)
    expected_visible = {1: 0, 2: 0, 3: 1, 5: 1}[kill_at_fsync]
    assert len(visible) == expected_visible
    assert len(logged) == (1 if kill_at_fsync == 5 else 0)


def test_writers_killed_at_random_times_leave_no_corrupt_or_lost_entry(tmp_path):
    corpus_dir = str(tmp_path / "corpus")
    log_path = str(tmp_path / "done.log")
    rng = random.Random(0)
    ctx = _context()
    for round_ in range(4):
        p = ctx.Process(target=writers.write_until_killed,
                        args=(corpus_dir, 1000 * round_, log_path))
        p.start()
        time.sleep(rng.uniform(0.3, 1.2))
        os.kill(p.pid, signal.SIGKILL)
        p.join(30)
        assert p.exitcode == -signal.SIGKILL
    visible, logged = _check_after_kills(corpus_dir, log_path)
    assert logged, "the writers never finished an entry: the test proves nothing"


# --------------------------------------------------------------------------------------------
# Replay


def _strided_case():
    x = TensorCase.build((3,), "float32", Layout((0,), (2,), (0,), 0, ()))
    return Case({"N": 3}, {"x": x})


def _found(tmp_path, pool, target="strided", case=None):
    """Run a case of ``target`` in the worker and save it as the failure it is."""
    (lt,) = loader.load(f"{TARGETS}::{target}")
    case = case or _strided_case()
    outcome = pool.run(lt.ref, case.to_json(), {"modes": ["interpret"]}, 30.0)
    assert outcome.failed, outcome.message
    path = corpus.save(str(tmp_path / "corpus"), lt.id, lt.ref, case, outcome,
                       modes=("interpret",), target=lt.target)
    return corpus.load(path)


def test_replay_says_still_failing_now_passing_or_cannot_replay(tmp_path, pool):
    entry = _found(tmp_path, pool)
    r = corpus_support.replay(entry, pool)
    assert (r.status, r.outcome.verdict) == (corpus.STILL_FAILING, "kernel-bug")
    fixed = corpus_support.replay(entry, pool, ref=f"{TARGETS}::fixed")
    assert fixed.status == corpus.NOW_PASSING
    r = corpus_support.replay(entry, pool, ref=f"{TARGETS}::nan_inputs")  # no NaN: passes
    assert r.status == corpus.NOW_PASSING
    r = corpus_support.replay(entry, pool, ref=f"{TARGETS}::renamed")
    assert r.status == corpus.CANNOT_REPLAY and r.reason.startswith("signature changed")
    assert "y" in r.reason and "x" in r.reason


def test_a_replay_that_fails_differently_says_it_is_a_different_failure(tmp_path, pool):
    case = Case({"N": 2}, {"x": TensorCase.build((2,), "float32")})
    outcome = Outcome("oob", "interpret: store past the end")
    (lt,) = loader.load(f"{TARGETS}::half")
    path = corpus.save(str(tmp_path / "corpus"), lt.id, lt.ref, case, outcome,
                       modes=("interpret",))
    entry = corpus.load(path)
    # float32 input: the half target is right, so the "oob" is gone
    assert corpus_support.replay(entry, pool).status == corpus.NOW_PASSING
    half = Case({"N": 2}, {"x": TensorCase.build((2,), "float16")})
    path = corpus.save(str(tmp_path / "corpus"), lt.id, lt.ref, half, outcome,
                       modes=("interpret",))
    r = corpus_support.replay(corpus.load(path), pool)
    assert r.status == corpus.STILL_FAILING
    assert r.reason.startswith("a different failure: kernel-bug at output 0, recorded oob:")


def test_a_moved_checkout_still_replays(tmp_path, pool):
    """The entry names its target by id only: moved with its checkout, it replays against the
    target file the user declares there."""
    repo = tmp_path / "repo"
    (repo / "targets").mkdir(parents=True)
    shutil.copy(TARGETS, repo / "targets" / "corpus_targets.py")
    (lt,) = loader.load(f"{repo}/targets/corpus_targets.py::strided")
    case = _strided_case()
    outcome = pool.run(lt.ref, case.to_json(), {"modes": ["interpret"]}, 30.0)
    path = corpus.save(str(repo / "corpus"), lt.id, lt.ref, case, outcome,
                       modes=("interpret",), target=lt.target)
    moved = tmp_path / "elsewhere"
    shutil.move(str(repo), str(moved))
    entry = corpus.load(str(moved / os.path.relpath(path, repo)))
    declared = f"{moved}/targets/corpus_targets.py"
    r = corpus_support.replay(entry, pool, ref=declared)
    assert r.status == corpus.STILL_FAILING


def test_a_run_replays_the_corpus_before_fuzzing(tmp_path):
    (lt,) = loader.load(f"{TARGETS}::strided")
    p = WorkerPool()
    try:
        entry = _found(tmp_path, p)
        # a corpus entry of the fixed twin, saved under the strided target's id
        opts = engine.CampaignOptions(budget=0.5, seed=0, database=None, max_examples=1,
                                      corpus=str(tmp_path / "corpus"), explain=False)
        result = engine.fuzz_target(lt, p, opts, 0.5)
        assert result.replayed == 1 and result.corpus_failing == [entry.path]
        assert any(f.replayed and f.corpus_path == entry.path for f in result.failures)
        (fixed,) = loader.load(f"{TARGETS}::fixed")
        # the same case saved under the fixed twin's id: the campaign replays it, now passing
        corpus.save(str(tmp_path / "corpus"), fixed.id, fixed.ref, entry.case, entry.outcome,
                    modes=("interpret",))
        result = engine.fuzz_target(fixed, p, opts, 0.5)
        assert result.replayed == 1 and len(result.corpus_passing) == 1
        assert not result.failures
    finally:
        p.close()


# --------------------------------------------------------------------------------------------
# Explanations


def test_explanations_name_what_the_failure_depends_on(pool):
    def lines(target, case):
        (lt,) = loader.load(f"{TARGETS}::{target}")
        outcome = pool.run(lt.ref, case.to_json(), {"modes": ["interpret"]}, 30.0)
        assert outcome.failed, outcome.message
        found = explain.explain(lt.ref, case, outcome, pool, {"modes": ["interpret"]},
                                target=lt.target)
        # with a GPU, the compiled mode is tried too: those lines are not what this tests
        return [line for line in found if " mode" not in line]

    assert lines("strided", _strided_case()) == [
        "fails only when `x` is strided (passes with `x` contiguous)"]
    nan = Case({"N": 4}, {"x": TensorCase.build((4,), "float32", None,
                                                Values(0, "small_ints", ((2, "nan"),)))})
    assert lines("nan_inputs", nan) == [
        "fails only with NaN inputs (passes without the NaN in `x`)"]
    half = Case({"N": 4}, {"x": TensorCase.build((4,), "float16")})
    assert lines("half", half) == ["fails only in float16 (passes with `x` upcast to float32)"]
    # a strided float16 case of the half target: the layout does not matter, the dtype does
    strided_half = Case({"N": 3}, {"x": TensorCase.build(
        (3,), "float16", Layout((0,), (2,), (0,), 1, ()))})
    assert lines("half", strided_half) == [
        "still fails with `x` contiguous",
        "fails only in float16 (passes with `x` upcast to float32)",
    ]


# --------------------------------------------------------------------------------------------
# Command line


def test_cli_replay_table_and_exit_codes(tmp_path, pool, monkeypatch):
    entry = _found(tmp_path, pool)
    bad = os.path.join(os.path.dirname(entry.path), "broken.json")
    with open(bad, "w") as fh:
        fh.write("{")
    runner = CliRunner()
    monkeypatch.chdir(tmp_path)
    # no target source declared (no --target, no pyproject.toml): each entry says so, exit 2
    res = runner.invoke(cli.main, ["replay"])  # default: ./corpus
    assert res.exit_code == 2 and "no target source" in res.output, res.output
    res = runner.invoke(cli.main, ["replay", "--target", TARGETS])
    assert res.exit_code == 1, res.output
    assert "still failing" in res.output and "broken.json" in res.output
    assert "cannot replay" in res.output
    # declared in pyproject.toml instead
    (tmp_path / "pyproject.toml").write_text(f'[tool.fuzzkern]\ntargets = ["{TARGETS}"]\n')
    res = runner.invoke(cli.main, ["replay", entry.path])
    assert res.exit_code == 1 and "still failing" in res.output, res.output
    (tmp_path / "pyproject.toml").unlink()
    res = runner.invoke(cli.main, ["replay", entry.path, "--ref", f"{TARGETS}::fixed"])
    assert res.exit_code == 0, res.output
    assert "now passing" in res.output
    res = runner.invoke(cli.main, ["replay", str(tmp_path / "nowhere")])
    assert res.exit_code == 2 and "no such file or folder" in res.output
    res = runner.invoke(cli.main, ["repro", entry.path, "-o", str(tmp_path / "r.py")])
    assert res.exit_code == 2 and "no target source" in res.output, res.output
    res = runner.invoke(cli.main, ["repro", entry.path, "-o", str(tmp_path / "r.py"),
                                   "--target", TARGETS])
    assert res.exit_code == 0, res.output
    assert "ENTRY_ID = " in (tmp_path / "r.py").read_text()
    res = runner.invoke(cli.main, ["repro", bad])
    assert res.exit_code == 2
