"""fuzzkern targets for flash-linear-attention (fla-core 0.6.0): its autotuned Triton ops.

Each target calls an op of ``fla.ops`` or ``fla.modules`` exactly as its docstring shows
(``[B, T, H, K]`` inputs, log-space gates, an initial state of shape ``[B, H, K, V]``) and
returns its outputs and, for the ``.backward`` targets, the gradients autograd gets from the
library's own backward kernels. Each reference is the op's definition in plain torch: the
recurrence ``S_t = decay_t * S_{t-1} + k_t v_t^T`` (the delta rule: ``+ k_t beta_t (v_t -
S_{t-1}^T k_t)^T``), ``o_t = scale * q_t^T S_t``, one time step at a time on float64 CPU
copies, and torch autograd over it for gradients; never fla's chunked code. Input domains are
the docstrings': gates in log space (``<= 0``), ``beta`` in ``(0, 1)``, keys L2-normalized for
the delta rules (by the op itself: ``use_qk_l2norm_in_kernel=True``).

Shapes are small so that interpreted cases finish (the recurrent kernels cost 0.3-0.5 s per
program in the interpreter): ``T <= 64`` (one chunk of 64, or a few of fla's 16-row
sub-chunks), ``H <= 2``, head dims 16, 32 or 64 (``tl.dot`` needs every dim >= 16 compiled).
fla is imported when a case first runs, so listing the targets needs neither fla nor a GPU.

Install (pure Python; ``--no-deps``: it pins a torch of its own) and run::

    pip install --no-deps fla-core==0.6.0 einops==0.8.2
    fuzzkern run examples/fla/ --budget 5m --modes interpret
    fuzzkern run examples/fla/ --budget 5m --modes compiled      # on a GPU
"""

from __future__ import annotations

import importlib

import torch
from hypothesis import strategies as st

import fuzzkern
from fuzzkern import strategies as fks

F32 = ["float32"]
FLOATS = ["float32", "bfloat16", "float16"]

#: activations as models see them: no ±inf, dtype max or NaN (a NaN anywhere in a sequence
#: reaches every later step of a recurrence, in the reference as in the kernel)
REAL = ("small_ints", "normal", "uniform", "negative")
ACT = fks.values(distributions=REAL, specials=["-0.0", "subnormal", "tiny"])
#: norms' inputs: NaN kept (a NaN row stays a NaN row)
NORM_ACT = fks.values(distributions=REAL, specials=["nan", "-0.0", "subnormal", "tiny"])
#: upstream gradients and states: finite
GRAD = fks.values(distributions=REAL, specials=False)
#: log-space decays, as the docstrings' examples draw them (``F.logsigmoid``): in [-1, 0]
GATE = fks.values(distributions=REAL, min_value=-1.0, max_value=0.0, specials=False)
#: GLA's per-key decays (fla.layers.GatedLinearAttention divides logsigmoid by 16)
GATE_K = fks.values(distributions=REAL, min_value=-0.5, max_value=0.0, specials=False)
#: delta-rule step sizes, post-sigmoid
BETA = fks.values(distributions=REAL, min_value=0.0, max_value=1.0, exclude_min=True,
                  exclude_max=True, specials=False)
EPS = st.sampled_from([1e-6, 1e-5, 1e-2])

#: chunked and recurrent attention: fla computes in float32 whatever the input dtype, and
#: rounds q, k, v, the gated keys and the intra-chunk products to the input dtype before each
#: ``tl.dot``. The states (``ht``, ``dh0``) are float32 whatever the inputs: they carry the
#: inputs' rounding, so they get one tolerance for every input dtype.
STATE_TOL = fuzzkern.Tolerance(rtol=2e-2, atol=2e-2)
STATES = {"ht": STATE_TOL, "dh0": STATE_TOL}
ATTN_TOL = fuzzkern.Tolerance(dtypes={"float32": (1e-3, 1e-3), "float16": (1e-2, 1e-2),
                                      "bfloat16": (5e-2, 5e-2)}, outputs=STATES)
