"""fuzzkern targets for FlagGems 5.0.2 entry points: pointwise, reductions, norms and matmul.

Each target calls a FlagGems op exactly as a model does (``flag_gems.mm(a, b)``,
``flag_gems.layer_norm(x, (H,), w, b, eps)``) and each reference is the op's definition in
plain torch (float64 CPU copies), never FlagGems' code. Nothing of FlagGems is patched here:
on a machine without CUDA the targets declare the GPU the library is written for
(``assume_gpu="H200"``): its wrappers' ``torch.cuda`` queries (device context, SM count,
capability, device count) answer as an H200 would while tensors stay on the CPU and the
kernels run in Triton's interpreter (docs/interpreter.md, "A declared GPU"). On a GPU the real
one answers. FlagGems picks its vendor backend at import by probing ``nvidia-smi`` and the
like; where there is none to probe its own ``GEMS_VENDOR`` setting names it (set below only
if unset). FlagGems is imported when a case first runs, so listing the targets needs neither
FlagGems nor a GPU.

Install (pure Python; ``--no-deps``: it pins a torch of its own) and run::

    pip install --no-deps flag_gems==5.0.2 sqlalchemy==2.0.48
    fuzzkern run examples/flaggems/ --budget 5m --modes interpret
    fuzzkern run examples/flaggems/ --budget 5m --modes compiled      # on a GPU

FlagGems' pointwise ops are generated code that loads through block pointers, which Triton
3.7 and later removed (``tl.make_block_ptr``): with those Tritons they end ``error`` (compiled
too); Triton 3.6 runs them.
"""

from __future__ import annotations

import math
import os

import torch
from hypothesis import strategies as st

import fuzzkern
from fuzzkern import strategies as fks

GPU = "H200"
FLOATS = ["float32", "float16", "bfloat16"]

#: activations and weights as models see them: NaN and signed zeros, no ±inf or dtype-max
REAL = ("small_ints", "normal", "uniform", "negative")
ACT = fks.values(distributions=REAL, specials=["nan", "-0.0", "subnormal", "tiny"])
#: logits: also -inf (a masked position)
LOGITS = fks.values(distributions=REAL, specials=["nan", "-inf", "-0.0", "subnormal", "tiny"])
#: matmul operands: finite (inf times 0 is NaN in one summation order, inf in another)
FINITE = fks.values(distributions=REAL, specials=False)
#: float32 normalizations cancel (x - mean): an absolute floor at the scale of their rounding
NORM_TOL = fuzzkern.Tolerance(atol=1e-4)
EPS = st.sampled_from([1e-6, 1e-5, 1e-2])

ROWS = {"N": fks.sizes(max_value=8), "H": fks.sizes(max_value=96)}


def _gems():
    """FlagGems, imported when a case first runs (inside the declared GPU)."""
    os.environ.setdefault("GEMS_VENDOR", "nvidia")
    import flag_gems

    return flag_gems


def _target(name, launcher, reference, inputs, dims=ROWS, **options):
    return fuzzkern.Target(name=f"flaggems.{name}", launcher=launcher, reference=reference,
                           inputs=inputs, dims=dims, assume_gpu=GPU, **options)


def _rows(dtypes=FLOATS, values=ACT):
    return fks.tensors(("N", "H"), dtypes=dtypes, values=values)


def _like(dims=("N", "H"), of="x", values=ACT):
    return fks.tensors(dims, dtype_of=of, values=values)


# -- pointwise --------------------------------------------------------------------------------


def _gelu_tanh(x):
    return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


exp = _target("exp", lambda x: _gems().exp(x), torch.exp, fks.inputs(x=_rows()))
rsqrt = _target("rsqrt", lambda x: _gems().rsqrt(x), torch.rsqrt, fks.inputs(x=_rows()))
sigmoid = _target("sigmoid", lambda x: _gems().sigmoid(x), torch.sigmoid, fks.inputs(x=_rows()))
silu = _target("silu", lambda x: _gems().silu(x), lambda x: x * torch.sigmoid(x),
               fks.inputs(x=_rows()))
gelu = _target("gelu", lambda x: _gems().gelu(x),
               lambda x: 0.5 * x * (1 + torch.erf(x / math.sqrt(2))), fks.inputs(x=_rows()))
gelu_tanh = _target("gelu_tanh", lambda x: _gems().gelu(x, approximate="tanh"), _gelu_tanh,
                    fks.inputs(x=_rows()))
add = _target("add", lambda x, y, alpha: _gems().add(x, y, alpha=alpha),
              lambda x, y, alpha: x + alpha * y,
              fks.inputs(x=_rows(), y=_like(), alpha=st.sampled_from([1, 2, -0.5])))
#: a row broadcast against a matrix (stride 0 along N)
mul = _target("mul", lambda x, y: _gems().mul(x, y), lambda x, y: x * y,
              fks.inputs(x=_rows(), y=_like(("H",))))


# -- reductions -------------------------------------------------------------------------------

