"""GPU probe: does a lying tl.max_contiguous hint change results on this GPU/Triton?"""
import sys

import torch

sys.path.insert(0, "tests/gpu")
import planted_compiled as p  # noqa: E402

for n, step, off in [(128, 2, 0), (128, 2, 4), (128, 3, 0), (64, 2, 0), (100, 2, 0)]:
    base = torch.arange(n * step + off, dtype=torch.float32, device="cuda")
    x = base[off::step][:n]
    for block in (64, 128):
        out = p.hinted_copy(x, block)
        torch.cuda.synchronize()
        bad = (out != x).sum().item()
        print(f"n={n} step={step} off={off} BLOCK={block}: {bad} wrong; head {out[:6].tolist()}")
k = p._hinted_copy
for key, kern in list(k.device_caches[0][0].items())[:3]:
    ptx = kern.asm.get("ptx", "")
    print(key[:120], "v4 loads:", ptx.count("ld.global.v4"), "scalar loads:",
          ptx.count("ld.global.b32") + ptx.count("ld.global.f32"))
