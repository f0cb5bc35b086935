"""The seed kernels and the planted-bug kernels, checked directly in Triton's interpreter.

Each case runs the target's launcher under ``TRITON_INTERPRET=1`` in a subprocess (the
variable must be set before triton is imported) on a hand-made input, and compares the result
with the target's torch reference (float64 inputs, rounded to the output dtype) using
``torch.testing.assert_close``. The subprocess also

- fills every ``torch.empty``/``torch.empty_like`` float allocation with NaN, so an output the
  kernel never writes cannot pass by luck;
- checks every active lane of every load and store against the storages of the launch's
  tensor arguments, and reports ``oob`` before memory is touched;
- forces one config per ``@triton.autotune`` kernel (the autotuner cannot benchmark on CPU).

Built-in targets must pass on a contiguous and a strided/transposed case. Each planted bug's
``correct`` twin must pass and its ``buggy`` kernel must fail, with the expected verdict, on the
module's KNOWN MINIMAL CASE: this is what makes those documented minimal cases real.

All cases share one subprocess (importing triton and torch dominates); the hang kernel gets
its own, killed after a timeout.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
QUALITY = ROOT / "tests" / "quality" / "kernels"
BUILTIN = "fuzzkern.targets.builtin"

# --------------------------------------------------------------------------------------------
# The subprocess: reads a JSON list of jobs on stdin, prints one JSON result per job.

RUNNER = r'''
import importlib, importlib.util, json, math, sys, traceback
import numpy as np
import torch
import triton
import triton.runtime.interpreter as interp
from triton.runtime.autotuner import Autotuner

from fuzzkern.case import Layout, TensorCase, Values, materialize
from fuzzkern.target import call_with


class OOB(Exception):
    pass


# -- bounds checker: storages of the current launch's tensor arguments -----------------------
ALLOCS = []
_init_args = interp.GridExecutor._init_args_hst


def _init_args_hst(self, args_dev, kwargs):
    args_hst, kwargs_hst = _init_args(self, args_dev, kwargs)
    ALLOCS.clear()
    for a in list(args_hst) + list(kwargs_hst.values()):
        if isinstance(a, torch.Tensor):
            s = a.untyped_storage()
            ALLOCS.append((s.data_ptr(), s.data_ptr() + s.nbytes()))
    return args_hst, kwargs_hst


def _check(op, ptrs, mask):
    size = np.dtype(interp._get_np_dtype(ptrs.get_element_ty())).itemsize
    addr = np.broadcast_to(ptrs.data, np.shape(mask.data))[np.asarray(mask.data, dtype=bool)]
    addr = addr.astype(np.uint64)
    ok = np.zeros(addr.shape, dtype=bool)
    for lo, hi in ALLOCS:
        ok |= (addr >= lo) & (addr + size <= hi)
    if not ok.all():
        raise OOB(f"{op}: {int((~ok).sum())} active lane(s) outside every tensor argument")


_load = interp.InterpreterBuilder.create_masked_load
_store = interp.InterpreterBuilder.create_masked_store


def create_masked_load(self, ptrs, mask, other, *args):
    _check("load", ptrs, mask)
    return _load(self, ptrs, mask, other, *args)


def create_masked_store(self, ptrs, value, mask, *args):
    _check("store", ptrs, mask)
    return _store(self, ptrs, value, mask, *args)


interp.GridExecutor._init_args_hst = _init_args_hst
interp.InterpreterBuilder.create_masked_load = create_masked_load
interp.InterpreterBuilder.create_masked_store = create_masked_store

# -- NaN-poisoned fresh outputs ----------------------------------------------------------------
_empty, _empty_like = torch.empty, torch.empty_like


def _poison(t):
    return t.fill_(math.nan) if t.is_floating_point() else t


torch.empty = lambda *a, **k: _poison(_empty(*a, **k))
torch.empty_like = lambda *a, **k: _poison(_empty_like(*a, **k))


MODULES = {}


def load_target(module, attr):
    if module not in MODULES:
        if module.endswith(".py"):
            name = "planted_" + module.rsplit("/", 1)[-1][:-3]
            spec = importlib.util.spec_from_file_location(name, module)
            MODULES[module] = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(MODULES[module])
        else:
            MODULES[module] = importlib.import_module(module)
    return getattr(MODULES[module], attr)


def build(spec):
    n = len(spec["shape"])
    layout = Layout(
        tuple(spec.get("perm") or range(n)),
        tuple(spec.get("steps") or (1,) * n),
        tuple(spec.get("starts") or (0,) * n),
        spec.get("offset", 0),
        tuple(spec.get("expanded", ())),
    )
    values = Values(spec.get("seed", 0), spec.get("dist", "small_ints"),
                    tuple((int(i), str(k)) for i, k in spec.get("specials", ())))
    return materialize(TensorCase.build(tuple(spec["shape"]), spec["dtype"], layout, values))


def force_configs(launcher, configs):
    saved = []
    for obj in list(launcher.__globals__.values()):
        if isinstance(obj, Autotuner):
            index = configs.get(obj.base_fn.__name__, 0)
            saved.append((obj, obj.configs))
            obj.configs = [obj.configs[index]]
    return saved


def as_tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def run(job):
    target = load_target(job["module"], job["target"])
    inputs = {}
    for name, v in job["inputs"].items():
        inputs[name] = build(v) if isinstance(v, dict) else v
    upcast = {k: (v.double() if isinstance(v, torch.Tensor) and v.is_floating_point()
                  else v.clone() if isinstance(v, torch.Tensor) else v)
              for k, v in inputs.items()}
    expected = as_tuple(call_with(target.reference, upcast))
    saved = force_configs(target.launcher, job.get("configs", {}))
    try:
        result = call_with(target.launcher, inputs)
    except Exception as e:
        cause = e
        while cause.__cause__ is not None:
            cause = cause.__cause__
        if isinstance(cause, OOB) or "OOB(" in str(e):
            return {"status": "oob", "detail": str(e)[:300]}
        return {"status": "error", "detail": traceback.format_exc()[-1500:]}
    finally:
        for obj, configs in saved:
            obj.configs = configs
    if target.inplace_names:
        outputs = tuple(inputs[n] for n in target.inplace_names)
    else:
        outputs = as_tuple(result)
    if len(outputs) != len(expected):
        return {"status": "mismatch", "detail": f"{len(outputs)} outputs, {len(expected)} expected"}
    try:
        for out, exp in zip(outputs, expected):
            torch.testing.assert_close(out, exp.to(out.dtype), equal_nan=True,
                                       **job.get("tolerance", {}))
    except AssertionError as e:
        return {"status": "mismatch", "detail": str(e)[:800]}
    return {"status": "pass", "detail": ""}


for job in json.load(sys.stdin):
    print("START " + job["id"], flush=True)
    try:
        res = run(job)
    except Exception:
        res = {"status": "error", "detail": traceback.format_exc()[-1500:]}
    print("RESULT " + json.dumps({"id": job["id"], **res}), flush=True)
'''


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["TRITON_INTERPRET"] = "1"
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return env


def run_jobs(jobs: list[dict[str, Any]], timeout: float) -> dict[str, dict[str, Any]]:
    proc = subprocess.run(
        [sys.executable, "-c", RUNNER], input=json.dumps(jobs), capture_output=True,
        text=True, timeout=timeout, env=_env(), cwd=ROOT,
    )
    results = {}
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            r = json.loads(line[len("RESULT "):])
            results[r.pop("id")] = r
    missing = [j["id"] for j in jobs if j["id"] not in results]
    if missing:
        raise AssertionError(
            f"runner exited with {proc.returncode} before {missing}:\n{proc.stderr[-3000:]}"
        )
    return results


# --------------------------------------------------------------------------------------------
# Case helpers


def t(shape: tuple[int, ...], dtype: str = "float32", **layout: Any) -> dict[str, Any]:
    """A tensor input: shape, dtype, and optional layout/values keys (perm, steps, starts,
    offset, expanded, seed, dist, specials) as in :class:`fuzzkern.case.Layout`/``Values``."""
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

VERDICT_STATUS = {"kernel-bug": "mismatch", "oob": "oob"}

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
}


def _planted_jobs() -> list[dict[str, Any]]:
    jobs = []
    for name, (inputs, extra) in PLANTED.items():
        path = str(QUALITY / f"{name}.py")
        jobs.append(job(path, "buggy", "minimal", inputs, **extra))
        jobs.append(job(path, "correct", "minimal", inputs, **extra))
        more_extra = {"configs": {"add_kernel_fixed": 2}} if name == "autotune_config" else {}
        jobs.append(job(path, "correct", "more", PLANTED_MORE[name], **more_extra))
    path = str(QUALITY / "hang.py")
    jobs.append(job(path, "correct", "minimal", {"x": t((1,)), "BLOCK": 16}))
    return jobs


def _builtin_jobs() -> list[dict[str, Any]]:
    return [job(BUILTIN, name, cid, inputs, **extra) for name, cid, inputs, extra in BUILTIN_CASES]


@pytest.fixture(scope="module")
def results() -> dict[str, dict[str, Any]]:
    return run_jobs(_builtin_jobs() + _planted_jobs(), timeout=300)


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
    jobs = [job(str(QUALITY / "hang.py"), "buggy", "minimal", {"x": t((1,)), "BLOCK": 16})]
    with pytest.raises(subprocess.TimeoutExpired) as info:
        run_jobs(jobs, timeout=20)
    # It timed out inside the launch, not while importing torch and triton.
    stdout = info.value.stdout or b""
    stdout = stdout.decode() if isinstance(stdout, bytes) else stdout
    assert f"START {jobs[0]['id']}" in stdout