sum_dim = _target("sum_dim", lambda x: _gems().sum_dim(x, [1]), lambda x: x.sum(1),
                  fks.inputs(x=_rows()), reduction="H")
amax = _target("amax", lambda x: _gems().amax(x, [1]), lambda x: x.amax(1), fks.inputs(x=_rows()))
argmax = _target("argmax", lambda x: _gems().argmax(x, 1), lambda x: x.argmax(1),
                 fks.inputs(x=_rows()))
cumsum = _target("cumsum", lambda x: _gems().cumsum(x, 1), lambda x: x.cumsum(1),
                 fks.inputs(x=_rows()), reduction="H")


def _var_mean(x, correction):
    var, mean = _gems().var_mean(x, [1], correction=correction)
    return var, mean


var_mean = _target("var_mean", _var_mean,
                   lambda x, correction: torch.var_mean(x, [1], correction=correction),
                   fks.inputs(x=_rows(), correction=st.sampled_from([0, 1])), reduction="H",
                   tolerance=NORM_TOL)
softmax = _target("softmax", lambda x: _gems().softmax(x, 1), lambda x: torch.softmax(x, 1),
                  fks.inputs(x=_rows(values=LOGITS)), reduction="H")
log_softmax = _target("log_softmax", lambda x: _gems().log_softmax(x, 1),
                      lambda x: torch.log_softmax(x, 1), fks.inputs(x=_rows(values=LOGITS)),
                      reduction="H")


# -- norms ------------------------------------------------------------------------------------


def _ln(x, w, b, eps):
    mu = x.mean(-1, keepdim=True)
    var = (x - mu).pow(2).mean(-1, keepdim=True)
    return (x - mu) / torch.sqrt(var + eps) * w + b


layer_norm = _target(
    "layer_norm", lambda x, w, b, eps: _gems().layer_norm(x, (x.shape[-1],), w, b, eps)[0], _ln,
    fks.inputs(x=_rows(), w=_like(("H",)), b=_like(("H",)), eps=EPS), reduction="H",
    tolerance=NORM_TOL)
rms_norm = _target(
    "rms_norm", lambda x, w, eps: _gems().rms_norm(x, (x.shape[-1],), w, eps),
    lambda x, w, eps: x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w,
    fks.inputs(x=_rows(), w=_like(("H",)), eps=EPS), reduction="H", tolerance=NORM_TOL)

GROUPS = 3  # group_norm's channels are C = GROUPS * K (a derived dim)


def _group_norm(x, w, b, eps):
    n, c, length = x.shape
    return _gems().group_norm(x, w, b, n, c, length, GROUPS, eps)[0]


def _gn(x, w, b, eps):
    n, c, length = x.shape
    g = x.reshape(n, GROUPS, -1)
    mu = g.mean(-1, keepdim=True)
    var = (g - mu).pow(2).mean(-1, keepdim=True)
    y = ((g - mu) / torch.sqrt(var + eps)).reshape(n, c, length)
    return y * w[:, None] + b[:, None]


group_norm = _target(
    "group_norm", _group_norm, _gn,
    fks.inputs(x=fks.tensors(("N", "C", "L"), dtypes=FLOATS, values=ACT), w=_like(("C",)),
               b=_like(("C",)), eps=EPS),
    dims={"N": fks.sizes(max_value=4), "K": fks.sizes(max_value=4), "C": f"{GROUPS}*K",
          "L": fks.sizes(max_value=16)},
    tolerance=NORM_TOL)


# -- matmul -----------------------------------------------------------------------------------

MATMUL = {"M": fks.sizes(max_value=48), "K": fks.sizes(max_value=48),
          "N": fks.sizes(max_value=48)}


def _mat(dims, of=None):
    if of is None:
        return fks.tensors(dims, dtypes=FLOATS, values=FINITE)
    return fks.tensors(dims, dtype_of=of, values=FINITE)


mm = _target("mm", lambda a, b: _gems().mm(a, b), lambda a, b: a @ b,
             fks.inputs(a=_mat(("M", "K")), b=_mat(("K", "N"), "a")), dims=MATMUL,
             reduction="K")
addmm = _target(
    "addmm", lambda c, a, b, beta, alpha: _gems().addmm(c, a, b, beta=beta, alpha=alpha),
    lambda c, a, b, beta, alpha: beta * c + alpha * (a @ b),
    fks.inputs(c=_mat(("M", "N")), a=_mat(("M", "K"), "c"), b=_mat(("K", "N"), "c"),
               beta=st.sampled_from([1, 0.5]), alpha=st.sampled_from([1, 2])),
    dims=MATMUL, reduction="K")
bmm = _target("bmm", lambda a, b: _gems().bmm(a, b), lambda a, b: a @ b,
              fks.inputs(a=_mat(("B", "M", "K")), b=_mat(("B", "K", "N"), "a")),
              dims={**MATMUL, "B": fks.sizes(max_value=3)}, reduction="K")
