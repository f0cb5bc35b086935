"""Where the verdict is computed: in the parent, from the bytes a worker compared.

A worker runs the target's host code (launcher, reference) in its own process, and that code
can replace anything there: :func:`fuzzkern.judge.oracle.compare`, numpy's or torch's
functions the comparison calls (``torch.allclose``, ``Tensor.__eq__``), the outputs' bytes
after the launch. So a pass the worker reports is a *claim*, and the parent (the fuzzing
process, which never runs a launcher) checks it with its own, untouched code:

- in the worker (:func:`snapshot`, :func:`claim`): the outputs' bytes are copied the moment the
  launch returned (before the reference runs), with torch functions captured when this module
  was imported, before any case ran, and with ``__torch_function__`` overrides off; with them
  what the comparison read: the float64 reference, the magnitude, and the facts about the
  reference's conditioning the oracle consulted (oracle rules 7-9:
  :class:`~fuzzkern.judge.conditioning.Evidence`'s native reference, sensitivity, magnitude,
  extreme inputs). Only for modes whose comparison passed: a failure needs no second opinion.
- in the parent (:func:`recheck`): every mode the worker calls ``ok`` is compared again by
  :func:`fuzzkern.judge.oracle.compare` on those bytes, told the tolerance, output names and
  reduction length of the parent's own target and case (:func:`tolerance_of`, never the
  worker's), and the case's verdict is computed there
  (:func:`fuzzkern.judge.verdict.verdict_of` over the modes' results). A pass the parent
  does not confirm, or a pass with no bytes to check, is a failure: the mode is a
  ``mismatch`` with the parent's comparison, and the message says the worker reported a pass.

What the worker says that the parent cannot check (docs/corpus.md, "What fuzzkern
promises"): the reference's own outputs (the target's reference runs in the worker, and host
code that patches torch there changes them), the conditioning facts its oracle computed
from the reference, the hygiene checks' findings, a status other than a pass (the float64
shadow's ``accuracy`` runs the kernel in the worker), value variants' passes (compiled
mode, counted in the worker), and a worker that writes a forged transcript onto its pipe.
What travels is data: the parent reads the worker's messages with an unpickler that refuses
every class (:func:`loads`), so nothing a worker sends runs as code in the parent.
"""

from __future__ import annotations

import base64
import dataclasses
import io
import pickle
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch

from fuzzkern.judge import oracle
from fuzzkern.judge.conditioning import Evidence, InputSensitivity
from fuzzkern.judge.outcome import ModeResult, Outcome, Verdict
from fuzzkern.judge.verdict import verdict_of
from fuzzkern.target.declare import Target, Tolerance

#: bytes of tensor data one case's transcript may carry; a pass whose data is larger is
#: reported as not checked in the parent (``detail["unchecked"]``), never as a failure
TRANSCRIPT_BYTES = 512 * 1024 * 1024
#: bytes of one message a worker may send the parent (a transcript and its outcome)
MESSAGE_BYTES = TRANSCRIPT_BYTES + 64 * 1024 * 1024
#: nesting of a packed value (outputs nested deeper are flattened before: launching.as_outputs)
_DEPTH = 64

# What encodes a tensor, taken before any case ran: a case that replaces these attributes of
# torch or numpy later changes nothing here.
_DISABLE = torch._C.DisableTorchFunction
_detach = torch.Tensor.detach
_to = torch.Tensor.to
_empty = torch.empty
_copy = torch.Tensor.copy_
_reshape = torch.Tensor.reshape
_view = torch.Tensor.view
_numpy = torch.Tensor.numpy
_tobytes = np.ndarray.tobytes
_numel = torch.Tensor.numel
_Tensor = torch.Tensor
_isinstance = isinstance
_DTYPES = {str(d).removeprefix("torch."): d for d in vars(torch).values()
           if _isinstance(d, torch.dtype)}


def output_names(target: Target) -> tuple[str | None, ...] | None:
    """The names of a target's outputs (its in-place inputs', or its ``output_names``)."""
    if target.inplace_names:
        return target.inplace_names
    return tuple(target.output_names) if target.output_names else None


