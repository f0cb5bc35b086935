"""A case's input storages as exact bytes: the whole storage under each tensor input (what a
corpus entry stores), and the tensor inputs rebuilt from stored storages (what a replay runs).
Imports torch when called."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from fuzzkern.case.model import Case
from fuzzkern.errors import CorpusError

if TYPE_CHECKING:  # pragma: no cover
    import torch


def storage_of(t: torch.Tensor) -> torch.Tensor:
    """The whole storage under view ``t``, as a 1-D tensor of its dtype (shares memory)."""
    n = t.untyped_storage().nbytes() // t.element_size()
    return t.as_strided((n,), (1,), 0)


def storages_of(case: Case) -> dict[str, torch.Tensor]:
    """Per tensor input of ``case``, its materialized storage (deterministic, on the CPU)."""
    from fuzzkern.case.model import materialize

    return {name: storage_of(materialize(tc)) for name, tc in case.tensors.items()}


def viewed_bytes(case: Case) -> int:
    """The bytes of ``case``'s tensor inputs as the case uses them: each its storage or its
    view (elements x element size, what a copy of it takes), whichever is larger. A stride-0
    view of 2**28 elements over one stored element counts 2**28 elements."""
    from fuzzkern.case.model import torch_dtype

    total = 0
    for tc in case.tensors.values():
        itemsize = torch_dtype(tc.dtype).itemsize
        total += max(tc.storage_size, math.prod(tc.shape)) * itemsize
    return total


def tensors_from_storages(path: str, case: Case, most_bytes: int | None = None
                          ) -> dict[str, torch.Tensor]:
    """The case's tensor inputs rebuilt from stored storages: each its own allocation, with the
    case's exact shape, strides and storage offset (worker side; imports torch). With
    ``most_bytes``, a case whose :func:`viewed_bytes` pass it is refused before anything is
    loaded or allocated."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    from fuzzkern.case.model import torch_dtype

    if most_bytes is not None and (viewed := viewed_bytes(case)) > most_bytes:
        raise CorpusError(f"{path}: refused: the case's inputs view {viewed} bytes, past the "
                          f"limit of {most_bytes} (FUZZKERN_CORPUS_LIMITS case_bytes=...)")
    try:
        loaded = load_file(path)
    except (OSError, SafetensorError) as e:
        raise CorpusError(f"{path}: cannot load the stored inputs: {e}") from e
    out = {}
    for name, tc in case.tensors.items():
        flat = loaded.get(name)
        if flat is None:
            raise CorpusError(f"{path}: no stored storage for input {name!r}")
        dtype = torch_dtype(tc.dtype)
        if flat.dtype != dtype or flat.dim() != 1 or flat.numel() != tc.storage_size:
            raise CorpusError(
                f"{path}: input {name!r} is stored as {flat.dtype} of shape {tuple(flat.shape)}, "
                f"but the case needs {tc.dtype} of {tc.storage_size} elements"
            )
        # A fresh allocation of exactly this storage: the bounds checker and every copy then
        # see the same memory picture as when the case was built by materialize().
        own = flat.clone()
        out[name] = own.as_strided(tc.shape, tc.strides, tc.storage_offset)
    return out
