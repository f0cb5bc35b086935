"""Targets with value domains, derived dims and clobbered inputs, each with a planted bug that
only inputs inside the domain can reach. Launchers are plain torch on the host (what a
launcher does before and after its kernel), so each case costs milliseconds."""

import torch
from hypothesis import strategies as st

import fuzzkern
from fuzzkern import strategies as fks

F32 = ["float32"]


def _pick_last_class_wrong(logits, labels):
    # planted: the last class (V-1) is read one column too early
    V = logits.shape[-1]
    fixed = torch.where(labels == V - 1, labels - 1, labels).clamp(min=0)
    return logits.gather(-1, fixed[:, None])[:, 0]


labels_below_dim = fuzzkern.Target(
    launcher=_pick_last_class_wrong,
    reference=lambda logits, labels: logits.gather(-1, labels[:, None])[:, 0],
    inputs=fks.inputs(
        logits=fks.tensors(("N", "V"), dtypes=F32, layout=False),
        labels=fks.tensors(("N",), dtypes=["int64"], layout=False,
                           values=fks.values(min_value=0, max_value="V", exclude_max=True)),
    ),
    dims={"N": fks.sizes(max_value=16), "V": fks.sizes(max_value=32)},
)


def _table_lookup(table, idx, V):
    # planted: ids from 3 on are off by one
    return table[torch.where(idx >= 3, idx - 1, idx)]


labels_below_scalar = fuzzkern.Target(
    launcher=_table_lookup,
    reference=lambda table, idx: table[idx],
    inputs=fks.inputs(
        V=st.integers(1, 12),
        table=fks.tensors((12,), dtypes=F32, layout=False),
        idx=fks.tensors(("N",), dtypes=["int32"], layout=False,
                        values=fks.values(min_value=0, max_value="V", exclude_max=True)),
    ),
    dims={"N": fks.sizes(max_value=16)},
)


def _small_positive_lost(x):
    # planted: values below 0.5 are flushed to 0
    return torch.where(x < 0.5, torch.zeros_like(x), x)


positive = fuzzkern.Target(
    launcher=_small_positive_lost,
    reference=lambda x: x,
    inputs=fks.inputs(x=fks.tensors(("N",), dtypes=F32, values=fks.values(sign="positive"))),
    dims={"N": fks.sizes(max_value=64)},
)


def _entropy(p):
    # planted: a row holding one certain event (probability > 0.99) gets entropy 1
    h = -(p * p.clamp(min=1e-30).log()).sum(-1)
    return torch.where(p.amax(-1) > 0.99, torch.ones_like(h), h)


entropy_rows = fuzzkern.Target(
    launcher=_entropy,
    reference=lambda p: -(p * p.clamp(min=1e-300).log()).sum(-1),
    inputs=fks.inputs(p=fks.tensors(("N", "V"), dtypes=F32,
                                    values=fks.values(rows="probability"))),
    dims={"N": fks.sizes(max_value=8), "V": fks.sizes(max_value=64)},
    tolerance=fuzzkern.Tolerance(atol=1e-5),
)


def _nll(logp, labels):
    # planted: log-probabilities below -2 are clipped
    return -logp.clamp(min=-2).gather(-1, labels[:, None])[:, 0]


log_rows = fuzzkern.Target(
    launcher=_nll,
    reference=lambda logp, labels: -logp.gather(-1, labels[:, None])[:, 0],
    inputs=fks.inputs(
        logp=fks.tensors(("N", "V"), dtypes=F32, layout=False,
                         values=fks.values(rows="log_probability")),
        labels=fks.tensors(("N",), dtypes=["int64"], layout=False,
                           values=fks.values(min_value=0, max_value="V", exclude_max=True)),
    ),
    dims={"N": fks.sizes(max_value=8), "V": fks.sizes(max_value=64)},
)


def _rotate_halves(x):
    # planted: from D=6 on, the second half is not negated
    D = x.shape[-1]
    a, b = x[..., : D // 2], x[..., D // 2:]
    return torch.cat([b if D >= 6 else -b, a], -1)


even_dim = fuzzkern.Target(
    launcher=_rotate_halves,
    reference=lambda x: torch.cat([-x[..., x.shape[-1] // 2:], x[..., : x.shape[-1] // 2]], -1),
    inputs=fks.inputs(x=fks.tensors(("N", "D"), dtypes=F32)),
    dims={"N": fks.sizes(max_value=8), "D": fks.sizes(min_value=2, max_value=64, multiple_of=2)},
)


def _scale_groups(x, w):
    # planted: with several channels per group, the per-channel weights are read backwards
    N, G, K = x.shape
    return x.reshape(N, G * K) * (w.flip(0) if K >= 2 else w)


groups = fuzzkern.Target(
    launcher=_scale_groups,
    reference=lambda x, w: x.reshape(x.shape[0], -1) * w,
    inputs=fks.inputs(x=fks.tensors(("N", "G", "K"), dtypes=F32),
                      w=fks.tensors(("C",), dtype_of="x")),
    dims={"N": fks.sizes(max_value=4), "G": fks.sizes(max_value=6), "K": fks.sizes(max_value=6),
          "C": "G*K"},
)


def _scale_in_place(x):
    x.mul_(2)  # uses its input as scratch
    return x.clone()


clobbered = fuzzkern.Target(
    launcher=_scale_in_place,
    reference=lambda x: 2 * x,
    inputs=fks.inputs(x=fks.tensors(("N",), dtypes=F32)),
    dims={"N": fks.sizes(max_value=8)},
    clobbers="x",
)

not_clobbered = fuzzkern.Target(
    launcher=_scale_in_place,
    reference=lambda x: 2 * x,
    inputs=fks.inputs(x=fks.tensors(("N",), dtypes=F32)),
    dims={"N": fks.sizes(max_value=8)},
)


def _loss_and_ids(x, labels, BUG):
    # a loss (0-dim), the count of labels (0-dim integer), the labels doubled (integer tensor);
    # x is used as scratch (declared clobbered)
    total = x.sum()
    x.zero_()
    return total + (1 if BUG else 0), (labels >= 0).sum(), labels * 2


loss_and_ids = fuzzkern.Target(
    launcher=_loss_and_ids,
    reference=lambda x, labels: (x.sum(), (labels >= 0).sum(), labels * 2),
    inputs=fks.inputs(
        x=fks.tensors(("N",), dtypes=F32),
        labels=fks.tensors(("N",), dtypes=["int64"],
                           values=fks.values(min_value=0, max_value=5)),
        BUG=st.booleans(),
    ),
    dims={"N": fks.sizes(max_value=8)},
    clobbers="x",
)