def tolerance_of(target: Target, case: Any, outputs: Sequence[Any], compiled: bool
                 ) -> Tolerance:
    """The tolerance ``outputs`` of ``case`` (a :class:`~fuzzkern.case.model.Case`) are
    judged by: the target's; with ``follow="inputs"``, each floating-point output's made
    explicit from the case's lowest-precision floating-point input dtype (its ``dtypes``
    entry, else that dtype's default) instead of the output's own. Computed from the target
    and the case alone, in the worker and again in the parent."""
    tol = target.tolerance
    floats = [t.dtype for t in case.tensors.values() if t.dtype.startswith(("float", "bfloat"))]
    if tol.follow != "inputs" or not floats:
        return tol
    low = max(floats, key=lambda d: torch.finfo(getattr(torch, d)).eps)
    names = output_names(target)
    per: dict[int | str, Tolerance] = {}
    for i, o in enumerate(outputs):
        if not (isinstance(o, torch.Tensor) and o.is_floating_point()):
            continue
        t = tol.for_output(i, names[i] if names and i < len(names) else None, low)
        rtol, atol, _ = oracle.default_tolerance(getattr(torch, low), compiled)
        per[i] = dataclasses.replace(
            t, rtol=rtol if t.rtol is None else t.rtol,
            atol=atol if t.atol is None else t.atol, dtypes=None, outputs=None)
    return dataclasses.replace(tol, outputs={**(tol.outputs or {}), **per})


class Unpackable(ValueError):
    """A value a transcript cannot carry (an output of a type the parent cannot rebuild: the
    oracle passes tensors only, so no pass has one)."""


class TooLarge(Unpackable):
    """Outputs and reference past :data:`TRANSCRIPT_BYTES`: the one pass left unchecked."""


class _Packer:
    """Packs a value (tensors, numbers, strings, None, lists and tuples of them, the oracle's
    facts) into plain data and a list of byte chunks the data points into."""

    def __init__(self) -> None:
        self.chunks: list[bytes] = []
        self.size = 0

    def tensor(self, t: torch.Tensor) -> dict[str, Any]:
        with _DISABLE():
            # a fresh flat tensor: contiguous() keeps a size-1 dim's odd stride, which
            # view(uint8) refuses
            n = int(_numel(t))
            c = _empty((n,), dtype=t.dtype)
            _copy(c, _reshape(_to(_detach(t), "cpu"), (-1,)))
            data = _tobytes(_numpy(_view(c, torch.uint8))) if n else b""
            shape = [int(s) for s in t.shape]
            dtype = str(t.dtype).removeprefix("torch.")
        self.size += len(data)
        if self.size > TRANSCRIPT_BYTES:
            raise TooLarge(f"its outputs and reference pass {TRANSCRIPT_BYTES} bytes")
        self.chunks.append(data)
        return {"$t": len(self.chunks) - 1, "dtype": dtype, "shape": shape}

    def pack(self, v: Any, depth: int = 0) -> Any:
        if depth > _DEPTH:
            raise Unpackable("a value nested too deep")
        if _isinstance(v, _Tensor):
            return self.tensor(v)
        if v is None or _isinstance(v, (bool, int, float, str)):
            return v
        if _isinstance(v, np.generic):
            return v.item()
        if _isinstance(v, complex):
            return {"$complex": [v.real, v.imag]}
        if _isinstance(v, (list, tuple)):
            items = [self.pack(x, depth + 1) for x in v]
            return {"$tuple": items} if _isinstance(v, tuple) else items
        if _isinstance(v, dict) and depth == 0:  # the facts (named by fuzzkern)
            return {"$dict": {str(k): self.pack(x, depth + 1) for k, x in v.items()}}
        if _isinstance(v, InputSensitivity):
            return {"$sens": [v.name, v.dtype, v.unit, v.own, self.pack(v.deltas, depth + 1)]}
        if _isinstance(v, Tolerance):
            return {"$tol": self.tolerance(v)}
        raise Unpackable(f"an output of type {type(v).__name__}")

    def tolerance(self, t: Tolerance) -> dict[str, Any]:
        return {"rtol": t.rtol, "atol": t.atol, "equal_nan": t.equal_nan,
                "adaptive": t.adaptive, "follow": t.follow,
                "dtypes": None if t.dtypes is None else
                [[str(k), list(v)] for k, v in t.dtypes.items()],
                "outputs": None if t.outputs is None else
                [[k, self.tolerance(v)] for k, v in t.outputs.items()]}