#: gradients pass through twice as many low-precision products (dA, the gated q and k)
BWD_TOL = fuzzkern.Tolerance(dtypes={"float32": (1e-3, 1e-3), "float16": (2e-2, 2e-2),
                                     "bfloat16": (1e-1, 1e-1)}, outputs=STATES)
#: normalizations cancel (x - mean): an absolute floor at the scale of their rounding
NORM_TOL = fuzzkern.Tolerance(atol=1e-4, dtypes={"float16": (1e-2, 1e-3),
                                                 "bfloat16": (5e-2, 1e-2)})

HEAD = st.sampled_from([16, 32, 64])
ATTN_DIMS = {"B": fks.sizes(max_value=2), "T": fks.sizes(max_value=64),
             "H": fks.sizes(max_value=2), "K": HEAD, "V": HEAD}


def _fla(module: str):
    """An fla module, imported when a case first runs (listing targets needs no fla)."""
    return importlib.import_module(f"fla.{module}")


def _target(name, launcher, reference, inputs, dims=ATTN_DIMS, tolerance=ATTN_TOL, **options):
    return fuzzkern.Target(name=f"fla.{name}", launcher=launcher, reference=reference,
                           inputs=inputs, dims=dims, tolerance=tolerance, **options)


def _backward(outputs, grads_out, leaves):
    """Run backward from ``outputs`` with ``grads_out``; the leaves' gradients (0 if unused)."""
    pairs = [(o, g) for o, g in zip(outputs, grads_out, strict=True)
             if o is not None and o.requires_grad]
    torch.autograd.backward([o for o, _ in pairs], [g for _, g in pairs])
    return tuple(torch.zeros_like(t) if t.grad is None else t.grad for t in leaves)


def _ref_grads(fn, leaves, grads_out):
    """Reference outputs and the leaves' gradients by torch autograd (references run under
    no_grad)."""
    with torch.enable_grad():
        leaves = [t.detach().requires_grad_(True) for t in leaves]
        outs = fn(*leaves)
        grads = torch.autograd.grad(outs, leaves, grads_out, allow_unused=True)
    grads = tuple(torch.zeros_like(t) if g is None else g
                  for t, g in zip(leaves, grads, strict=True))
    return tuple(o.detach() for o in outs) + grads


# -- the recurrence every linear-attention op computes ------------------------------------------


def _l2(x):
    return x / torch.sqrt((x * x).sum(-1, keepdim=True) + 1e-6)


def _recurrence(q, k, v, h0=None, g=None, gk=None, beta=None, scale=None):
    """``o[b,t,h] = scale * q_t^T S_t``, one step at a time (inputs ``[B, T, H, ...]``).

    ``g``: ``[B, T, H]`` log decay per head; ``gk``: ``[B, T, H, K]`` per key dim; ``beta``:
    ``[B, T, H]``, the delta rule's step (``S += k (beta (v - S^T k))^T``). Returns ``(o, S_T)``.
    """
    B, T, H, K = q.shape
    scale = K ** -0.5 if scale is None else scale
    S = q.new_zeros(B, H, K, v.shape[-1]) if h0 is None else h0
    outs = []
    for t in range(T):
        if g is not None:
            S = S * g[:, t].exp()[..., None, None]
        if gk is not None:
            S = S * gk[:, t].exp()[..., None]
        kt, vt = k[:, t], v[:, t]
        if beta is not None:
            vt = beta[:, t, :, None] * (vt - torch.einsum("bhk,bhkv->bhv", kt, S))
        S = S + kt[..., None] * vt[..., None, :]
        outs.append(torch.einsum("bhk,bhkv->bhv", q[:, t] * scale, S))
    return torch.stack(outs, 1), S


def _attn_inputs(use_g=False, use_gk=False, use_beta=False, values=ACT, dtypes=FLOATS):
    """q, k, v, an optional initial state and the gates/steps an op takes, drawn together."""
    spec = dict(q=fks.tensors(("B", "T", "H", "K"), dtypes=dtypes, values=values),
                k=fks.tensors(("B", "T", "H", "K"), dtype_of="q", values=values),
                v=fks.tensors(("B", "T", "H", "V"), dtype_of="q", values=values))
    if use_g:
        spec["g"] = fks.tensors(("B", "T", "H"), dtype_of="q", values=GATE)
    if use_gk:
        spec["gk"] = fks.tensors(("B", "T", "H", "K"), dtype_of="q", values=GATE_K)
    if use_beta:
        spec["beta"] = fks.tensors(("B", "T", "H"), dtype_of="q", values=BETA)
    spec["h0"] = fks.tensors(("B", "H", "K", "V"), dtypes=F32, values=GRAD)
    spec["use_h0"] = st.booleans()
    return spec


