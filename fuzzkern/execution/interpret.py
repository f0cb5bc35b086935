"""The interpreted mode: one case's launch in the Triton interpreter, in the worker's own
process (twin of :mod:`fuzzkern.execution.compiled`).

In: a :class:`fuzzkern.execution.runner._Run` (target, case, CPU inputs, options). Out: the
mode's :class:`~fuzzkern.judge.outcome.ModeResult`: ``ok``/``mismatch``/``accuracy`` with the
comparison, or the located ``oob``/``oob-view``, an integer ``overflow`` (debug mode), an
``error``, a ``compile-error`` (what the compiler would refuse), a declared ``precondition``,
or ``unsupported`` (a limitation of the interpreter, not the kernel's).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import torch

from fuzzkern.calls import call_with
from fuzzkern.case.model import rebuild_like
from fuzzkern.errors import text_of
from fuzzkern.execution import hygiene
from fuzzkern.execution.hygiene import poisoned_allocations
from fuzzkern.execution.interpreter.coverage import recording
from fuzzkern.execution.launching import (
    checks_of,
    exception_text,
    is_precondition,
    overflow_of,
    short_traceback,
    storage_labels,
    unwrap,
)
from fuzzkern.execution.stages import stage
from fuzzkern.judge.outcome import ModeResult


def run_interpreted(run: Any) -> ModeResult:
    """Run ``run`` (a :class:`fuzzkern.execution.runner._Run`: the target, the case, its
    inputs, reference and options) in the Triton interpreter, in this process: its own copy
    of the inputs (in the dtypes given: bf16 and fp8 too, see
    :mod:`fuzzkern.execution.interpreter.formats`), bounds and view checks, poisoned allocations,
    mutation checks; then the comparison with the reference."""
    from fuzzkern.execution.interpreter.core import (
        OOBAccess,
        OOBView,
        current_program_id,
        interpreter_mode,
        kernel_location,
    )
    from fuzzkern.execution.interpreter.fidelity import interpreter_limitation

    with stage("prepare"):
        tensors = _inputs(run)
        detail: dict[str, Any] = {}
        checks = checks_of(run.options, run.target)
        before = ({name: hygiene.storage_bytes(t).clone() for name, t in tensors.items()}
                  if checks["mutation"] else None)
    start = time.perf_counter()
    try:
        # numpy warns about overflow/NaN in kernels' arithmetic; values are judged by the
        # oracle, so the warnings are noise on the terminal
        with np.errstate(all="ignore"), stage("launch"), \
                poisoned_allocations(checks["poison"]) as allocations, \
                recording(bool(run.options.get("coverage", True))) as run.recorded, \
                interpreter_mode(
                    check_bounds=checks["bounds"],
                    check_views=checks["view"],
                    strict_views=checks["view_strict"],
                    debug=bool(run.options.get("debug", False)),
                    configs=dict(run.case.configs),
                    labels=storage_labels(tensors),
                ) as session:
            session.record = detail  # the config each autotuner ran (configs_used)
            result = call_with(run.target.launcher, {**run.scalars, **tensors})
    except Exception as e:
        inner = unwrap(e)
        if isinstance(inner, OOBAccess):
            detail["oob"] = _oob_detail(inner)
            at = f"\n  at {inner.location}" if getattr(inner, "location", None) else ""
            return ModeResult("interpret", "oob-view" if isinstance(inner, OOBView) else "oob",
                              error=inner.describe() + at, detail=detail,
                              seconds=time.perf_counter() - start)
        found = overflow_of(text_of(inner)) if isinstance(inner, AssertionError) else None
        if found is not None:
            x, y, z = current_program_id()
            overflow: dict[str, Any] = {**found, "program_id": [x, y, z]}
            location = kernel_location(inner.__traceback__)
            if location:
                overflow["location"] = location
            detail["overflow"] = overflow
            return ModeResult("interpret", "overflow",
                              error=f"{overflow['dtype']} overflow in {overflow['operation']} "
                              f"at program ({x},{y},{z}) (debug mode's overflow check)"
                              + (f"\n  at {location}" if location else ""),
                              detail={**detail, "traceback": short_traceback(e)},
                              seconds=time.perf_counter() - start)
        refused = _compile_error(inner, e, detail, time.perf_counter() - start)
        if refused is not None:
            return refused
        status = "error"
        if is_precondition(run.target, inner) or is_precondition(run.target, e):
            status = "precondition"
        elif interpreter_limitation(inner) or "not supported in interpreter" in text_of(e):
            # Triton's interpreter, not the kernel: never an error, shrunk or saved
            status = "unsupported"
            if getattr(inner, "static", False):  # every case of the kernel: skip the target
                detail["static"] = True
        return ModeResult("interpret", status, error=exception_text(inner),
                          detail={**detail, "traceback": short_traceback(e)},
                          seconds=time.perf_counter() - start)
    seconds = time.perf_counter() - start
    if before is not None:
        with stage("checks"):
            run.storage_checks({n: (t, before[n], hygiene.storage_bytes(t))
                                 for n, t in tensors.items()}, detail)
    outputs = run._outputs(result, tensors)
    compared = run._compare("interpret", outputs, detail, seconds, allocations)
    return _judge_view_reads(compared, session)


def _compile_error(inner: BaseException, e: BaseException, detail: dict[str, Any],
                   seconds: float) -> ModeResult | None:
    """``compile-error`` when what the kernel raised is what compiling it would have refused
    (:func:`fuzzkern.execution.interpreter.fidelity.compile_refusal`): the compiler's words and the
    kernel
    line, as the GPU would report it."""
    from fuzzkern.execution.interpreter.core import kernel_location
    from fuzzkern.execution.interpreter.fidelity import compile_refusal

    refused = compile_refusal(inner)
    if refused is None:
        return None
    location = getattr(inner, "location", None) or kernel_location(inner.__traceback__)
    info = {**detail, "traceback": short_traceback(e)}
    if location:
        info["location"] = location
    return ModeResult("interpret", "compile-error",
                      error=f"compile error: {refused}" + (f"\n  at {location}" if location
                                                           else ""),
                      detail=info, seconds=seconds)


def _inputs(run: Any) -> dict[str, torch.Tensor]:
    """The interpreter's own copy of the case's inputs, layouts kept, in their own dtypes."""
    return {name: rebuild_like(t) for name, t in run.base.items()}


def _oob_detail(e: Any) -> dict[str, Any]:
    out = {}
    for k in ("op", "program_id", "lane", "address", "n_bad", "argument", "distance_bytes",
              "distance_elements", "storage_index", "region", "view", "location"):
        v = getattr(e, k, None)
        if v is None and k in ("storage_index", "region", "view", "location"):
            continue
        out[k] = list(v) if isinstance(v, tuple) else v
    return out


def _judge_view_reads(result: ModeResult, session: Any) -> ModeResult:
    """The view rule for loads: a load outside the views passed (inside the storage) is
    ``oob-view`` only with evidence that it mattered, an output that disagrees with the
    reference; with the outputs right it is a base-pointer use, noted in the detail."""
    seen = getattr(session, "view_reads", None)
    if seen is None:
        return result
    err, count = seen
    text = err.describe() + (f"\n  at {err.location}" if getattr(err, "location", None) else "")
    if result.status == "mismatch":
        detail = {**result.detail, "oob": _oob_detail(err), "view_reads": count}
        why = result.comparison.summary() if result.comparison is not None else ""
        return ModeResult("interpret", "oob-view",
                          error=f"{text}\n  and an output is wrong ({count} load"
                          f"{'' if count == 1 else 's'} outside the view)"
                          + (f": {why.splitlines()[0]}" if why else ""),
                          detail=detail, seconds=result.seconds)
    result.detail["view_reads"] = {"loads": count, "first": text,
                                   "judged": "outputs right: base-pointer use, not reported"}
    return result