def snapshot(outputs: Sequence[Any] | None) -> Any:
    """In the worker, the moment a launch returned: its outputs' bytes (a :class:`Packed`),
    or why they cannot be carried (an :class:`Unpackable`)."""
    packer = _Packer()
    try:
        return Packed(packer.pack(None if outputs is None else tuple(outputs)), packer.chunks)
    except Unpackable as e:
        return e
    except Exception as e:  # a tensor that cannot be read as bytes: said, never fatal
        return Unpackable(f"its outputs could not be read ({type(e).__name__})")


@dataclasses.dataclass
class Packed:
    data: Any
    chunks: list[bytes]


def claim(outputs: Any, expected: Sequence[Any], *, magnitude: Sequence[Any] | None,
          tolerance: Tolerance, reduction_length: int, names: Sequence[str | None] | None,
          upcast: bool, native: Sequence[Any] | None, evidence: Evidence | None
          ) -> dict[str, Any]:
    """In the worker, for a mode whose comparison passed: what the parent needs to compare
    it again (``outputs``: :func:`snapshot`'s result, taken when the launch returned)."""
    if _isinstance(outputs, Unpackable):
        return _unread(outputs)
    packer = _Packer()
    packer.chunks, packer.size = list(outputs.chunks), sum(len(c) for c in outputs.chunks)
    facts: dict[str, Any] = {}
    if evidence is not None:
        cache = getattr(evidence, "_cache", {})
        for key in ("sensitivity", "magnitude"):
            if key in cache:
                facts[key] = cache[key]
        if cache.keys() - {"expected"}:  # consulted beyond the plain comparison
            facts["extreme"] = evidence.extreme_inputs()
    try:
        return {"outputs": outputs.data, "expected": packer.pack(tuple(expected)),
                "magnitude": packer.pack(magnitude), "tolerance": packer.tolerance(tolerance),
                "reduction_length": int(reduction_length),
                "names": None if names is None else list(names), "upcast": bool(upcast),
                "native": packer.pack(native), "facts": packer.pack(facts),
                "$chunks": packer.chunks}
    except Unpackable as e:
        return _unread(e)
    except Exception as e:
        return {"unread": f"what it compared could not be read ({type(e).__name__})"}


def _unread(e: Unpackable) -> dict[str, str]:
    """A claim without its bytes: ``unchecked`` when they are too many (the parent says so
    and trusts the pass), ``unread`` otherwise (no honest pass has them: a failure)."""
    return {"unchecked" if _isinstance(e, TooLarge) else "unread": str(e)}


def transcript(claims: Mapping[str, dict[str, Any]]) -> dict[str, Any]:
    """The claims of one case's modes as one message part: plain data and one byte string."""
    meta, blob, offset = {}, io.BytesIO(), 0
    for mode, c in claims.items():
        c = dict(c)
        spans = []
        for chunk in c.pop("$chunks", []):
            blob.write(chunk)
            spans.append([offset, len(chunk)])
            offset += len(chunk)
        meta[mode] = {**c, "spans": spans}
    return {"claims": meta, "data": blob.getvalue()}


# -- the parent side ---------------------------------------------------------------------------


class _SafeUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"a worker's message names {module}.{name}: refused")


def loads(data: bytes) -> Any:
    """A worker's message (pickled by ``Connection.send``) read as plain data only: None,
    bools, numbers, strings, bytes, lists, tuples, dicts, sets. Anything that names a class or
    a function raises ``pickle.UnpicklingError``, and nothing runs."""
    return _SafeUnpickler(io.BytesIO(data)).load()


