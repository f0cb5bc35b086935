"""GPU probe: do lying tl.max_contiguous / tl.multiple_of hints change the generated loads?"""
import re
import sys

import torch

sys.path.insert(0, "tests/gpu")
import planted_compiled as p  # noqa: E402

base = torch.arange(1024, dtype=torch.float32, device="cuda")
x2 = base[::2][:128]
out = p.hinted_copy(x2, 64)
print("contiguity lie, stride 2:", (out != x2).sum().item(), "wrong")
x1 = base[1:129]
try:
    out = p.aligned_copy(x1, 64)
    torch.cuda.synchronize()
    print("alignment lie, offset 1:", (out != x1).sum().item(), "wrong")
except Exception as e:
    print("alignment lie, offset 1:", type(e).__name__, str(e)[:120])
for k in (p._hinted_copy, p._aligned_copy):
    for key, kern in k.device_caches[0][0].items():
        ptx = kern.asm.get("ptx", "")
        loads = sorted(set(re.findall(r"ld\.global[\.\w]*", ptx)))
        print(k.fn.__name__, key.split("]")[0][-60:], loads)
