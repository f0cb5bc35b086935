"""fuzzkern targets for Liger-Kernel 0.8.5 ops, forward and backward.

Each target calls a Liger autograd Function exactly as a model does and returns its outputs
and gradients; each reference is written from the op's definition in plain torch (autograd on
float64 copies), never from Liger's code. Input domains are declared, not patched in the
launcher: class ids in ``[0, V)`` with ``ignore_index`` planted, probability and
log-probability rows, positive ``eps``, even head dims, ``C = G*K`` channels; inputs Liger
overwrites on purpose (cross-entropy writes its gradient into the logits, RoPE rotates q and k
in place, backward passes reuse ``dY``) are declared ``clobbers=``, so no launcher clones.

Run them (liger-kernel is the ``liger`` extra: ``pip install --no-deps liger-kernel==0.8.5``)::

    fuzzkern run examples/liger/ --budget 5m --modes interpret
"""

from __future__ import annotations

import torch
from hypothesis import strategies as st

import fuzzkern
from fuzzkern import strategies as fks

F32 = ["float32"]
FLOATS = ["float32", "bfloat16"]
IGNORE = -100

#: activations and weights as models see them: no ±inf or dtype-max (an overflowing input is
#: the format's limit, and inf times 0 is NaN in one formula, inf in another), NaN kept
REAL = ("small_ints", "normal", "uniform", "negative")
ACT = fks.values(distributions=REAL, specials=["nan", "-0.0", "subnormal", "tiny"])
#: logits: also -inf (a masked class)
LOGITS = fks.values(distributions=REAL, specials=["nan", "-inf", "-0.0", "subnormal", "tiny"])
#: float32 backward passes of normalizations cancel (dy - mean(dy) - y*mean(dy*y)): an
#: absolute floor at the scale of their rounding
NORM_TOL = fuzzkern.Tolerance(atol=1e-4)
#: upstream gradients: finite (a NaN gradient times a zero is NaN in one formula, 0 in another)
GRAD = fks.values(distributions=REAL, specials=False)


def _lazy(module: str):
    """A Liger ops module, imported when a case first runs (listing targets needs no Liger)."""
    import importlib

    return importlib.import_module(f"liger_kernel.ops.{module}")


def _backward(outputs, grads_out, leaves):
    """Run backward from ``outputs`` with ``grads_out`` and return the leaves' gradients."""
    torch.autograd.backward(outputs, grads_out)
    return tuple(leaf.grad for leaf in leaves)


def _ref_grads(fn, leaves, grads_out):
    """Reference outputs and gradients by torch autograd (references run under no_grad)."""
    with torch.enable_grad():
        leaves = [t.detach().requires_grad_(True) for t in leaves]
        outs = fn(*leaves)
        outs = outs if isinstance(outs, tuple) else (outs,)
        grads = torch.autograd.grad(outs, leaves, grads_out, allow_unused=True)
    return tuple(o.detach() for o in outs) + tuple(grads)


def _labels(max_value="V"):
    """Class ids in [0, V) with ignore_index planted at a few positions."""
    return fks.tensors(("N",), dtypes=["int64"], layout=False,
                       values=fks.values(min_value=0, max_value=max_value, exclude_max=True,
                                         specials=["min", "max", IGNORE]))


ROWS = {"N": fks.sizes(max_value=8), "V": fks.sizes(max_value=64)}


# -- cross-entropy ----------------------------------------------------------------------------


def _ce_reference(logits, target):
    valid = target != IGNORE
    if not bool(valid.any()):
        # Liger's convention: 0 when every label is ignored, also where logits hold NaN or inf
        # (``logits.sum() * 0`` would be NaN there); the gradient is 0 everywhere
        return (torch.where(torch.isfinite(logits), logits, 0.0) * 0).sum()
    lse = torch.logsumexp(logits[valid], -1)
    picked = logits[valid].gather(-1, target[valid][:, None])[:, 0]
    return (lse - picked).mean()


def _ce_forward_only(logits, target):
    ce = _lazy("cross_entropy")
    return ce.LigerCrossEntropyFunction.apply(logits, target, None, IGNORE)[0]


cross_entropy_forward = fuzzkern.Target(
    name="liger.cross_entropy.forward",
    launcher=_ce_forward_only,
    reference=_ce_reference,
    inputs=fks.inputs(logits=fks.tensors(("N", "V"), dtypes=FLOATS, values=LOGITS),
                      target=_labels()),
    dims=ROWS,
    reduction="V",
)


