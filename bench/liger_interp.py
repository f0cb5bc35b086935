"""How many of Liger-Kernel's ops run in Triton's interpreter under fuzzkern's adapter.

Each op runs forward and backward once on small CPU tensors inside
``fuzzkern.execution.interpreter.core.interpreter_mode`` and is compared with a torch reference
(``torch.allclose``, loose tolerances: this counts what *runs*, it is not a fidelity test).
Prints a table and writes JSON (``--json``). Needs ``liger-kernel`` (pinned 0.8.5 in the
``liger`` extra); run it with the fuzzkern you want to measure on ``PYTHONPATH``::

    python bench/liger_interp.py --json bench/results/liger-interp.json
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import sys
import traceback
import warnings
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
import triton

from fuzzkern.execution.interpreter.core import interpreter_mode


def _g(*shape: int, seed: int = 0, scale: float = 1.0) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed + 17 * len(shape))
    return (torch.randn(*shape, generator=gen) * scale).requires_grad_(True)


def _check(out: Any, ref: Any, inputs: list[torch.Tensor]) -> str | None:
    outs = out if isinstance(out, tuple) else (out,)
    refs = ref if isinstance(ref, tuple) else (ref,)
    for o, r in zip(outs, refs, strict=False):
        if o is None or r is None:
            continue
        if not torch.allclose(o.detach().float(), r.detach().float(), rtol=1e-3, atol=1e-4,
                              equal_nan=True):
            return f"forward differs: max |diff| {(o.detach() - r.detach()).abs().max():.3g}"
    return None


def _fwd_bwd(fn: Callable[..., Any], ref: Callable[..., Any],
             make: Callable[[], list[torch.Tensor]]) -> str | None:
    """None if fn matches ref forward and backward, else why not."""
    a = make()
    b = [t.detach().clone().requires_grad_(t.requires_grad) for t in a]
    with interpreter_mode():
        out = fn(*a)
        loss = (out[0] if isinstance(out, tuple) else out).float().sum()
        if loss.requires_grad:
            loss.backward()
    r = ref(*b)
    bad = _check(out, r, a)
    if bad:
        return bad
    rl = (r[0] if isinstance(r, tuple) else r).float().sum()
    if rl.requires_grad:
        rl.backward()
    for x, y in zip(a, b, strict=True):
        if x.grad is not None and y.grad is not None and not torch.allclose(
                x.grad, y.grad, rtol=1e-3, atol=1e-4, equal_nan=True):
            return f"gradient differs: max |diff| {(x.grad - y.grad).abs().max():.3g}"
    return None


def ops() -> dict[str, Callable[[], str | None]]:
    from liger_kernel.ops import (
        cross_entropy,
        dyt,
        fused_add_rms_norm,
        fused_linear_cross_entropy,
        geglu,
        group_norm,
        jsd,
        kl_div,
        layer_norm,
        poly_norm,
        qwen2vl_mrope,
        relu_squared,
        rms_norm,
        rope,
        softmax,
        sparsemax,
        swiglu,
        tvd,
    )

    def ce() -> str | None:
        tgt = torch.tensor([1, -100, 3, 0])
        return _fwd_bwd(lambda x: cross_entropy.LigerCrossEntropyFunction.apply(x, tgt, None)[0],
                        lambda x: F.cross_entropy(x, tgt), lambda: [_g(4, 5)])

    def flce() -> str | None:
        tgt = torch.tensor([1, 2, 3, 0])
        return _fwd_bwd(
            lambda h, w: fused_linear_cross_entropy.LigerFusedLinearCrossEntropyFunction.apply(
                h, w, tgt)[0],
            lambda h, w: F.cross_entropy(h @ w.T, tgt), lambda: [_g(4, 8), _g(6, 8, seed=1)])

    def rms() -> str | None:
        return _fwd_bwd(lambda x, w: rms_norm.LigerRMSNormFunction.apply(x, w, 1e-6),
                        lambda x, w: x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w,
                        lambda: [_g(3, 8), _g(8, seed=1)])

    def add_rms() -> str | None:
        def ref(x: torch.Tensor, r: torch.Tensor, w: torch.Tensor) -> Any:
            s = x + r
            return s * torch.rsqrt(s.pow(2).mean(-1, keepdim=True) + 1e-6) * w, s

        return _fwd_bwd(lambda x, r, w: fused_add_rms_norm.LigerFusedAddRMSNormFunction.apply(
            x, r, w, 1e-6), ref, lambda: [_g(3, 8), _g(3, 8, seed=2), _g(8, seed=1)])

    def ln() -> str | None:
        return _fwd_bwd(lambda x, w, b: layer_norm.LigerLayerNormFunction.apply(x, w, b, 1e-6),
                        lambda x, w, b: F.layer_norm(x, (8,), w, b, 1e-6),
                        lambda: [_g(3, 8), _g(8, seed=1), _g(8, seed=2)])

    def gn() -> str | None:
        return _fwd_bwd(
            lambda x, w, b: group_norm.LigerGroupNormFunction.apply(x, w, b, 4, 2, 1e-6),
            lambda x, w, b: F.group_norm(x, 2, w, b, 1e-6),
            lambda: [_g(2, 4, 6), _g(4, seed=1), _g(4, seed=2)])

    def sw() -> str | None:
        return _fwd_bwd(lambda a, b: swiglu.LigerSiLUMulFunction.apply(a, b),
                        lambda a, b: F.silu(a) * b, lambda: [_g(3, 8), _g(3, 8, seed=1)])

    def ge() -> str | None:
        return _fwd_bwd(lambda a, b: geglu.LigerGELUMulFunction.apply(a, b),
                        lambda a, b: F.gelu(a, approximate="tanh") * b,
                        lambda: [_g(3, 8), _g(3, 8, seed=1)])

    def kl() -> str | None:
        return _fwd_bwd(
            lambda p, q: kl_div.LigerKLDivLossFunction.apply(p, q, "batchmean", False),
            lambda p, q: F.kl_div(p, q, reduction="batchmean"),
            lambda: [torch.log_softmax(_g(3, 8), -1).detach().requires_grad_(True),
                     torch.softmax(_g(3, 8, seed=1), -1).detach()])

    def js() -> str | None:
        def ref(x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
            m = 0.5 * (x.exp() + t.exp())
            return 0.5 * ((x.exp() * (x - m.log())).sum() + (t.exp() * (t - m.log())).sum()) / 3
        return _fwd_bwd(lambda x, t: jsd.LigerJSDFunction.apply(x, t), ref,
                        lambda: [torch.log_softmax(_g(3, 8), -1).detach().requires_grad_(True),
                                 torch.log_softmax(_g(3, 8, seed=1), -1).detach()])

    def tv() -> str | None:
        return _fwd_bwd(lambda p, q: tvd.LigerTVDLossFunction.apply(p, q),
                        lambda p, q: 0.5 * (p - q).abs().sum() / 3,
                        lambda: [torch.softmax(_g(3, 8), -1).detach().requires_grad_(True),
                                 torch.softmax(_g(3, 8, seed=1), -1).detach()])

    def sm() -> str | None:
        return _fwd_bwd(lambda x: softmax.LigerSoftmaxFunction.apply(x),
                        lambda x: torch.softmax(x, -1), lambda: [_g(3, 8)])

    def spm() -> str | None:
        def ref(x: torch.Tensor) -> torch.Tensor:
            z, _ = torch.sort(x, dim=-1, descending=True)
            k = torch.arange(1, x.shape[-1] + 1, dtype=x.dtype)
            cs = z.cumsum(-1)
            support = (1 + k * z) > cs
            kz = support.sum(-1, keepdim=True)
            tau = (cs.gather(-1, kz - 1) - 1) / kz
            return torch.clamp(x - tau, min=0)
        return _fwd_bwd(lambda x: sparsemax.LigerSparsemaxFunction.apply(x, -1), ref,
                        lambda: [_g(3, 8)])

    def relu2() -> str | None:
        return _fwd_bwd(lambda x: relu_squared.LigerReLUSquaredFunction.apply(x),
                        lambda x: F.relu(x) ** 2, lambda: [_g(3, 8)])

    def dy() -> str | None:
        return _fwd_bwd(lambda x, a, g, b: dyt.LigerDyTFunction.apply(x, a, g, b),
                        lambda x, a, g, b: g * torch.tanh(a * x) + b,
                        lambda: [_g(3, 8), _g(1, seed=3), _g(8, seed=1), _g(8, seed=2)])

    def pn() -> str | None:
        def ref(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
            def n(t: torch.Tensor) -> torch.Tensor:
                return t * torch.rsqrt(t.pow(2).mean(-1, keepdim=True) + 1e-6)
            return w[0] * n(x ** 3) + w[1] * n(x ** 2) + w[2] * n(x) + b
        return _fwd_bwd(lambda x, w, b: poly_norm.LigerPolyNormFunction.apply(x, w, b, 1e-6),
                        ref, lambda: [_g(3, 8), _g(3, seed=1),
                                             torch.randn(()).requires_grad_(True)])

    def rp() -> str | None:
        def rot(x: torch.Tensor) -> torch.Tensor:
            h = x.shape[-1] // 2
            return torch.cat((-x[..., h:], x[..., :h]), -1)

        # HF convention: the two halves of cos/sin repeat (Liger loads the first half only)
        f = torch.arange(8.0).reshape(1, 4, 2) / 3
        cos, sin = torch.cos(torch.cat((f, f), -1)), torch.sin(torch.cat((f, f), -1))

        def ref(q: torch.Tensor, k: torch.Tensor) -> Any:
            c, s = cos.unsqueeze(1), sin.unsqueeze(1)
            return q * c + rot(q) * s, k * c + rot(k) * s
        return _fwd_bwd(lambda q, k: rope.LigerRopeFunction.apply(q, k, cos, sin), ref,
                        lambda: [_g(1, 2, 4, 4), _g(1, 2, 4, 4, seed=1)])

    def mrope() -> str | None:
        f = torch.arange(3 * 4 * 4.0).reshape(3, 1, 4, 4) / 7
        cos, sin = torch.cos(torch.cat((f, f), -1)), torch.sin(torch.cat((f, f), -1))
        section = [1, 1, 2]

        def rot(x: torch.Tensor) -> torch.Tensor:
            h = x.shape[-1] // 2
            return torch.cat((-x[..., h:], x[..., :h]), -1)

        def pick(t: torch.Tensor) -> torch.Tensor:
            parts = t.split(section * 2, dim=-1)
            return torch.cat([m[i % 3] for i, m in enumerate(parts)], dim=-1).unsqueeze(1)

        def ref(q: torch.Tensor, k: torch.Tensor) -> Any:
            c, s = pick(cos), pick(sin)
            return q * c + rot(q) * s, k * c + rot(k) * s
        return _fwd_bwd(lambda q, k: qwen2vl_mrope.LigerQwen2VLMRopeFunction.apply(
            q, k, cos, sin, section), ref, lambda: [_g(1, 2, 4, 8), _g(1, 2, 4, 8, seed=1)])

    return {"cross_entropy": ce, "fused_linear_cross_entropy": flce, "rms_norm": rms,
            "fused_add_rms_norm": add_rms, "layer_norm": ln, "group_norm": gn, "swiglu": sw,
            "geglu": ge, "kl_div": kl, "jsd": js, "tvd": tv, "softmax": sm, "sparsemax": spm,
            "relu_squared": relu2, "dyt": dy, "poly_norm": pn, "rope": rp,
            "qwen2vl_mrope": mrope}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="write the results here")
    parser.add_argument("--only", nargs="*", help="op names to run")
    parser.add_argument("-v", action="store_true", help="print tracebacks")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    results = {}
    for name, fn in ops().items():
        if args.only and name not in args.only:
            continue
        try:
            why = fn()
            status = "runs" if why is None else "wrong"
        except Exception as e:  # noqa: BLE001 - a measurement: every failure is a row
            inner = e
            while inner.__cause__ is not None:
                inner = inner.__cause__
            status, why = "fails", f"{type(inner).__name__}: {str(inner).splitlines()[0][:150]}"
            if "-v" in sys.argv:
                traceback.print_exception(e)
        results[name] = {"status": status, "why": why}
        print(f"{name:28s} {status:6s} {why or ''}", flush=True)
    n = sum(r["status"] == "runs" for r in results.values())
    print(f"{n}/{len(results)} Liger ops run forward+backward in the interpreter and match")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"liger_kernel": importlib.metadata.version("liger-kernel"),
                       "triton": triton.__version__, "runs": n, "ops": len(results),
                       "results": results}, fh, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