def _grads_in():
    return dict(do=fks.tensors(("B", "T", "H", "V"), dtype_of="q", values=GRAD),
                dht=fks.tensors(("B", "H", "K", "V"), dtypes=F32, values=GRAD))


def _attn_pair(name, call, gates=(), l2=False, values=ACT, dtypes=FLOATS):
    """A forward target (outputs ``o`` and the final state) and a ``.backward`` target (also
    ``dq, dk, dv``, the gates' and the initial state's gradients) for ``call(q, k, v, h0,
    **gates)``, an fla op with ``output_final_state=True``."""
    use = {"use_g": "g" in gates, "use_gk": "gk" in gates, "use_beta": "beta" in gates,
           "values": values, "dtypes": dtypes}

    def reference(q, k, v, h0, use_h0, **kw):
        if l2:
            q, k = _l2(q), _l2(k)
        return _recurrence(q, k, v, h0 if use_h0 else None, **kw)

    def forward(q, k, v, h0, use_h0, **kw):
        o, ht = call(q, k, v, h0 if use_h0 else None, **kw)
        return o, ht

    def fwd_bwd(q, k, v, h0, use_h0, do, dht, **kw):
        leaves = [q, k, v] + [kw[n] for n in gates] + [h0]  # dh0 is 0 without an initial state
        for t in leaves:
            t.requires_grad_(True)
        o, ht = call(q, k, v, h0 if use_h0 else None, **kw)
        return (o.detach(), ht.detach()) + _backward((o, ht), (do, dht), leaves)

    def ref_bwd(q, k, v, h0, use_h0, do, dht, **kw):
        def fn(qq, kk, vv, *rest):
            gate = dict(zip(gates, rest[:-1], strict=True))
            if l2:
                qq, kk = _l2(qq), _l2(kk)
            return _recurrence(qq, kk, vv, rest[-1] if use_h0 else None, **gate)

        return _ref_grads(fn, [q, k, v] + [kw[n] for n in gates] + [h0], (do, dht))

    grads = ("dq", "dk", "dv") + tuple(f"d{n}" for n in gates) + ("dh0",)
    fwd = _target(name, forward, reference, fks.inputs(**_attn_inputs(**use)),
                  output_names=("o", "ht"), reduction="K")
    bwd = _target(f"{name}.backward", fwd_bwd, ref_bwd,
                  fks.inputs(**_attn_inputs(**use), **_grads_in()), tolerance=BWD_TOL,
                  output_names=("o", "ht") + grads, reduction="T")
    return fwd, bwd


# -- chunked ops ------------------------------------------------------------------------------


def _chunk_simple_gla(q, k, v, h0, g):
    return _fla("ops").chunk_simple_gla(q, k, v, g, initial_state=h0, output_final_state=True)


def _chunk_gla(q, k, v, h0, gk):
    return _fla("ops").chunk_gla(q, k, v, gk, initial_state=h0, output_final_state=True)


def _chunk_delta_rule(q, k, v, h0, beta):
    return _fla("ops").chunk_delta_rule(q, k, v, beta, initial_state=h0, output_final_state=True,
                                        use_qk_l2norm_in_kernel=True)


def _chunk_gated_delta_rule(q, k, v, h0, g, beta):
    return _fla("ops").chunk_gated_delta_rule(q, k, v, g, beta, initial_state=h0,
                                              output_final_state=True,
                                              use_qk_l2norm_in_kernel=True)


chunk_simple_gla, chunk_simple_gla_backward = _attn_pair(
    "chunk_simple_gla", _chunk_simple_gla, gates=("g",))
