"""Kernels for tests/unit/test_shadow.py: correct ones that round on purpose or by
arithmetic, and small logic and precision bugs (each launcher's docstring says which)."""

import torch
import triton
import triton.language as tl


@triton.jit
def _rms_llama(Y, X, W, n_cols, n_cols_f, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(X + row * n_cols + offs, mask=mask, other=0)
    dt = x.dtype
    w = tl.load(W + offs, mask=mask, other=0)
    x = x.to(tl.float32)
    ms = tl.sum(x * x, axis=0) / n_cols_f
    x = x * tl.rsqrt(ms + eps)
    x = x.to(dt)  # Llama: the normalized row rounded to the input dtype on purpose
    tl.store(Y + row * n_cols + offs, x * w, mask=mask)


def rms_llama(x, w):
    """Correct (HuggingFace's LlamaRMSNorm order of roundings), fp16."""
    m, n = x.shape
    y = torch.empty_like(x)
    _rms_llama[(m,)](y, x, w, n, float(n), 1e-6, BLOCK=triton.next_power_of_2(n))
    return y


def rms_reference(x, w):
    return w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6))


@triton.jit
def _ln(X, Y, W, B, N, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(X + row * N + cols, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / N
    xc = tl.where(mask, x - mean, 0.0)
    var = tl.sum(xc * xc, axis=0) / N
    rstd = 1.0 / tl.sqrt(var + eps)
    w = tl.load(W + cols, mask=mask, other=0.0)
    b = tl.load(B + cols, mask=mask, other=0.0)
    tl.store(Y + row * N + cols, xc * rstd * w + b, mask=mask)


def layer_norm(x, w, b):
    """Correct: a one-pass fp32 LayerNorm."""
    m, n = x.shape
    y = torch.empty_like(x)
    _ln[(m,)](x, y, w, b, n, 1e-5, BLOCK=triton.next_power_of_2(n))
    return y


def layer_norm_eps_bug(x, w, b):
    """Logic bug: eps 1e-6 where the reference has 1e-5."""
    m, n = x.shape
    y = torch.empty_like(x)
    _ln[(m,)](x, y, w, b, n, 1e-6, BLOCK=triton.next_power_of_2(n))
    return y


def layer_norm_reference(x, w, b):
    # what users write: the reference downcasts itself
    return torch.nn.functional.layer_norm(x.float(), (x.shape[-1],), w.float(), b.float(), 1e-5)


@triton.jit
def _gemv(A, X, Y, K, ACC_DTYPE: tl.constexpr, BLOCK_K: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros([BLOCK_K], dtype=ACC_DTYPE)
    for k0 in range(0, K, BLOCK_K):
        offs = k0 + tl.arange(0, BLOCK_K)
        mask = offs < K
        a = tl.load(A + row * K + offs, mask=mask, other=0.0)
        x = tl.load(X + offs, mask=mask, other=0.0)
        acc += a.to(ACC_DTYPE) * x.to(ACC_DTYPE)
    tl.store(Y + row, tl.sum(acc, axis=0).to(Y.dtype.element_ty))


def gemv_fp16_acc(a, x):
    """Precision bug: accumulates in fp16."""
    y = torch.empty((a.shape[0],), dtype=a.dtype)
    _gemv[(a.shape[0],)](a, x, y, a.shape[1], ACC_DTYPE=tl.float16, BLOCK_K=128)
    return y


def gemv_fp32_acc(a, x):
    """Correct: accumulates in fp32."""
    y = torch.empty((a.shape[0],), dtype=a.dtype)
    _gemv[(a.shape[0],)](a, x, y, a.shape[1], ACC_DTYPE=tl.float32, BLOCK_K=128)
    return y


@triton.jit
def _scale(X, Y, N, c, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < N
    tl.store(Y + offs, tl.load(X + offs, mask=mask) * c, mask=mask)


def two_pass(x):
    """Correct: ``x * 0.1`` stored to an fp16 scratch buffer, then that times 3 (two launches,
    the second reads what the first stored)."""
    n = x.numel()
    s = torch.empty_like(x)
    y = torch.empty_like(x)
    _scale[(triton.cdiv(n, 64),)](x, s, n, 0.1, BLOCK=64)
    _scale[(triton.cdiv(n, 64),)](s, y, n, 3.0, BLOCK=64)
    return y


def two_pass_host_change(x):
    """As :func:`two_pass`, but host code adds 1 to the scratch buffer between the launches:
    the shadow must read the buffer as memory holds it."""
    n = x.numel()
    s = torch.empty_like(x)
    y = torch.empty_like(x)
    _scale[(triton.cdiv(n, 64),)](x, s, n, 0.1, BLOCK=64)
    s += 1
    _scale[(triton.cdiv(n, 64),)](s, y, n, 3.0, BLOCK=64)
    return y


@triton.jit
def _bits(X, Y, N, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < N
    x = tl.load(X + offs, mask=mask)
    i = x.to(tl.int32, bitcast=True) & 0x7FFFFFFF
    tl.store(Y + offs, i.to(tl.float32, bitcast=True), mask=mask)


def abs_by_bits(x):
    """Correct: |x| by clearing the sign bit."""
    y = torch.empty_like(x)
    _bits[(1,)](x, y, x.numel(), BLOCK=triton.next_power_of_2(x.numel()))
    return y


@triton.jit
def _square(X, Y, N, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < N
    x = tl.load(X + offs, mask=mask)
    tl.store(Y + offs, x * x, mask=mask)


def square(x):
    """``x * x`` in the input dtype (overflows fp16 beyond 256)."""
    y = torch.empty_like(x)
    _square[(1,)](x, y, x.numel(), BLOCK=triton.next_power_of_2(x.numel()))
    return y


@triton.jit
def _softmax_bwd(DY, Y, DX, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    dy = tl.load(DY + row * N + cols, mask=mask, other=0.0).to(tl.float32)
    y = tl.load(Y + row * N + cols, mask=mask, other=0.0).to(tl.float32)
    dx = y * (dy - tl.sum(dy * y, axis=0))
    tl.store(DX + row * N + cols, dx.to(DX.dtype.element_ty), mask=mask)


def softmax_backward(dy, x):
    """Correct: the forward's output is computed by host code and stored in fp16 (rounded
    outside the kernel), then the kernel reads it."""
    m, n = x.shape
    y = torch.softmax(x.float(), dim=-1).to(x.dtype)
    dx = torch.empty((m, n), dtype=x.dtype)
    _softmax_bwd[(m,)](dy.contiguous(), y, dx, n, BLOCK=triton.next_power_of_2(n))
    return dx


def softmax_backward_reference(dy, x):
    y = torch.softmax(x, dim=-1)
    return y * (dy - (dy * y).sum(-1, keepdim=True))


@triton.jit
def _rms_inline(Y, X, W, n_cols, n_cols_f, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(X + row * n_cols + offs, mask=mask, other=0)
    w = tl.load(W + offs, mask=mask, other=0)
    xf = x.to(tl.float32)
    rstd = tl.rsqrt(tl.sum(xf * xf, axis=0) / n_cols_f + eps)
    tl.store(Y + row * n_cols + offs, (xf * rstd).to(x.dtype) * w, mask=mask)


def rms_inline(x, w):
    """Correct: Llama's rounding of the normalized row to fp16, written on one line with the
    multiply by the weight (a cast, not an accumulation)."""
    m, n = x.shape
    y = torch.empty_like(x)
    _rms_inline[(m,)](y, x, w, n, float(n), 1e-6, BLOCK=triton.next_power_of_2(n))
    return y


@triton.jit
def _tvd(P, Q, LOSS, N: tl.constexpr):
    offs = tl.arange(0, N)
    p = tl.load(P + offs)
    q = tl.load(Q + offs)
    tl.store(LOSS, tl.sum(0.5 * tl.abs(p - q), axis=0))


def tvd(p, q):
    """Precision bug (Liger's tvd): bf16 terms summed by ``tl.sum`` in bf16 into an fp32
    loss."""
    loss = torch.empty(1, dtype=torch.float32, device=p.device)
    _tvd[(1,)](p, q, loss, N=p.numel())
    return loss


def tvd_reference(p, q):
    return (0.5 * (p.float() - q.float()).abs()).sum().reshape(1)


@triton.jit
def _row_sum(X, S, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + row * N + offs, mask=offs < N, other=0.0).to(tl.float32)
    tl.store(S + row, tl.sum(x, axis=0))


def sums_difference(x, y):
    """Correct: the kernel stores fp16 row sums, the launcher subtracts them in torch (an
    output host code made, where the two sums cancel)."""
    m, n = x.shape
    sx = torch.empty(m, dtype=x.dtype, device=x.device)
    sy = torch.empty(m, dtype=x.dtype, device=x.device)
    _row_sum[(m,)](x, sx, n, BLOCK=triton.next_power_of_2(n))
    _row_sum[(m,)](y, sy, n, BLOCK=triton.next_power_of_2(n))
    return sx - sy


def sums_difference_reference(x, y):
    return x.float().sum(-1) - y.float().sum(-1)


def rms_reference_fp32(x, w):
    x, w = x.float(), w.float()
    return w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6))


def refuses_this_gpu(x):
    """A library's own check before any launch, naming the environment (fla's words)."""
    raise RuntimeError("Triton >= 3.4.0 and < 3.7.1 on Hopper GPUs produces incorrect results "
                       "for this kernel. Please upgrade Triton")


def refuses_the_input(x):
    """A library's own check before any launch that names no environment: an error."""
    raise ValueError("x must have at least 2 dimensions")


@triton.jit
def _rms_fp16_stats(X, Y, N: tl.constexpr):
    row = tl.program_id(0)
    x = tl.load(X + row * N + tl.arange(0, N))
    ms = tl.sum(x * x, axis=0) / N
    tl.store(Y + row, tl.sqrt(ms.to(tl.float32)))


def rms_fp16_stats(x):
    """Precision bug (group_norm's statistics in the input dtype): the sum of squares in fp16,
    which overflows to inf where float32 statistics are finite."""
    y = torch.empty(x.shape[0], dtype=torch.float32, device=x.device)
    _rms_fp16_stats[(x.shape[0],)](x, y, N=x.shape[1])
    return y


def rms_stats_reference(x):
    return x.float().pow(2).mean(-1).sqrt()
