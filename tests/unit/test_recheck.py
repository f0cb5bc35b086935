"""The parent's second comparison (:mod:`fuzzkern.judge.recheck`): a pass that rests on the
oracle's conditioning rules (7-9: the native reference, the sensitivity, the magnitude, an
overflow) is confirmed from the facts the worker's oracle recorded, never turned into a false
alarm; a pass those facts do not explain is refused. The passes are built as the runner
builds them (:meth:`fuzzkern.execution.runner._Run._judge`) and travel as a worker's message
does (pickled, read back by :func:`~fuzzkern.judge.recheck.loads`)."""

from __future__ import annotations

import pickle
from collections.abc import Callable, Mapping
from typing import Any

import torch

from fuzzkern import Tolerance
from fuzzkern.judge import recheck
from fuzzkern.judge.conditioning import Evidence
from fuzzkern.judge.oracle import compare
from fuzzkern.judge.outcome import Comparison, ModeResult, Outcome, Verdict

F64 = torch.float64


def _worker(out: Any, reference: Callable[..., Any], inputs: Mapping[str, Any],
            dims: Mapping[str, int] | None = None) -> tuple[Comparison, dict[str, Any]]:
    """The worker's comparison of ``out`` with ``reference`` at ``inputs`` (with the
    evidence, as the runner judges) and the message it sends for it."""
    values = {k: (v.double() if isinstance(v, torch.Tensor) and v.is_floating_point() else v)
              for k, v in inputs.items()}
    dtypes = {k: (v.dtype if isinstance(v, torch.Tensor) else torch.float32)
              for k, v in inputs.items() if isinstance(v, (torch.Tensor, float))}

    def call(v: Mapping[str, Any]) -> tuple[Any, ...]:
        r = reference(**v)
        return tuple(r) if isinstance(r, tuple) else (r,)

    natives: list[Any] = []

    def native() -> tuple[Any, ...]:
        natives.append(call(inputs))
        return natives[-1]

    outs = out if isinstance(out, tuple) else (out,)
    snap = recheck.snapshot(outs)
    expected = call(values)
    ev = Evidence(call, values, dtypes, native=native, dims=dims or {}, expected=expected)
    c = compare(outs, expected, tolerance=Tolerance(), evidence=ev)
    claims = {}
    if c.ok:
        claims["interpret"] = recheck.claim(
            snap, expected, magnitude=None, tolerance=Tolerance(), reduction_length=1,
            names=None, upcast=True, evidence=ev, native=natives[-1] if natives else None)
    message = pickle.dumps({"transcript": recheck.transcript(claims)})
    return c, recheck.loads(message)["transcript"]


def _parent(c: Comparison, sent: dict[str, Any]) -> tuple[Outcome, list[str]]:
    outcome = Outcome(Verdict.PASS if c.ok else Verdict.KERNEL_BUG, "",
                      {"interpret": ModeResult("interpret", "ok" if c.ok else "mismatch", c)})
    return recheck.recheck(outcome, sent)


def _sensitive_pass():
    """An fp16 axpy whose error only the sensitivity to alpha explains: (out, x, y, alpha, c,
    sent)."""
    g = torch.Generator().manual_seed(0)
    x = (torch.randn(4096, generator=g) * 100).half()
    alpha = 2.718281828459045
    y = (-(alpha * x.double()) + torch.randn(4096, generator=g, dtype=F64) * 1e-2).half()
    out = (torch.tensor(alpha, dtype=torch.float32) * x.float() + y.float()).half()
    c, sent = _worker(out, lambda x, y, alpha: alpha * x + y, {"x": x, "y": y, "alpha": alpha})
    return out, x, y, alpha, c, sent


def test_a_pass_by_the_sensitivity_is_confirmed():
    out, x, y, alpha, c, sent = _sensitive_pass()
    assert c.ok and compare((out,), ((alpha * x.double() + y.double()),)).ok is False
    assert sent["claims"]["interpret"]["facts"]["$dict"], "the oracle consulted no facts"
    outcome, refused = _parent(c, sent)
    assert refused == [] and outcome.verdict == Verdict.PASS, outcome.message


def test_a_pass_by_the_magnitude_is_confirmed():
    g = torch.Generator().manual_seed(2)
    a = (torch.randn(16, 512, generator=g) * 30).half()
    b = (torch.randn(512, 16, generator=g) * 30).half()
    out = (a.float() @ b.float()).half()
    c, sent = _worker(out, lambda a, b: a @ b, {"a": a, "b": b}, {"M": 16, "K": 512, "N": 16})
    assert c.ok, c.summary()
    outcome, refused = _parent(c, sent)
    assert refused == [] and outcome.verdict == Verdict.PASS, outcome.message