chunk_gla, chunk_gla_backward = _attn_pair("chunk_gla", _chunk_gla, gates=("gk",))
chunk_delta_rule, chunk_delta_rule_backward = _attn_pair(
    "chunk_delta_rule", _chunk_delta_rule, gates=("beta",), l2=True,
    dtypes=["bfloat16", "float16"])  # "does not support float32. Please use bfloat16."
chunk_gated_delta_rule, chunk_gated_delta_rule_backward = _attn_pair(
    "chunk_gated_delta_rule", _chunk_gated_delta_rule, gates=("g", "beta"), l2=True)


def _retention_gates(q):
    """RetNet's fixed per-head decays: ``log(1 - 2^(-5-h))`` for head ``h``."""
    B, T, H, _ = q.shape
    g = torch.log(1 - 2.0 ** (-5.0 - torch.arange(H, dtype=torch.float64,
                                                  device=q.device)))
    return g.to(q.dtype).expand(B, T, H)


def _retention_ref(q, k, v, h0, use_h0):
    return _recurrence(q, k, v, h0 if use_h0 else None, g=_retention_gates(q))


def _chunk_retention(q, k, v, h0, use_h0):
    return _fla("ops").chunk_retention(q, k, v, initial_state=h0 if use_h0 else None,
                                       output_final_state=True)


chunk_retention = _target("chunk_retention", _chunk_retention, _retention_ref,
                          fks.inputs(**_attn_inputs()), output_names=("o", "ht"), reduction="K")


def _chunk_linear_attn(q, k, v, h0, use_h0):
    return _fla("ops").chunk_linear_attn(q, k, v, initial_state=h0 if use_h0 else None,
                                         output_final_state=True, normalize=False)


chunk_linear_attn = _target(
    "chunk_linear_attn", _chunk_linear_attn,
    lambda q, k, v, h0, use_h0: _recurrence(q, k, v, h0 if use_h0 else None),
    fks.inputs(**_attn_inputs()), output_names=("o", "ht"), reduction="K")


def _parallel_simple_gla_ref(q, k, v, g):
    return _recurrence(q, k, v, g=g)[0]


parallel_simple_gla = _target(
    "parallel_simple_gla", lambda q, k, v, g: _fla("ops").parallel_simple_gla(q, k, v, g)[0],
    _parallel_simple_gla_ref,
    fks.inputs(**{n: s for n, s in _attn_inputs(use_g=True).items() if n in "qkvg"}),
    reduction="K")


# -- fused recurrent ops (one program per head and value block, a loop over T) ----------------


def _fr_simple_gla(q, k, v, h0, g):
    return _fla("ops").fused_recurrent_simple_gla(q, k, v, g, initial_state=h0,
                                                  output_final_state=True)


def _fr_gla(q, k, v, h0, gk):
    return _fla("ops").fused_recurrent_gla(q, k, v, gk=gk, initial_state=h0,
                                           output_final_state=True)


def _fr_delta_rule(q, k, v, h0, beta):
    return _fla("ops").fused_recurrent_delta_rule(q, k, v, beta, initial_state=h0,
                                                  output_final_state=True,
                                                  use_qk_l2norm_in_kernel=True)


def _fr_gated_delta_rule(q, k, v, h0, g, beta):
    return _fla("ops").fused_recurrent_gated_delta_rule(q, k, v, g, beta=beta, initial_state=h0,
                                                        output_final_state=True,
                                                        use_qk_l2norm_in_kernel=True)


fused_recurrent_simple_gla, fused_recurrent_simple_gla_backward = _attn_pair(
    "fused_recurrent_simple_gla", _fr_simple_gla, gates=("g",))
fused_recurrent_gla = _attn_pair("fused_recurrent_gla", _fr_gla, gates=("gk",))[0]
fused_recurrent_delta_rule, fused_recurrent_delta_rule_backward = _attn_pair(
    "fused_recurrent_delta_rule", _fr_delta_rule, gates=("beta",), l2=True)
fused_recurrent_gated_delta_rule = _attn_pair(
    "fused_recurrent_gated_delta_rule", _fr_gated_delta_rule, gates=("g", "beta"), l2=True)[0]