def _ce_fwd_bwd(logits, target):
    ce = _lazy("cross_entropy")
    logits.requires_grad_(True)
    loss = ce.LigerCrossEntropyFunction.apply(logits, target, None, IGNORE)[0]
    (grad,) = _backward(loss, None, [logits])
    return loss, grad


cross_entropy = fuzzkern.Target(
    name="liger.cross_entropy",
    launcher=_ce_fwd_bwd,
    reference=lambda logits, target: _ref_grads(
        lambda x: _ce_reference(x, target), [logits], None),
    inputs=fks.inputs(logits=fks.tensors(("N", "V"), dtypes=FLOATS, values=LOGITS),
                      target=_labels()),
    dims=ROWS,
    reduction="V",
    clobbers="logits",  # Liger stores the gradient in the logits' memory, by design
)


# -- norms ------------------------------------------------------------------------------------

NORM_DIMS = {"N": fks.sizes(max_value=8), "H": fks.sizes(max_value=64)}
EPS = st.sampled_from([1e-6, 1e-5, 1e-2])


def _rms(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def _rms_norm(x, w, dy, eps):
    rn = _lazy("rms_norm")
    x.requires_grad_(True)
    w.requires_grad_(True)
    y = rn.LigerRMSNormFunction.apply(x, w, eps)
    return (y.detach(),) + _backward(y, dy, [x, w])


rms_norm = fuzzkern.Target(
    name="liger.rms_norm",
    tolerance=NORM_TOL,
    launcher=_rms_norm,
    reference=lambda x, w, dy, eps: _ref_grads(lambda a, b: _rms(a, b, eps), [x, w], dy),
    inputs=fks.inputs(x=fks.tensors(("N", "H"), dtypes=F32, values=ACT),
                      w=fks.tensors(("H",), dtype_of="x", values=ACT),
                      dy=fks.tensors(("N", "H"), dtype_of="x", values=GRAD), eps=EPS),
    dims=NORM_DIMS,
    reduction="H",
    clobbers="dy",  # the backward writes dX into dY's memory (in_place=True, the default)
)


def _fused_add_rms_norm(x, r, w, dy, eps):
    fa = _lazy("fused_add_rms_norm")
    for t in (x, r, w):
        t.requires_grad_(True)
    y, s = fa.LigerFusedAddRMSNormFunction.apply(x, r, w, eps)
    return (y.detach(), s.detach()) + _backward(y, dy, [x, r, w])


def _add_rms_ref(x, r, w, dy, eps):
    out = _ref_grads(lambda a, b, c: (_rms(a + b, c, eps), a + b), [x, r, w],
                     (dy, torch.zeros_like(dy)))
    return out


fused_add_rms_norm = fuzzkern.Target(
    name="liger.fused_add_rms_norm",
    tolerance=NORM_TOL,
    launcher=_fused_add_rms_norm,
    reference=_add_rms_ref,
    inputs=fks.inputs(x=fks.tensors(("N", "H"), dtypes=F32, values=ACT), r=fks.tensors(("N", "H"),
                      dtype_of="x", values=ACT), w=fks.tensors(("H",), dtype_of="x", values=ACT),
                      dy=fks.tensors(("N", "H"), dtype_of="x", values=GRAD), eps=EPS),
    dims=NORM_DIMS,
    reduction="H",
    clobbers="dy",
)


def _layer_norm(x, w, b, dy, eps):
    ln = _lazy("layer_norm")
    for t in (x, w, b):
        t.requires_grad_(True)
    y = ln.LigerLayerNormFunction.apply(x, w, b, eps)
    return (y.detach(),) + _backward(y, dy, [x, w, b])


def _ln(x, w, b, eps):
    mu = x.mean(-1, keepdim=True)
    var = (x - mu).pow(2).mean(-1, keepdim=True)
    return (x - mu) / torch.sqrt(var + eps) * w + b


layer_norm = fuzzkern.Target(
    name="liger.layer_norm",
    tolerance=NORM_TOL,
    launcher=_layer_norm,
    reference=lambda x, w, b, dy, eps: _ref_grads(lambda *a: _ln(*a, eps), [x, w, b], dy),
    inputs=fks.inputs(x=fks.tensors(("N", "H"), dtypes=F32, values=ACT),
                      w=fks.tensors(("H",), dtype_of="x", values=ACT),
                      b=fks.tensors(("H",), dtype_of="x", values=ACT),
                      dy=fks.tensors(("N", "H"), dtype_of="x", values=GRAD), eps=EPS),
    dims=NORM_DIMS,
    reduction="H",
)

GROUPS = 3  # group_norm's channels are C = GROUPS * K (a derived dim)


def _group_norm(x, w, b, dy, eps):
    gn = _lazy("group_norm")
    for t in (x, w, b):
        t.requires_grad_(True)
    y = gn.LigerGroupNormFunction.apply(x, w, b, x.shape[1], GROUPS, eps)
    return (y.detach(),) + _backward(y, dy, [x, w, b])


def _gn(x, w, b, eps):
    n, c, length = x.shape
    g = x.reshape(n, GROUPS, -1)
    mu = g.mean(-1, keepdim=True)
    var = (g - mu).pow(2).mean(-1, keepdim=True)
    y = ((g - mu) / torch.sqrt(var + eps)).reshape(n, c, length)
    return y * w[:, None] + b[:, None]


group_norm = fuzzkern.Target(
    name="liger.group_norm",
    tolerance=NORM_TOL,
    launcher=_group_norm,
    reference=lambda x, w, b, dy, eps: _ref_grads(lambda *a: _gn(*a, eps), [x, w, b], dy),
    inputs=fks.inputs(x=fks.tensors(("N", "C", "L"), dtypes=F32, values=ACT),
                      w=fks.tensors(("C",), dtype_of="x", values=ACT),
                      b=fks.tensors(("C",), dtype_of="x", values=ACT),
                      dy=fks.tensors(("N", "C", "L"), dtype_of="x", values=GRAD), eps=EPS),
    dims={"N": fks.sizes(max_value=4), "K": fks.sizes(max_value=4), "C": f"{GROUPS}*K",
          "L": fks.sizes(max_value=16)},
)


def _poly_norm(x, w, b, dy, eps):
    pn = _lazy("poly_norm")
    for t in (x, w, b):
        t.requires_grad_(True)
    y = pn.LigerPolyNormFunction.apply(x, w, b, eps)
    return (y.detach(),) + _backward(y, dy, [x, w, b])


def _pn(x, w, b, eps):
    def norm(t):
        return t * torch.rsqrt(t.pow(2).mean(-1, keepdim=True) + eps)
    return w[0] * norm(x ** 3) + w[1] * norm(x ** 2) + w[2] * norm(x) + b


poly_norm = fuzzkern.Target(
    name="liger.poly_norm",
    tolerance=NORM_TOL,
    launcher=_poly_norm,
    reference=lambda x, w, b, dy, eps: _ref_grads(lambda *a: _pn(*a, eps), [x, w, b], dy),
    inputs=fks.inputs(x=fks.tensors(("N", "H"), dtypes=F32, values=ACT),
                      w=fks.tensors((3,), dtype_of="x", values=ACT),
                      b=fks.tensors((), dtype_of="x", values=ACT),
                      dy=fks.tensors(("N", "H"), dtype_of="x", values=GRAD), eps=EPS),
    dims=NORM_DIMS,
    reduction="H",
    clobbers="dy",  # in_place=True: the backward reuses dY's memory
)


# -- gated activations ------------------------------------------------------------------------

ACT_DIMS = {"N": fks.sizes(max_value=8), "H": fks.sizes(max_value=128)}


def _gated(function):
    def launch(a, b, dy):
        for t in (a, b):
            t.requires_grad_(True)
        y = function().apply(a, b)
        return (y.detach(),) + _backward(y, dy, [a, b])
    return launch


def _gated_inputs():
    return fks.inputs(a=fks.tensors(("N", "H"), dtypes=FLOATS, values=ACT),
                      b=fks.tensors(("N", "H"), dtype_of="a", values=ACT),
                      dy=fks.tensors(("N", "H"), dtype_of="a", values=GRAD))


swiglu = fuzzkern.Target(
    name="liger.swiglu",
    launcher=_gated(lambda: _lazy("swiglu").LigerSiLUMulFunction),
    reference=lambda a, b, dy: _ref_grads(lambda x, y: x * torch.sigmoid(x) * y, [a, b], dy),
    inputs=_gated_inputs(),
    dims=ACT_DIMS,
    clobbers=("a", "b"),  # the backward writes da, db over the saved a, b
)


def _gelu_tanh(x):
    return 0.5 * x * (1 + torch.tanh(0.7978845608028654 * (x + 0.044715 * x ** 3)))


geglu = fuzzkern.Target(
    name="liger.geglu",
    launcher=_gated(lambda: _lazy("geglu").LigerGELUMulFunction),
    reference=lambda a, b, dy: _ref_grads(lambda x, y: _gelu_tanh(x) * y, [a, b], dy),
    inputs=_gated_inputs(),
    dims=ACT_DIMS,
    clobbers=("a", "b"),  # the backward writes da, db over the saved a, b
)


def _relu_squared(x, dy):
    x.requires_grad_(True)
    y = _lazy("relu_squared").LigerReLUSquaredFunction.apply(x)
    return (y.detach(),) + _backward(y, dy, [x])


def _relu2(x):
    # NaN propagates, as in torch.relu(x) ** 2
    return torch.where(x > 0, x, torch.where(torch.isnan(x), x, torch.zeros_like(x))) ** 2


relu_squared = fuzzkern.Target(
    name="liger.relu_squared",
    launcher=_relu_squared,
    reference=lambda x, dy: _ref_grads(_relu2, [x], dy),
    inputs=fks.inputs(x=fks.tensors(("N", "H"), dtypes=FLOATS, values=ACT),
                      dy=fks.tensors(("N", "H"), dtype_of="x", values=GRAD)),
    dims=ACT_DIMS,
)


# -- softmax and sparsemax --------------------------------------------------------------------


def _softmax(x, dy):
    x.requires_grad_(True)
    y = _lazy("softmax").LigerSoftmaxFunction.apply(x)
    return (y.detach(),) + _backward(y, dy, [x])


softmax = fuzzkern.Target(
    name="liger.softmax",
    launcher=_softmax,
    reference=lambda x, dy: _ref_grads(
        lambda t: (t - t.amax(-1, keepdim=True)).exp()
        / (t - t.amax(-1, keepdim=True)).exp().sum(-1, keepdim=True), [x], dy),
    inputs=fks.inputs(x=fks.tensors(("N", "V"), dtypes=FLOATS, values=ACT),
                      dy=fks.tensors(("N", "V"), dtype_of="x", values=GRAD)),
    dims=ROWS,
    reduction="V",
)


def _sparsemax_ref(x):
    z, _ = torch.sort(x, dim=-1, descending=True)
    k = torch.arange(1, x.shape[-1] + 1, dtype=x.dtype)
    cs = z.cumsum(-1)
    kz = ((1 + k * z) > cs).sum(-1, keepdim=True).clamp(min=1)
    tau = (cs.gather(-1, kz - 1) - 1) / kz
    return torch.clamp(x - tau, min=0)


def _sparsemax(x, dy):
    x.requires_grad_(True)
    y = _lazy("sparsemax").LigerSparsemaxFunction.apply(x, -1)
    return (y.detach(),) + _backward(y, dy, [x])


sparsemax = fuzzkern.Target(
    name="liger.sparsemax",
    launcher=_sparsemax,
    reference=lambda x, dy: _ref_grads(_sparsemax_ref, [x], dy),
    # continuous values: an element exactly on the support's edge has no single gradient
    inputs=fks.inputs(x=fks.tensors(("N", "V"), dtypes=F32, values=fks.values(
                          distributions=["normal", "uniform", "wide"], specials=False)),
                      dy=fks.tensors(("N", "V"), dtype_of="x", values=GRAD)),
    dims={"N": fks.sizes(max_value=4), "V": fks.sizes(max_value=32)},
    reduction="V",
)


# -- divergences ------------------------------------------------------------------------------


def _kl_div(logq, p):
    logq.requires_grad_(True)
    loss = _lazy("kl_div").LigerKLDivLossFunction.apply(logq, p, "batchmean", False)
    return (loss.detach(),) + _backward(loss, None, [logq])


def _kl_ref(logq, p):
    def f(x):
        terms = torch.where(p > 0, p * (p.clamp(min=1e-300).log() - x), -p * x)
        return terms.sum() / x.shape[0]
    return _ref_grads(f, [logq], None)


kl_div = fuzzkern.Target(
    name="liger.kl_div",
    launcher=_kl_div,
    reference=_kl_ref,
    inputs=fks.inputs(logq=fks.tensors(("N", "V"), dtypes=F32,
                                       values=fks.values(rows="log_probability")),
                      p=fks.tensors(("N", "V"), dtype_of="logq",
                                    values=fks.values(rows="probability"))),
    dims=ROWS,
    reduction="V",
    tolerance=fuzzkern.Tolerance(atol=1e-6),
)


def _jsd(logq, logp):
    logq.requires_grad_(True)
    loss = _lazy("jsd").LigerJSDFunction.apply(logq, logp)
    return (loss.detach(),) + _backward(loss, None, [logq])


def _jsd_ref(logq, logp):
    def f(x):
        q, p = x.exp(), logp.exp()
        log_m = torch.logaddexp(x, logp) - torch.log(torch.tensor(2.0, dtype=x.dtype))
        # finite log-ratios: a probability that underflows to 0 adds 0 (0 * log 0 = 0)
        return 0.5 * ((q * (x - log_m)).sum() + (p * (logp - log_m)).sum()) / x.shape[0]
    return _ref_grads(f, [logq], None)


jsd = fuzzkern.Target(
    name="liger.jsd",
    launcher=_jsd,
    reference=_jsd_ref,
    inputs=fks.inputs(logq=fks.tensors(("N", "V"), dtypes=F32,
                                       values=fks.values(rows="log_probability")),
                      logp=fks.tensors(("N", "V"), dtype_of="logq",
                                       values=fks.values(rows="log_probability"))),
    dims=ROWS,
    reduction="V",
    tolerance=fuzzkern.Tolerance(atol=1e-6),
)


def _tvd(p, q, labels):
    p.requires_grad_(True)
    loss = _lazy("tvd").LigerTVDLossFunction.apply(p, q, labels, "batchmean", IGNORE)
    return (loss.detach(),) + _backward(loss, None, [p])


def _tvd_ref(p, q, labels):
    keep = (labels != IGNORE).to(p.dtype)[:, None]

    def f(x):
        n = keep.sum()
        total = (0.5 * (x - q).abs() * keep).sum()
        return total / n if n > 0 else total * 0  # nothing to average: 0
    return _ref_grads(f, [p], None)


tvd = fuzzkern.Target(
    name="liger.tvd",
    launcher=_tvd,
    reference=_tvd_ref,
    inputs=fks.inputs(p=fks.tensors(("N", "V"), dtypes=F32,
                                    values=fks.values(rows="probability")),
                      q=fks.tensors(("N", "V"), dtype_of="p",
                                    values=fks.values(rows="probability")),
                      labels=_labels()),
    dims=ROWS,
    reduction="V",
    tolerance=fuzzkern.Tolerance(atol=1e-6),
)


# -- rotary embeddings ------------------------------------------------------------------------


def _rope(q, k, cos, sin, dq, dk):
    rope_ops = _lazy("rope")
    q.requires_grad_(True)
    k.requires_grad_(True)
    # cos/sin hold the first half of each head (rotary_dim = 2 * their width)
    qo, ko = rope_ops.LigerRopeFunction.apply(q, k, cos, sin, None, 1, 2 * cos.shape[-1])
    return (qo.detach(), ko.detach()) + _backward((qo, ko), (dq, dk), [q, k])


def _rope_ref(q, k, cos, sin, dq, dk):
    c = torch.cat((cos, cos), -1)[:, None]  # (1 or B, 1, S, D): broadcast over heads
    s = torch.cat((sin, sin), -1)[:, None]

    def rot(x):
        h = x.shape[-1] // 2
        return torch.cat((-x[..., h:], x[..., :h]), -1)
    return _ref_grads(lambda a, b: (a * c + rot(a) * s, b * c + rot(b) * s), [q, k], (dq, dk))


rope = fuzzkern.Target(
    name="liger.rope",
    launcher=_rope,
    reference=_rope_ref,
    inputs=fks.inputs(q=fks.tensors(("B", "Hq", "S", "D"), dtypes=F32),
                      k=fks.tensors(("B", "Hk", "S", "D"), dtype_of="q"),
                      cos=fks.tensors((1, "S", "Dh"), dtype_of="q"),
                      sin=fks.tensors((1, "S", "Dh"), dtype_of="q"),
                      dq=fks.tensors(("B", "Hq", "S", "D"), dtype_of="q", values=GRAD),
                      dk=fks.tensors(("B", "Hk", "S", "D"), dtype_of="q", values=GRAD)),
    dims={"B": fks.sizes(max_value=3), "Hq": fks.sizes(max_value=4),
          "Hk": fks.sizes(max_value=4), "S": fks.sizes(max_value=8),
          "Dh": fks.sizes(max_value=8), "D": "2*Dh"},
    clobbers=("q", "k", "dq", "dk"),  # rotated in place, forward and backward
)
