"""A target whose launcher compiles config ``INDEX`` of ahead_kernels.py's autotuned kernel for
sm_90 the way a forced launch reaches Triton's ``JITFunction._do_compile`` (Triton compiles for
an NVIDIA target without a GPU), then doubles ``x`` in torch: compiling ahead between a real
worker, its pool and the compile processes, on the CPU (tests/unit/test_ahead.py)."""

import sys

import triton
from hypothesis import strategies as st
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from triton.compiler.compiler import make_backend

import fuzzkern
from fuzzkern import strategies as fks
from fuzzkern.execution import compiled

sys.path.insert(0, __file__.rsplit("/tests/", 1)[0])
from tests.unit import _ahead_jobs as aj  # noqa: E402


def compile_config(x, INDEX):
    compiled.counter.install()  # what compiled mode installs in a worker
    compiled.time_compilations()
    _, module = aj.loaded()
    at = module._double_kernel
    heur, jit = at.fn, at.fn.fn
    target = GPUTarget(*aj.SM90)
    backend = make_backend(target)
    jit.device_caches["cpu-sm90"] = ({}, {}, target, backend, None)
    jit.compile, jit.ASTSource = triton.compile, ASTSource
    spec, bound = aj.double_spec(module, index=INDEX)

    def run(self, bound_args):  # JITFunction.run's frame: its self and bound_args
        return jit._do_compile(f"key{INDEX}", dict(spec.signature), "cpu-sm90",
                               dict(spec.constexprs), backend.parse_options(dict(spec.options)),
                               dict(spec.attrs), False)

    def heuristics_run(self):  # the heuristics under the autotuner
        return run(jit, bound)

    def autotuner_run(self):  # a forced config's run
        self.best_config = self.configs[INDEX]
        try:
            return heuristics_run(heur)
        finally:
            self.best_config = None

    autotuner_run(at)
    return 2 * x


plumbing = fuzzkern.Target(
    launcher=compile_config, reference=lambda x: 2 * x,
    inputs=fks.inputs(x=fks.tensors(("N",), dtypes=["float32"], layout=False),
                      INDEX=st.sampled_from([0, 3])),
    dims={"N": fks.sizes(min_value=1, max_value=8)},
)