def _fr_retention(q, k, v, h0, use_h0):
    return _fla("ops").fused_recurrent_retention(q, k, v, initial_state=h0 if use_h0 else None,
                                                 output_final_state=True)


fused_recurrent_retention = _target(
    "fused_recurrent_retention", _fr_retention, _retention_ref, fks.inputs(**_attn_inputs()),
    output_names=("o", "ht"), reduction="K")

HGRN_DIMS = {"B": fks.sizes(max_value=2), "T": fks.sizes(max_value=64),
             "D": fks.sizes(max_value=80)}


def _hgrn_ref(x, g, h0, do, use_h0):
    def fn(xx, gg, *state):
        h = state[0] if state else torch.zeros_like(xx[:, 0])
        outs = []
        for t in range(xx.shape[1]):
            h = gg[:, t].exp() * h + xx[:, t]
            outs.append(h)
        return (torch.stack(outs, 1),)

    return _ref_grads(fn, [x, g] + ([h0] if use_h0 else []), (do,))


def _hgrn(x, g, h0, do, use_h0):
    leaves = [x, g] + ([h0] if use_h0 else [])
    for t in leaves:
        t.requires_grad_(True)
    o, _ = _fla("ops").fused_recurrent_hgrn(x, g, initial_state=h0 if use_h0 else None)
    return (o.detach(),) + _backward((o,), (do,), leaves)


fused_recurrent_hgrn = _target(
    "fused_recurrent_hgrn", _hgrn, _hgrn_ref,
    fks.inputs(x=fks.tensors(("B", "T", "D"), dtypes=FLOATS, values=ACT),
               g=fks.tensors(("B", "T", "D"), dtype_of="x", values=GATE),
               h0=fks.tensors(("B", "D"), dtypes=F32, values=GRAD),
               do=fks.tensors(("B", "T", "D"), dtype_of="x", values=GRAD), use_h0=st.booleans()),
    dims=HGRN_DIMS, reduction="T")


# -- norms (fla.modules): forward and backward ------------------------------------------------

NORM_DIMS = {"N": fks.sizes(max_value=8), "D": fks.sizes(max_value=96)}


def _norm_inputs(extra=(), dims=("N", "D"), wdim="D"):
    spec = dict(x=fks.tensors(dims, dtypes=FLOATS, values=NORM_ACT),
                w=fks.tensors((wdim,), dtypes=F32, values=ACT),
                b=fks.tensors((wdim,), dtypes=F32, values=ACT),
                dy=fks.tensors(dims, dtype_of="x", values=GRAD), eps=EPS)
    return {n: s for n, s in spec.items() if n in ("x", "dy", "eps") + tuple(extra)}


def _ln(x, w, b, eps, rms=False, groups=1):
    xs = x.reshape(*x.shape[:-1], groups, -1)
    if not rms:
        xs = xs - xs.mean(-1, keepdim=True)
    y = (xs * torch.rsqrt(xs.pow(2).mean(-1, keepdim=True) + eps)).reshape(x.shape)
    return y * w + (0 if b is None else b)


def _norm_target(name, call, rms=False, groups=1, bias=True, dims=NORM_DIMS):
    leaves_of = ("x", "w", "b") if bias else ("x", "w")

    def launcher(x, w, dy, eps, b=None):
        leaves = [x, w] + ([b] if bias else [])
        for t in leaves:
            t.requires_grad_(True)
        y = call(x, w, b, eps)
        return (y.detach(),) + _backward((y,), (dy,), leaves)

    def reference(x, w, dy, eps, b=None):
        leaves = [x, w] + ([b] if bias else [])
        return _ref_grads(lambda *t: (_ln(t[0], t[1], t[2] if bias else None, eps, rms, groups),),
                          leaves, (dy,))

    return _target(name, launcher, reference, fks.inputs(**_norm_inputs(leaves_of[1:])),
                   dims=dims, tolerance=NORM_TOL, reduction="D",
                   output_names=("y",) + tuple(f"d{n}" for n in leaves_of))


def _norm_module(fn_name, **kw):
    def call(x, w, b, eps):
        return getattr(_fla("modules.norm.layernorm"), fn_name)(x, w, b, eps=eps, **kw)
    return call


