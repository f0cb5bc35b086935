"""Shared setup of the standalone reproducers: the device, and Triton's interpreter on a CPU.

Each reproducer prints what it sees and exits 1 when the bug shows, 0 when it does not (fixed
upstream), 2 when it cannot run here."""

import os
import sys


def device() -> str:
    """``cuda`` when a GPU is present (unless REPRO_DEVICE=cpu), else ``cpu`` with
    TRITON_INTERPRET=1, set before triton is imported."""
    want = os.environ.get("REPRO_DEVICE")
    if want != "cpu":
        import torch

        if torch.cuda.is_available():
            return "cuda"
        if want == "cuda":
            print("no CUDA GPU here", file=sys.stderr)
            sys.exit(2)
    if "triton" in sys.modules and os.environ.get("TRITON_INTERPRET") != "1":
        print("triton was imported before TRITON_INTERPRET=1 could be set", file=sys.stderr)
        sys.exit(2)
    os.environ["TRITON_INTERPRET"] = "1"
    return "cpu"


def verdict(bug: bool, what: str) -> None:
    print(("BUG: " if bug else "fixed: ") + what)
    sys.exit(1 if bug else 0)