def test_a_pass_by_an_overflow_is_confirmed():
    a = torch.tensor([[1.5409960746765137, -0.293428897857666, -2.1787893772125244]])
    b = torch.full((3, 1), torch.finfo(torch.float32).max)
    for out in (torch.tensor([[float("inf")]]), torch.tensor([[float("nan")]])):
        c, sent = _worker(out, lambda a, b: a @ b, {"a": a, "b": b}, {"M": 1, "K": 3, "N": 1})
        assert c.ok, c.summary()
        outcome, refused = _parent(c, sent)
        assert refused == [] and outcome.verdict == Verdict.PASS, outcome.message


def test_a_pass_the_facts_do_not_explain_is_refused():
    """The worker's facts are what its oracle consulted: with them dropped (a tampered
    worker that passed without consulting them), the parent's comparison fails."""
    _, _, _, _, c, sent = _sensitive_pass()
    sent["claims"]["interpret"]["facts"] = {"$dict": {}}
    sent["claims"]["interpret"]["native"] = None
    outcome, refused = _parent(c, sent)
    assert refused == ["interpret"] and outcome.failed, outcome.message
    assert "compared again in the parent" in outcome.message


def test_outputs_of_every_kind_travel_intact():
    """bf16, fp8, bool, int, complex, empty, 0-dim and non-contiguous tensors, Python
    numbers and nested lists read back bit for bit."""
    t = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    outs = (t.t(), t.bfloat16(), t.to(torch.float8_e4m3fn), t > 3, t.long()[:, ::2],
            torch.complex(t, -t), torch.empty(0, 5), torch.tensor(2.5), 3, 1.5, None,
            [t[0], (t[1], 7)], torch.arange(4.0)[::2][:1], t.expand(2, 3, 4))
    snap = recheck.snapshot(outs)
    sent = recheck.loads(pickle.dumps(recheck.transcript({"interpret": {
        "outputs": snap.data, "$chunks": snap.chunks}})))
    c = sent["claims"]["interpret"]
    back = recheck._Unpacker(c["spans"], sent["data"]).unpack(c["outputs"])
    assert len(back) == len(outs)
    for a, b in zip(outs[:8], back[:8], strict=True):
        assert a.dtype == b.dtype and a.shape == b.shape
        assert torch.equal(a.view(torch.uint8) if a.dtype == torch.float8_e4m3fn else a,
                           b.view(torch.uint8) if b.dtype == torch.float8_e4m3fn else b)
    assert back[8:11] == (3, 1.5, None)
    assert torch.equal(back[11][0], t[0]) and back[11][1][1] == 7
    # a size-1 dim of stride 2 (a case's layout) and an expanded view
    assert torch.equal(back[12], outs[12]) and torch.equal(back[13], outs[13])


def test_a_pass_without_any_mode_is_refused():
    outcome, refused = recheck.recheck(Outcome(Verdict.PASS, ""), None)
    assert refused == ["worker"] and outcome.verdict == Verdict.ERROR


def test_a_pass_without_a_mode_it_was_run_in_is_refused():
    c = Comparison(ok=True)
    ok = Outcome(Verdict.PASS, "", {"interpret": ModeResult("interpret", "ok", c)})
    outcome, refused = recheck.recheck(ok, None, asked=["interpret", "compiled"])
    assert refused[-1] == "worker" and outcome.verdict == Verdict.ERROR
    assert "without the result of compiled mode" in outcome.message


def test_a_pass_of_outputs_the_parent_cannot_read_is_refused():
    """No honest pass has an output that is not a tensor (the oracle passes tensors only):
    a claim of one is a failure, not an unchecked pass."""
    snap = recheck.snapshot((object(),))
    claim = recheck.claim(snap, (torch.zeros(2),), magnitude=None, tolerance=Tolerance(),
                          reduction_length=1, names=None, upcast=True, native=None,
                          evidence=None)
    assert "unread" in claim
    c = Comparison(ok=True)
    ok = Outcome(Verdict.PASS, "", {"interpret": ModeResult("interpret", "ok", c)})
    outcome, refused = recheck.recheck(ok, recheck.transcript({"interpret": claim}))
    assert refused == ["interpret"] and outcome.failed
    assert "an output of type object" in outcome.message