layer_norm = _norm_target("layer_norm", _norm_module("layer_norm"))
rms_norm = _norm_target("rms_norm", _norm_module("rms_norm"), rms=True, bias=False)
GROUPS = 2
group_norm = _norm_target(
    "group_norm", _norm_module("group_norm", num_groups=GROUPS), groups=GROUPS,
    dims={"N": fks.sizes(max_value=8), "G": fks.sizes(max_value=48), "D": f"{GROUPS}*G"})


def _l2norm(x, dy, eps):
    x.requires_grad_(True)
    y = _fla("modules.norm.l2norm").l2norm(x, eps=eps)
    return (y.detach(),) + _backward((y,), (dy,), [x])


l2norm = _target(
    "l2norm", _l2norm,
    lambda x, dy, eps: _ref_grads(
        lambda t: (t / torch.sqrt((t * t).sum(-1, keepdim=True) + eps),), [x], (dy,)),
    fks.inputs(**_norm_inputs()), dims=NORM_DIMS, tolerance=NORM_TOL, reduction="D",
    output_names=("y", "dx"))


def _rms_norm_gated(x, g, w, dy, eps):
    for t in (x, g, w):
        t.requires_grad_(True)
    y = _fla("modules.norm.fused_norm_gate").rms_norm_gated(x, g, w, None, eps=eps)
    return (y.detach(),) + _backward((y,), (dy,), [x, g, w])


rms_norm_gated = _target(
    "rms_norm_gated", _rms_norm_gated,
    lambda x, g, w, dy, eps: _ref_grads(
        lambda a, b, c: (_ln(a, c, None, eps, rms=True) * b * torch.sigmoid(b),),
        [x, g, w], (dy,)),
    fks.inputs(**_norm_inputs(("w",)), g=fks.tensors(("N", "D"), dtype_of="x", values=ACT)),
    dims=NORM_DIMS, tolerance=NORM_TOL, reduction="D", output_names=("y", "dx", "dg", "dw"))


# -- utilities the chunked ops are built from (fla.ops.utils, fla.modules) --------------------

CHUNK = st.sampled_from([16, 32, 64])


def _local_cumsum_ref(g, chunk, reverse):
    B, T, H = g.shape
    pad = (-T) % chunk
    gp = torch.nn.functional.pad(g, (0, 0, 0, pad)).reshape(B, -1, chunk, H)
    c = gp.flip(2).cumsum(2).flip(2) if reverse else gp.cumsum(2)
    return c.reshape(B, -1, H)[:, :T]


chunk_local_cumsum = _target(
    "chunk_local_cumsum",
    lambda g, chunk, reverse: _fla("ops.utils.cumsum").chunk_local_cumsum(
        g, chunk_size=chunk, reverse=reverse),
    _local_cumsum_ref,
    fks.inputs(g=fks.tensors(("B", "T", "H"), dtypes=FLOATS, values=ACT), chunk=CHUNK,
               reverse=st.booleans()),
    dims={"B": fks.sizes(max_value=2), "T": fks.sizes(max_value=130),
          "H": fks.sizes(max_value=4)},
    tolerance=fuzzkern.Tolerance(), reduction="T")


def _strict_lower(A):
    """``A`` ``[B, T, H, BT]`` with each chunk's rows strictly lower triangular (row ``t`` of a
    chunk keeps columns ``< t % BT``), as solve_tril's docstring requires."""
    BT = A.shape[-1]
    strict = torch.ones(BT, BT, dtype=torch.bool, device=A.device).tril(-1)
    rows = torch.arange(A.shape[1], device=A.device) % BT
    return torch.where(strict[rows][None, :, None, :], A, A.new_zeros(()))


def _solve_tril_ref(A):
    A = _strict_lower(A)
    B, T, H, BT = A.shape
    out = torch.zeros_like(A)
    for s in range(0, T, BT):
        n = min(BT, T - s)
        blk = A[:, s:s + n, :, :n].permute(0, 2, 1, 3)
        inv = torch.linalg.inv(torch.eye(n, dtype=A.dtype, device=A.device) + blk)
        out[:, s:s + n, :, :n] = inv.permute(0, 2, 1, 3)
    return out