class _Unpacker:
    def __init__(self, spans: Any, data: bytes) -> None:
        self.spans = spans
        self.data = memoryview(data)

    def tensor(self, d: Mapping[str, Any]) -> torch.Tensor:
        dtype = _DTYPES[str(d["dtype"])]
        shape = tuple(int(s) for s in d["shape"])
        start, size = (int(x) for x in self.spans[int(d["$t"])])
        if start < 0 or size < 0 or start + size > len(self.data):
            raise ValueError("a span outside the transcript")
        if size == 0:
            return torch.empty(shape, dtype=dtype)
        raw = torch.frombuffer(bytearray(self.data[start:start + size]), dtype=torch.uint8)
        return raw.view(dtype).reshape(shape)

    def unpack(self, v: Any, depth: int = 0) -> Any:
        if depth > _DEPTH:
            raise ValueError("nested too deep")
        if isinstance(v, dict):
            if "$t" in v:
                return self.tensor(v)
            if "$tuple" in v:
                return tuple(self.unpack(x, depth + 1) for x in v["$tuple"])
            if "$complex" in v:
                return complex(float(v["$complex"][0]), float(v["$complex"][1]))
            if "$sens" in v:
                name, dtype, unit, own, deltas = v["$sens"]
                return InputSensitivity(str(name), str(dtype), float(unit), float(own),
                                        self.unpack(deltas, depth + 1))
            if "$dict" in v:
                return {str(k): self.unpack(x, depth + 1) for k, x in v["$dict"].items()}
            raise ValueError("an unknown object in a transcript")
        if isinstance(v, list):
            return [self.unpack(x, depth + 1) for x in v]
        if v is None or isinstance(v, (bool, int, float, str)):
            return v
        raise ValueError(f"a {type(v).__name__} in a transcript")


def _tolerance(d: Mapping[str, Any]) -> Tolerance:
    outputs = d.get("outputs")
    dtypes = d.get("dtypes")
    return Tolerance(
        rtol=d.get("rtol"), atol=d.get("atol"), equal_nan=bool(d.get("equal_nan", True)),
        adaptive=bool(d.get("adaptive", True)), follow=str(d.get("follow", "output")),
        dtypes=None if dtypes is None else {str(k): tuple(v) for k, v in dtypes},
        outputs=None if outputs is None else {k: _tolerance(v) for k, v in outputs})


class _Recorded(Evidence):
    """The conditioning facts a worker's oracle consulted, answered from what it recorded;
    a fact it did not record is the answer of a reference that says nothing (no wider band)."""

    def __init__(self, expected: tuple[Any, ...], native: tuple[Any, ...] | None,
                 facts: Mapping[str, Any]) -> None:
        super().__init__(lambda values: None, {}, {},
                         native=None if native is None else (lambda: native),
                         expected=expected)
        for key in ("sensitivity", "magnitude"):
            if key in facts:
                value = facts[key]
                if key == "magnitude" and value is not None:
                    value = (tuple(value[0]), tuple(value[1]))
                self._cache[key] = value
        self._extreme = [tuple(x) for x in facts.get("extreme") or []]

    def extreme_inputs(self) -> list[tuple[str, float, str]]:
        return [(str(a), float(b), str(c)) for a, b, c in self._extreme]


def _compare_again(mode: str, c: Mapping[str, Any], data: bytes,
                   target: Target | None, case: Any) -> Any:
    """The parent's comparison of one claim: a Comparison. With the ``target`` and the
    ``case`` (the parent's own), what the comparison is told (tolerance, output names,
    reduction length, whether the reference got float64 copies) is derived from them, not
    read from the claim."""
    u = _Unpacker(c["spans"], data)
    outputs = u.unpack(c["outputs"])
    outputs = () if outputs is None else outputs
    expected = u.unpack(c["expected"])
    native = u.unpack(c.get("native"))
    facts = u.unpack(c.get("facts") or {})
    compiled = mode == "compiled"
    if target is not None and case is not None:
        tolerance = tolerance_of(target, case, outputs, compiled)
        names = output_names(target)
        reduction = case.dims.get(target.reduction, 1) if target.reduction else 1
        upcast = target.upcast
    else:
        tolerance = _tolerance(c["tolerance"])
        names = c.get("names")
        names = None if names is None else tuple(None if n is None else str(n) for n in names)
        reduction = int(c.get("reduction_length", 1))
        upcast = bool(c.get("upcast"))
    evidence = _Recorded(expected, native, facts) if upcast else None
    return oracle.compare(
        outputs, expected, tolerance=tolerance, magnitude=u.unpack(c.get("magnitude")),
        reduction_length=max(1, int(reduction)),
        native=(lambda: native) if upcast and native is not None else None,
        compiled=compiled, evidence=evidence, names=names)


