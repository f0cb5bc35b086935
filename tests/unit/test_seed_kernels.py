"""The seed kernels and the planted-bug kernels, checked on hand-made cases.

Each case is a hand-written :class:`~fuzzkern.case.model.Case` run through fuzzkern's own pipeline
in the interpreter (bounds checker, poisoned ``torch.empty``, forced autotune configs, float64
reference, oracle) — no Hypothesis involved.

Built-in targets must pass on a contiguous and a strided/transposed case. Each planted bug's
``correct`` twin must pass and its ``buggy`` kernel must fail, with the expected verdict, on the
module's KNOWN MINIMAL CASE: this is what makes those documented minimal cases real.

The hang kernel runs in a worker process, killed after a timeout.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fuzzkern.case.model import Case, Layout, TensorCase, Values
from fuzzkern.execution.pool import WorkerPool
from fuzzkern.execution.runner import run_case
from fuzzkern.target import loader

ROOT = Path(__file__).resolve().parents[2]
QUALITY = ROOT / "tests" / "quality" / "kernels"
BUILTIN = "fuzzkern.targets.builtin"

# --------------------------------------------------------------------------------------------
# Running a job through fuzzkern's own pipeline (materialize, interpreter with its bounds
# checker and poisoned allocations, forced autotune configs, reference, oracle), in-process.

_VERDICT_STATUS = {"pass": "pass", "kernel-bug": "mismatch", "oob": "oob"}


def _tensor_case(spec: dict[str, Any]) -> TensorCase:
    shape = tuple(spec["shape"])
    nd = len(shape)
    layout = Layout(
        tuple(spec.get("perm", range(nd))), tuple(spec.get("steps", [1] * nd)),
        tuple(spec.get("starts", [0] * nd)), spec.get("offset", 0),
        tuple(spec.get("expanded", ())),
    )
    values = Values(spec.get("seed", 0), spec.get("dist", "small_ints"),
                    tuple((int(i), str(k)) for i, k in spec.get("specials", ())))
    return TensorCase.build(shape, spec["dtype"], layout, values)


def _ref(job: dict[str, Any]) -> str:
    module = job["module"]
    return f"{module}::{job['target']}" if module.endswith(".py") else f"{module}:{job['target']}"


def _case(target: Any, job: dict[str, Any]) -> Case:
    inputs = {k: _tensor_case(v) if isinstance(v, dict) else v for k, v in job["inputs"].items()}
    return Case(_dims_of(target, job["inputs"]), inputs, job.get("configs", {}))


def run_job(job: dict[str, Any]) -> dict[str, Any]:
    target = loader.load_ref(_ref(job))
    outcome = run_case(target, _case(target, job),
                       {"modes": ["interpret"], "debug": job.get("debug", False)})
    detail = outcome.message + "".join(
        f"\n[{m.mode}] {m.status}: {m.comparison.summary() if m.comparison else m.error}"
        for m in outcome.modes.values())
    return {"status": _VERDICT_STATUS.get(outcome.verdict, outcome.verdict), "detail": detail}


# --------------------------------------------------------------------------------------------
# Case helpers


def t(shape: tuple[int, ...], dtype: str = "float32", **layout: Any) -> dict[str, Any]:
    """A tensor input: shape, dtype, and optional layout/values keys (perm, steps, starts,
    offset, expanded, seed, dist, specials) as in :class:`fuzzkern.case.model.Layout`/``Values``."""
    return {"shape": list(shape), "dtype": dtype, **layout}


def T(shape: tuple[int, int], dtype: str = "float32", **kw: Any) -> dict[str, Any]:
    """A 2-D tensor transposed in memory (column-major)."""
    return t(shape, dtype, perm=[1, 0], **kw)


def job(module: str, target: str, case_id: str, inputs: dict[str, Any],
        **extra: Any) -> dict[str, Any]:
    return {"id": f"{module.rsplit('/', 1)[-1]}::{target}::{case_id}", "module": module,
            "target": target, "inputs": inputs, **extra}


# --------------------------------------------------------------------------------------------
# Built-in targets: (target, case id, inputs, extra)

MM_BLOCKS = {"BLOCK_M": 16, "BLOCK_N": 32, "BLOCK_K": 16, "GROUP_M": 2}
NAN_INF = [[3, "nan"], [20, "inf"], [41, "-0.0"]]

BUILTIN_CASES: list[tuple[str, str, dict[str, Any], dict[str, Any]]] = [
    ("vector_add", "contiguous", {"x": t((100,)), "y": t((100,), seed=1), "BLOCK": 64}, {}),
    ("vector_add", "strided", {
        "x": t((300,), "float16", steps=[3], offset=5, dist="normal"),
        "y": t((300,), "float16", expanded=[0], seed=2), "BLOCK": 128}, {}),
    ("axpy", "contiguous-even", {
        "x": t((256,)), "y": t((256,), seed=1), "alpha": 0.5, "BLOCK": 64}, {}),
    ("axpy", "strided", {
        "x": t((77,), "float16", steps=[2], starts=[1]), "y": t((77,), "float16", steps=[3]),
        "alpha": -0.25, "BLOCK": 16}, {}),
    ("matmul", "contiguous", {
        "a": t((33, 40), "float16"), "b": t((40, 17), "float16", seed=1), **MM_BLOCKS}, {}),
    ("matmul", "transposed", {
        "a": T((37, 50), "float16"), "b": t((50, 21), "float16", steps=[1, 2], seed=1),
        "BLOCK_M": 32, "BLOCK_N": 16, "BLOCK_K": 32, "GROUP_M": 8}, {}),
    ("matmul_relu", "contiguous", {
        "a": t((20, 24), "float16"), "b": t((24, 40), "float16", seed=1), **MM_BLOCKS}, {}),
    ("matmul_relu", "transposed-nan", {
        "a": T((19, 33), "float16", specials=NAN_INF),
        "b": T((33, 18), "float16", seed=1, offset=3), **MM_BLOCKS}, {}),
    ("matmul_persistent", "contiguous", {
        "a": t((40, 24), "float16"), "b": t((24, 50), "float16", seed=1),
        "BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16, "GROUP_M": 2, "NUM_SMS": 3}, {}),
    ("matmul_persistent", "transposed", {
        "a": T((33, 17), "float16"), "b": T((17, 35), "float16", seed=1, starts=[1, 0]),
        "BLOCK_M": 32, "BLOCK_N": 16, "BLOCK_K": 16, "GROUP_M": 1, "NUM_SMS": 4}, {}),
    ("matmul_autotuned", "contiguous-config0", {
        "a": t((33, 20), "float16"), "b": t((20, 17), "float16", seed=1)},
        {"configs": {"matmul_autotuned_kernel": 0}}),
    ("matmul_autotuned", "transposed-config3", {
        "a": T((40, 45), "float16"), "b": T((45, 30), "float16", seed=1)},
        {"configs": {"matmul_autotuned_kernel": 3}}),
    ("row_sum", "contiguous", {"x": t((5, 100)), "BLOCK_M": 2, "BLOCK_N": 32}, {}),
    ("row_sum", "transposed-inf", {
        "x": T((20, 7), "float16", specials=[[4, "inf"], [30, "nan"]]),
        "BLOCK_M": 8, "BLOCK_N": 32}, {}),
    ("row_sum", "expanded", {
        "x": t((6, 70), expanded=[0], steps=[1, 2], dist="normal"), "BLOCK_M": 1,
        "BLOCK_N": 64}, {"tolerance": {"rtol": 1e-5, "atol": 1e-5}}),
]

# --------------------------------------------------------------------------------------------
# Planted bugs: module -> (known minimal case inputs, extra, status the buggy kernel gets)

VERDICT_STATUS = {"kernel-bug": "mismatch", "oob": "oob", "oob-view": "oob-view",
                  "unwritten-output": "unwritten-output", "input-mutated": "input-mutated",
                  "overflow": "overflow"}

PLANTED: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "missing_mask": ({"x": t((1,)), "y": t((1,)), "BLOCK": 16}, {}),
    "ignored_stride": ({"x": t((2,), steps=[2]), "y": t((2,)), "BLOCK": 16}, {}),
    "floor_grid": ({"x": t((1,)), "y": t((1,)), "BLOCK": 16}, {}),
    "unmasked_k": ({"a": t((1, 1), "float16"), "b": t((1, 1), "float16"),
                    "BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16}, {}),
    "reduction_padding": ({"x": t((1, 3), "float16")}, {}),
    "persistent_tiles": ({"a": t((1, 1), "float16"), "b": t((1, 17), "float16"),
                          "BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16, "NUM_SMS": 1}, {}),
    "inplace_copy": ({"x": t((2,), steps=[2]), "y": t((2,)), "BLOCK": 16}, {}),
    "empty_like_flat": ({"x": T((2, 2)), "BLOCK": 16}, {}),
    "expanded_fastpath": ({"x": t((1, 2)), "bias": t((1, 2), expanded=[1]), "BLOCK_N": 16}, {}),
    "autotune_config": ({"x": t((1,)), "y": t((1,))}, {"configs": {"add_kernel": 2}}),
    "oob_store": ({"x": t((1,)), "BLOCK": 16}, {}),
    "scratch_input": ({"x": t((1,)), "BLOCK": 16}, {}),
    "int32_index": ({"x": t((1,)), "BLOCK": 16, "stride": 143165577}, {"debug": True}),
}

# Larger, irregular cases the correct twins must also pass.
PLANTED_MORE: dict[str, dict[str, Any]] = {
    "missing_mask": {"x": t((37,), "float16", steps=[2]), "y": t((37,), "float16"), "BLOCK": 32},
    "ignored_stride": {"x": t((45,), steps=[3], offset=1), "y": t((45,), steps=[2]),
                       "BLOCK": 16},
    "floor_grid": {"x": t((50,)), "y": t((50,), steps=[2]), "BLOCK": 32},
    "unmasked_k": {"a": T((20, 37), "float16"), "b": t((37, 33), "float16", steps=[2, 1]),
                   "BLOCK_M": 16, "BLOCK_N": 32, "BLOCK_K": 16},
    "reduction_padding": {"x": T((5, 45), "float16", dist="normal")},
    "persistent_tiles": {"a": t((40, 20), "float16"), "b": T((20, 19), "float16"),
                         "BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16, "NUM_SMS": 2},
    "inplace_copy": {"x": t((33,), steps=[3], starts=[2]), "y": t((33,), steps=[2]),
                     "BLOCK": 16},
    "empty_like_flat": {"x": T((7, 5), "float16"), "BLOCK": 16},
    "expanded_fastpath": {"x": T((5, 20)), "bias": t((5, 20), expanded=[1]), "BLOCK_N": 16},
    "autotune_config": {"x": t((61,)), "y": t((61,), steps=[2])},
    "oob_store": {"x": t((33,), steps=[2]), "BLOCK": 32},
    "scratch_input": {"x": t((33,), "float16", steps=[2], offset=1), "BLOCK": 16},
    "int32_index": {"x": t((45,), steps=[3]), "BLOCK": 32, "stride": 2**31 - 1},
}


def _planted_jobs() -> list[dict[str, Any]]:
    jobs = []
    for name, (inputs, extra) in PLANTED.items():
        path = str(QUALITY / f"{name}.py")
        jobs.append(job(path, "buggy", "minimal", inputs, **extra))
        jobs.append(job(path, "correct", "minimal", inputs, **extra))
        jobs.append(job(path, "correct", "more", PLANTED_MORE[name], **extra))
    path = str(QUALITY / "hang.py")
    jobs.append(job(path, "correct", "minimal", {"x": t((1,)), "BLOCK": 16}))
    return jobs


def _builtin_jobs() -> list[dict[str, Any]]:
    return [job(BUILTIN, name, cid, inputs, **extra) for name, cid, inputs, extra in BUILTIN_CASES]


@pytest.fixture(scope="module")
def results() -> dict[str, dict[str, Any]]:
    return {j["id"]: run_job(j) for j in _builtin_jobs() + _planted_jobs()}


def _expect(results: dict[str, dict[str, Any]], job_id: str, status: str) -> None:
    r = results[job_id]
    assert r["status"] == status, f"{job_id}: expected {status}, got {r['status']}\n{r['detail']}"


# --------------------------------------------------------------------------------------------
# Tests


@pytest.mark.parametrize("name,case_id", [(n, c) for n, c, _, _ in BUILTIN_CASES])
def test_builtin_target_matches_reference(results, name, case_id):
    _expect(results, f"{BUILTIN}::{name}::{case_id}", "pass")


def test_every_builtin_target_is_checked():
    import fuzzkern
    from fuzzkern.targets import builtin

    targets = {n for n, v in vars(builtin).items() if isinstance(v, fuzzkern.Target)}
    checked = {n for n, _, _, _ in BUILTIN_CASES}
    assert targets == checked
    for name in targets:
        assert getattr(builtin, name).id == f"builtin.{name}"


@pytest.mark.parametrize("name", sorted(PLANTED))
def test_planted_correct_twin_passes(results, name):
    _expect(results, f"{name}.py::correct::minimal", "pass")
    _expect(results, f"{name}.py::correct::more", "pass")


@pytest.mark.parametrize("name", sorted(PLANTED))
def test_planted_bug_fails_on_its_minimal_case(results, name):
    from importlib.util import module_from_spec, spec_from_file_location

    spec = spec_from_file_location(f"_planted_{name}", QUALITY / f"{name}.py")
    assert spec is not None and spec.loader is not None
    mod = module_from_spec(spec)
    spec.loader.exec_module(mod)
    inputs, _ = PLANTED[name]
    dims = _dims_of(mod.buggy, inputs)
    assert dims == mod.MINIMAL_DIMS, "the test's case is not the documented minimal case"
    _expect(results, f"{name}.py::buggy::minimal", VERDICT_STATUS[mod.EXPECTED_VERDICT])


def _dims_of(target: Any, inputs: dict[str, Any]) -> dict[str, int]:
    dims: dict[str, int] = {}
    for name, strategy in target.inputs.tensors.items():
        strategy.check()
        for sym, size in zip(strategy.shape, inputs[name]["shape"], strict=True):
            if isinstance(sym, str):
                assert dims.setdefault(sym, size) == size
    return dims


def test_planted_modules_are_all_checked():
    modules = {p.stem for p in QUALITY.glob("*.py") if p.stem != "__init__"}
    assert modules == set(PLANTED) | {"hang"}


def test_hang_buggy_spins_and_correct_returns(results):
    _expect(results, "hang.py::correct::minimal", "pass")
    spec = job(str(QUALITY / "hang.py"), "buggy", "minimal", {"x": t((1,)), "BLOCK": 16})
    target = loader.load_ref(_ref(spec))
    pool = WorkerPool()
    try:
        outcome = pool.run(_ref(spec), _case(target, spec).to_json(), {"modes": ["interpret"]},
                           timeout=5.0)
    finally:
        pool.close()
    assert outcome.verdict == "hang"