#: strictly lower-triangular blocks as the delta rule builds them (beta * K K^T of unit keys):
#: small entries, so that ``I + A`` is well conditioned
TRIL = fks.values(distributions=("normal", "uniform"), min_value=-0.25, max_value=0.25,
                  specials=False)

solve_tril = _target(
    "solve_tril",
    lambda A: _fla("ops.utils.solve_tril").solve_tril(_strict_lower(A).contiguous()),
    _solve_tril_ref,
    fks.inputs(A=fks.tensors(("B", "T", "H", "BT"), dtypes=F32, values=TRIL)),
    dims={"B": fks.sizes(max_value=2), "T": fks.sizes(max_value=64),
          "H": fks.sizes(max_value=2), "BT": CHUNK},
    tolerance=fuzzkern.Tolerance(rtol=1e-4, atol=1e-5))


logsumexp = _target(
    "logsumexp", lambda x: _fla("ops.utils.logsumexp").logsumexp_fwd(x),
    lambda x: torch.logsumexp(x, -1),
    fks.inputs(x=fks.tensors(("N", "D"), dtypes=FLOATS, values=NORM_ACT)),
    dims={"N": fks.sizes(max_value=16), "D": fks.sizes(max_value=200)},
    tolerance=fuzzkern.Tolerance(), reduction="D")

MATMUL = {"M": fks.sizes(max_value=48), "K": fks.sizes(max_value=48),
          "N": fks.sizes(max_value=48)}
FINITE = fks.values(distributions=REAL, specials=False)

matmul = _target(
    "matmul", lambda a, b, activation: _fla("ops.utils.matmul").matmul(a, b, activation),
    lambda a, b, activation: {"": lambda y: y, "relu": torch.relu, "sigmoid": torch.sigmoid,
                              "tanh": torch.tanh}[activation](a @ b),
    fks.inputs(a=fks.tensors(("M", "K"), dtypes=["float32", "float16", "bfloat16"],
                             values=FINITE),
               b=fks.tensors(("K", "N"), dtype_of="a", values=FINITE),
               activation=st.sampled_from(["", "relu", "sigmoid", "tanh"])),
    dims=MATMUL, tolerance=fuzzkern.Tolerance(), reduction="K")

TOKENS = {"B": fks.sizes(max_value=2), "T": fks.sizes(max_value=40),
          "D": fks.sizes(max_value=96)}


def _token_shift(x, dy):
    x.requires_grad_(True)
    y = _fla("modules.token_shift").token_shift(x)
    return (y.detach(),) + _backward((y,), (dy,), [x])


def _token_shift_ref(x, dy):
    def fn(t):
        shifted = torch.nn.functional.pad(t, (0, 0, 1, 0))[:, :-1]
        return (shifted - t,)
    return _ref_grads(fn, [x], (dy,))


token_shift = _target(
    "token_shift", _token_shift, _token_shift_ref,
    fks.inputs(x=fks.tensors(("B", "T", "D"), dtypes=FLOATS, values=NORM_ACT),
               dy=fks.tensors(("B", "T", "D"), dtype_of="x", values=GRAD)),
    dims=TOKENS, tolerance=fuzzkern.Tolerance(), output_names=("y", "dx"))


def _logsigmoid(x, dy, temperature):
    x.requires_grad_(True)
    y = _fla("modules.activations").logsigmoid(x, temperature)
    return (y.detach(),) + _backward((y,), (dy,), [x])


logsigmoid = _target(
    "logsigmoid", _logsigmoid,
    lambda x, dy, temperature: _ref_grads(
        lambda t: (torch.nn.functional.logsigmoid(t) / temperature,), [x], (dy,)),
    fks.inputs(x=fks.tensors(("N", "D"), dtypes=FLOATS, values=NORM_ACT),
               dy=fks.tensors(("N", "D"), dtype_of="x", values=GRAD),
               temperature=st.sampled_from([1.0, 16.0])),
    dims={"N": fks.sizes(max_value=16), "D": fks.sizes(max_value=200)},
    tolerance=fuzzkern.Tolerance(), output_names=("y", "dx"))