#: the modes whose passes a worker must prove (the others compare nothing)
CHECKED_MODES = ("interpret", "compiled")


def recheck(outcome: Outcome, sent: Any, target: Target | None = None, case: Any = None,
            asked: Sequence[str] = ()) -> tuple[Outcome, list[str]]:
    """In the parent: ``outcome`` (a worker's) with every mode it reports as passing compared
    again from ``sent`` (its :func:`transcript`, or None), and its verdict computed here;
    ``target`` and ``case`` (the parent's own :class:`~fuzzkern.case.model.Case`): what the
    comparison is told comes from them (:func:`_compare_again`); ``asked``: the modes the
    case was run in (a pass must hold the result of each the target has). Returns the
    outcome and the
    modes whose pass the parent did not confirm (the worker's judge was tampered with: the
    caller replaces that worker)."""
    claims = sent.get("claims") if isinstance(sent, dict) else None
    data = sent.get("data") if isinstance(sent, dict) else None
    claims = claims if isinstance(claims, dict) else {}
    if isinstance(data, str):  # a JSON line's (fuzzkern.execution._sanitized_worker)
        try:
            data = base64.b64decode(data, validate=True)
        except ValueError:
            data = b""
    data = data if isinstance(data, bytes) else b""
    refused: list[str] = []
    for mode, result in list(outcome.modes.items()):
        if mode not in CHECKED_MODES or result.status != "ok":
            continue
        c = claims.get(mode)
        why = None
        if isinstance(c, dict) and isinstance(c.get("unchecked"), str):
            result.detail["unchecked"] = (f"this pass was not compared again outside the "
                                          f"worker: {c['unchecked'][:200]}")
            continue
        if not isinstance(c, dict):
            why = "sent no outputs to compare"
            comparison = None
        elif "unread" in c:
            why = f"sent no outputs the parent can read ({str(c['unread'])[:200]})"
            comparison = None
        else:
            try:
                comparison = _compare_again(mode, c, data, target, case)
            except Exception as e:  # a transcript that does not read: not a pass
                why, comparison = f"sent outputs that do not read ({type(e).__name__})", None
            else:
                if comparison.ok:
                    continue
                why = "fuzzkern's own comparison of its outputs fails"
        refused.append(mode)
        words = (f"the worker reported {mode} mode passing but {why} (compared again in the "
                 "parent process, which runs no host code): the worker's judge was tampered "
                 "with")
        outcome.modes[mode] = ModeResult(
            mode, "mismatch" if comparison is not None else "error", comparison,
            error=None if comparison is not None else words,
            detail={**result.detail, "rechecked": words}, seconds=result.seconds)
    missing = [m for m in asked if m in CHECKED_MODES and m not in outcome.modes
               and (target is None or m in target.modes)]
    if outcome.verdict == Verdict.PASS and (
            missing or not any(m in CHECKED_MODES for m in outcome.modes)):
        refused.append("worker")
        outcome.verdict = Verdict.ERROR
        outcome.message = (f"the worker reported a pass without the result of "
                           f"{' and '.join(missing) + ' mode' if missing else 'any mode'}: "
                           "its judge was tampered with")
    elif any(m in CHECKED_MODES for m in outcome.modes):
        verdict, reason = verdict_of(outcome.modes)
        words = outcome.modes[refused[0]].detail["rechecked"] if refused else ""
        if words and words not in reason:
            reason = f"{reason} ({words})"
        outcome.verdict, outcome.message = verdict, reason
        outcome.score = max((oracle.score(r.comparison) for r in outcome.modes.values()
                             if r.comparison), default=0.0)
    return outcome, refused
