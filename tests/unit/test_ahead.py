"""Compiling ahead (fuzzkern/execution/ahead.py, pool.AheadPool): the specializations a search
will need next, derived from one it needed now, compiled for sm_90 in other processes into
Triton's on-disk cache, so that compiling one of them later is a cache hit. Triton compiles
for an NVIDIA target without a GPU (ptxas ships in its wheel)."""

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from fuzzkern.execution import ahead
from fuzzkern.execution.pool import AheadPool, WorkerPool, _alive, descendants
from tests.unit import _ahead_jobs as aj

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _compile_here(spec, cache_dir, monkeypatch):
    """Compile ``spec`` in this process as a worker's ``JITFunction`` would; whether it was a
    cache hit."""
    import triton
    from triton import knobs
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    monkeypatch.setenv("TRITON_CACHE_DIR", cache_dir)
    hits = []
    monkeypatch.setattr(knobs.compilation, "listener",
                        lambda *, cache_hit, **kw: hits.append(cache_hit))
    triton.compile(ASTSource(spec.fn, dict(spec.signature), dict(spec.constexprs),
                             dict(spec.attrs)),
                   target=GPUTarget(*spec.target), options=dict(spec.options))
    return hits[-1]


def test_neighbours_are_the_other_configs_with_their_heuristics_and_options():
    _, module = aj.loaded()
    spec, bound = aj.double_spec(module, n=64)
    at = module._double_kernel
    more = ahead.neighbours(spec, configs=tuple(at.configs), config=at.configs[0], bound=bound,
                            heuristics=(at.fn,), flips=False)
    got = [(s.constexprs[(3,)], s.constexprs[(4,)], s.options["num_warps"],
            s.options["num_stages"]) for s in more]
    # EVEN is the heuristic's n % BLOCK == 0 for each config's BLOCK (n = 64)
    assert got == [(32, True, 1, 2), (64, True, 2, 2), (128, False, 4, 3)]
    assert ahead.key_of(spec) not in {ahead.key_of(s) for s in more}


def test_neighbours_vary_drawn_compile_options_and_divisibility():
    _, module = aj.loaded()
    spec = aj.broken_spec(module, 16)
    more = ahead.neighbours(spec, choices={"num_warps": (4, 1, 2, 8)}, drawn={"num_warps": 4})
    warps = sorted(s.options["num_warps"] for s in more if s.attrs == spec.attrs)
    assert warps == [1, 2, 8]
    flipped = [s for s in more if s.attrs != spec.attrs]
    # each of x_ptr, out_ptr and n flipped once: aligned pointers misaligned, n made divisible
    assert sorted(tuple(k for k in s.attrs if s.attrs[k] != spec.attrs[k]) for s in flipped) \
        == [((0,),), ((1,),), ((2,),)]
    # an option the launch did not take from the case (4 drawn, 2 used) is left alone
    two = ahead.neighbours(spec, choices={"num_warps": (4, 1)}, drawn={"num_warps": 2},
                           flips=False)
    assert two == []


def test_a_config_setting_an_option_keeps_it_whatever_was_drawn():
    _, module = aj.loaded()
    spec, bound = aj.double_spec(module, n=64)
    at = module._double_kernel
    more = ahead.neighbours(spec, configs=tuple(at.configs), config=at.configs[0], bound=bound,
                            heuristics=(at.fn,), choices={"num_warps": (4, 8)},
                            drawn={"num_warps": 1}, flips=False)
    assert len(more) == 3  # the configs' own warps; no drawn-warps variants


def test_launch_context_finds_the_autotuner_heuristics_and_arguments():
    _, module = aj.loaded()
    at = module._double_kernel
    heur, jit = at.fn, at.fn.fn

    def jit_run(self, bound_args):
        return ahead.launch_context(jit, sys._getframe())

    def heuristics_run(self):
        return jit_run(jit, {"n": 5, "BLOCK": 16})

    def autotuner_run(self):
        return heuristics_run(heur)

    assert autotuner_run(at) == (at, (heur,), {"n": 5, "BLOCK": 16})
    assert jit_run(jit, {"n": 1}) == (None, (), {"n": 1})


def test_other_configs_compile_ahead_in_other_processes_and_are_cache_hits(tmp_path,
                                                                           monkeypatch):
    cache = str(tmp_path / "cache")
    jobs = aj.other_config_jobs(cache)
    assert len(jobs) == 3 and all(jobs)
    pool = AheadPool(2, {"TRITON_CACHE_DIR": cache})
    try:
        assert pool.submit(jobs + jobs) == 3  # each key once
        assert pool.wait(600), pool.stats()
        stats = pool.stats()
        pids = pool.pids()
    finally:
        pool.close()
    assert (stats["compiled"], stats["failed"], stats["cached"]) == (3, 0, 0), stats
    assert len(pids) == 2 and os.getpid() not in pids
    _, module = aj.loaded()
    entries = set(os.listdir(cache))
    assert len(entries) == 3
    # configs 1..3 were compiled ahead: compiling one here only loads it
    spec, _ = aj.double_spec(module, n=64, index=2)
    assert _compile_here(spec, cache, monkeypatch) is True
    assert set(os.listdir(cache)) == entries
    # config 0 was not: a real compilation, a new entry
    spec0, _ = aj.double_spec(module, n=64, index=0)
    assert _compile_here(spec0, cache, monkeypatch) is False
    assert len(set(os.listdir(cache)) - entries) == 1


def test_a_job_that_fails_is_counted_and_the_pool_goes_on(tmp_path):
    from triton._C.libtriton import get_cache_invalidating_env_vars

    cache = str(tmp_path / "cache")
    ref, module = aj.loaded()
    env = dict(get_cache_invalidating_env_vars())
    broken = ahead.job_of(aj.broken_spec(module, 3), ref=ref, env=env, cache_dir=cache)
    changed = dict(ahead.job_of(aj.broken_spec(module, 32), ref=ref, env=env, cache_dir=cache),
                   key="changed", cache_key="not the kernel's hash")
    gone = dict(changed, key="gone", module="no_such_module_here", ref=None)
    good = ahead.job_of(aj.broken_spec(module, 16), ref=ref, env=env, cache_dir=cache)
    pool = AheadPool(1, {"TRITON_CACHE_DIR": cache})
    try:
        pool.submit([broken, changed, gone, good])
        assert pool.wait(600)
        stats = pool.stats()
    finally:
        pool.close()
    assert (stats["compiled"], stats["failed"]) == (1, 3), stats
    errors = "\n".join(stats["errors"])
    assert "arange" in errors  # the compile error of BLOCK=3
    assert "hash as in the worker" in errors and "no_such_module_here" in errors


def test_a_kernel_defined_in_a_function_or_with_odd_constexprs_is_not_a_job():
    _, module = aj.loaded()
    spec = aj.broken_spec(module, 16)
    assert ahead.job_of(spec) is not None
    assert ahead.job_of(ahead.Spec(spec.fn, spec.signature, {(3,): object()}, spec.attrs,
                                   spec.options, spec.target)) is None


def test_the_pool_kills_its_processes_mid_compile(tmp_path):
    pool = AheadPool(2, {"TRITON_CACHE_DIR": str(tmp_path)})
    pool.submit(aj.other_config_jobs(str(tmp_path)))
    time.sleep(1.0)
    pids = pool.pids()
    below = [d for p in pids for d in descendants(p)]
    pool.close()
    assert len(pids) == 2
    assert not [p for p in pids + below if _alive(p)]


_SCRIPT = textwrap.dedent("""
    import sys, time
    from fuzzkern.execution.pool import AheadPool
    from tests.unit import _ahead_jobs as aj
    pool = AheadPool(2, {"TRITON_CACHE_DIR": sys.argv[1]})
    try:
        pool.submit(aj.other_config_jobs(sys.argv[1]))
        time.sleep(0.5)
        print(*pool.pids(), flush=True)
        time.sleep(600)
    finally:
        pool.close()
""")


@pytest.mark.parametrize("how", [signal.SIGINT, signal.SIGKILL])
def test_no_compile_process_outlives_an_interrupted_or_killed_run(tmp_path, how):
    proc = subprocess.Popen([sys.executable, "-c", _SCRIPT, str(tmp_path)], cwd=ROOT,
                            stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        pids = [int(p) for p in proc.stdout.readline().split()]
        assert len(pids) == 2
        os.killpg(proc.pid, how)  # Ctrl-C reaches the whole group; a kill only the run
        proc.wait(60)
        deadline = time.monotonic() + 20
        while [p for p in pids if _alive(p)] and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not [p for p in pids if _alive(p)]
    finally:
        if proc.poll() is None:
            proc.kill()


def test_the_worker_pool_sizes_and_reports_compiling_ahead(monkeypatch):
    assert ahead.host_size(2, 1) == 0 and ahead.host_size(16, 1) == 15
    assert ahead.host_size(16, 8) == 1 and ahead.host_size(16, 16) == 0
    monkeypatch.delenv(ahead.AHEAD_ENV, raising=False)
    assert ahead.size_of() == 0  # off unless asked for
    assert WorkerPool().ahead is None
    assert ahead.size_of("auto") == ahead.host_size()
    monkeypatch.setenv(ahead.AHEAD_ENV, "off")
    assert ahead.size_of() == 0
    assert ahead.size_of(3) == 3
    with pytest.raises(ValueError, match="number of compile processes"):
        ahead.size_of("many")
    pool = WorkerPool(compile_ahead=2)
    try:
        assert pool.env[ahead.AHEAD_ENV] == "2" and os.path.isdir(pool.env[ahead.LOCKS_ENV])
        stats = pool.compile_stats()
        assert stats["compile_wait"] == 0 and stats["ahead"]["processes"] == 2
        assert pool.ahead is not None and pool.ahead.pids() == []  # started at the first job
    finally:
        pool.close()
    assert not os.path.exists(pool.env[ahead.LOCKS_ENV])
    assert WorkerPool(compile_ahead=0).compile_stats()["ahead"] is None


@pytest.fixture
def worker(tmp_path, monkeypatch):
    """This process as a worker with compiling ahead installed, and a way to compile
    ``_double_kernel``'s config ``index`` the way a forced launch reaches Triton's
    ``JITFunction._do_compile`` (on a device key of its own: Triton compiles for sm_90 without
    a driver); everything put back afterwards."""
    import triton
    from triton import knobs
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    from triton.compiler.compiler import make_backend
    from triton.runtime.jit import JITFunction

    from fuzzkern.execution import compiled

    cache, locks = str(tmp_path / "cache"), str(tmp_path / "locks")
    monkeypatch.setenv("TRITON_CACHE_DIR", cache)
    monkeypatch.setenv(ahead.LOCKS_ENV, locks)
    monkeypatch.setattr(JITFunction, "_do_compile", JITFunction._do_compile)
    monkeypatch.setattr(knobs.compilation, "listener", None)
    monkeypatch.setattr(compiled.counter, "_installed", False)
    monkeypatch.setattr(compiled.counter, "compiles", 0)
    monkeypatch.setattr(compiled.counter, "cache_hits", 0)
    for name, value in (("_known", set()), ("_asked", set()), ("_case", ahead._Case()),
                        ("_following", {})):
        monkeypatch.setattr(ahead, name, value)
    compiled.counter.install()
    sent = []
    ahead.install(lambda *event: sent.append(event))
    ref, module = aj.loaded()
    ahead.begin_case(ref, {"compile": {"num_warps": 4}})
    at = module._double_kernel
    heur, jit = at.fn, at.fn.fn
    target = GPUTarget(*aj.SM90)
    backend = make_backend(target)
    for fn in (jit, module._broken_kernel.fn):
        monkeypatch.setitem(fn.device_caches, "cpu-test", ({}, {}, target, backend, None))
        monkeypatch.setattr(fn, "compile", triton.compile, raising=False)
        monkeypatch.setattr(fn, "ASTSource", ASTSource, raising=False)

    def compile_spec(spec, key):
        return spec.fn._do_compile(key, dict(spec.signature), "cpu-test", dict(spec.constexprs),
                                   backend.parse_options(dict(spec.options)),
                                   dict(spec.attrs), False)

    def launch(index):
        spec, bound = aj.double_spec(module, index=index)

        def run(self, bound_args):  # JITFunction.run's frame: its self and bound_args
            return compile_spec(spec, f"key{index}")

        def heuristics_run(self):
            return run(jit, bound)

        def autotuner_run(self):  # a forced config's run sets best_config
            monkeypatch.setattr(self, "best_config", self.configs[index], raising=False)
            return heuristics_run(heur)

        return autotuner_run(at)

    launch.plain = lambda spec: compile_spec(spec, "plain")
    return launch, sent, {"TRITON_CACHE_DIR": cache, ahead.LOCKS_ENV: locks}


def test_a_worker_compilation_asks_for_its_neighbours_then_is_served_from_them(worker):
    from fuzzkern.execution import compiled

    launch, sent, env = worker
    assert launch(0) is not None
    asked = [e[1] for e in sent if e[0] == "ahead"]
    # three other configs and three divisibility flips (x_ptr, out_ptr, n); no drawn-warps
    # variants: the configs set num_warps
    assert len(asked) == 1 and len(asked[0]) == 6
    assert sorted(j["constexprs"][0][1] for j in asked[0][:3]) == [32, 64, 128]
    pool = AheadPool(2, env)
    try:
        pool.submit(asked[0])
        assert pool.wait(600) and pool.stats()["failed"] == 0, pool.stats()
    finally:
        pool.close()
    sent.clear()
    assert launch(3) is not None
    assert ("ahead-served", 1) in sent
    assert (compiled.counter.compiles, compiled.counter.cache_hits) == (1, 1)
    # config 3's own flips are new; its configs were asked for already
    assert [len(e[1]) for e in sent if e[0] == "ahead"] == [3]


def test_a_failure_to_derive_never_touches_the_compilation(worker, monkeypatch):
    launch, sent, _ = worker

    def broken(*args, **kwargs):
        raise RuntimeError("derivation failed")

    monkeypatch.setattr(ahead, "neighbours", broken)
    assert launch(1) is not None
    assert sent == []


def test_the_cap_counts_only_jobs_not_asked_for_before(worker, monkeypatch):
    launch, sent, _ = worker
    monkeypatch.setattr(ahead, "MOST_AHEAD", 2)
    launch(0)
    launch(3)
    first, second = [e[1] for e in sent if e[0] == "ahead"]
    assert [j["constexprs"][0][1] for j in first] == [32, 64]  # configs 1 and 2
    # config 3's neighbours: configs 0 (compiled), 1 and 2 (asked), then its own flips
    assert len(second) == 2 and {j["key"] for j in first}.isdisjoint(j["key"] for j in second)
    assert all(j["constexprs"][0][1] == 128 for j in second)


def test_the_worker_pool_counts_compile_wait_across_variants_and_submits_jobs(tmp_path):
    from fuzzkern.execution.pool import CaseClock

    pool = WorkerPool(compile_ahead=1)
    try:
        clock = CaseClock(10.0, start=0.0)
        for event, at in ((["compile", True], 1.0), (["compile", False], 3.0),
                          (["variant", 1], 3.5), (["compile", True], 4.0)):
            pool._event(event, clock, at)
        pool._account(clock, 4.5)  # a stop while the variant compiles: half a second so far
        pool._event(["compile", False], clock, 5.0)
        pool._account(clock, 5.0)  # the case's end: the rest of that compilation
        pool._event(["ahead-served", 1], clock, 5.0)
        jobs = aj.other_config_jobs(str(tmp_path))
        pool._event(["ahead", jobs[:1]], clock, 5.0)
        stats = pool.compile_stats()
        assert (stats["compile_wait"], stats["compiles"], stats["served_ahead"]) == (3.0, 2, 1)
        assert stats["ahead"]["submitted"] == 1
        assert clock.compiled(5.0) == 1.0  # the clock itself is left as it was
    finally:
        pool.close()


def test_a_kernel_launched_with_the_drawn_warps_asks_for_the_other_drawn_values(worker):
    launch, sent, _ = worker
    _, module = aj.loaded()
    assert launch.plain(aj.broken_spec(module, 16)) is not None  # num_warps 4, as drawn
    ((_, jobs),) = sent
    # the target's compile options (the default: num_warps in 4, 1, 2, 8), then the flips
    assert [j["options"]["num_warps"] for j in jobs] == [1, 2, 8, 4, 4, 4]


def test_dtype_neighbours_retype_the_pointers_of_the_drawn_dtype():
    from fuzzkern.target import loader

    (lt,) = loader.load(f"{aj.TARGETS}::double_any")
    case = {"inputs": {"x": {"tensor": {"dtype": "float16"}},
                       "y": {"tensor": {"dtype": "float16"}}}}
    assert ahead.dtype_choices(lt.target, case["inputs"]) == ("fp16", ("bf16", "fp32"))
    (fixed,) = loader.load(f"{aj.TARGETS}::double_target")  # float32 only: nothing to vary
    assert ahead.dtype_choices(fixed.target, case["inputs"]) == (None, ())
    _, module = aj.loaded()
    spec = ahead.replace(aj.broken_spec(module, 16), signature={
        "x_ptr": "*fp16", "out_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"})
    more = ahead.neighbours(spec, dtype="fp16", dtypes=("bf16", "fp32"), flips=False)
    assert [(s.signature["x_ptr"], s.signature["out_ptr"]) for s in more] == [
        ("*bf16", "*fp32"), ("*fp32", "*fp32")]


def test_a_worker_waits_for_a_compile_in_flight_at_most_a_while(tmp_path, monkeypatch):
    monkeypatch.setenv(ahead.LOCKS_ENV, str(tmp_path))
    with ahead.held("k", exclusive=True) as compiling:
        assert compiling
        start = time.monotonic()
        with ahead.held("k", exclusive=False, wait=0.3) as waited:
            assert waited is False and time.monotonic() - start >= 0.3
    with ahead.held("k", exclusive=False) as waited:
        assert waited is True


def test_a_failure_of_compiling_ahead_stops_it_and_never_reaches_the_case(tmp_path,
                                                                        monkeypatch):
    from fuzzkern.execution.pool import CaseClock

    pool = WorkerPool(compile_ahead=1)
    try:
        def refuse(jobs):
            raise OSError("Resource temporarily unavailable")

        monkeypatch.setattr(pool.ahead, "submit", refuse)
        pool._event(["ahead", aj.other_config_jobs(str(tmp_path))], CaseClock(1.0), 0.0)
        assert "compiling ahead stopped: OSError" in pool.compile_stats()["ahead_stopped"]
    finally:
        pool.close()
    ahead.begin_case(None, "not a case")  # a worker's view of a case it cannot read: nothing
    assert ahead._case.drawn is None and ahead._case.inputs is None


def test_compiling_ahead_between_a_real_worker_its_pool_and_the_compile_processes(tmp_path):
    from fuzzkern.case.model import Case, Layout, TensorCase, Values
    from fuzzkern.target import loader

    (lt,) = loader.load(os.path.join(aj.HERE, "targets", "ahead_plumbing.py") + "::plumbing")
    x = TensorCase.build((4,), "float32", Layout.contiguous(1), Values(seed=0))
    pool = WorkerPool(env={"TRITON_CACHE_DIR": str(tmp_path / "cache")}, compile_ahead=2)
    try:
        first = pool.run(lt.ref, Case({"N": 4}, {"x": x, "INDEX": 0}).to_json(),
                         {"modes": ["interpret"]}, 300)
        assert first.verdict == "pass", first.message
        assert pool.ahead is not None and pool.ahead.wait(600), pool.compile_stats()
        asked = pool.compile_stats()
        # configs 1-3 and three divisibility flips, compiled by the pool's processes
        assert (asked["ahead"]["submitted"], asked["ahead"]["compiled"]) == (6, 6), asked["ahead"]
        again = pool.run(lt.ref, Case({"N": 4}, {"x": x, "INDEX": 3}).to_json(),
                         {"modes": ["interpret"]}, 300)
        assert again.verdict == "pass", again.message
        stats = pool.compile_stats()
    finally:
        pool.close()
    assert stats["served_ahead"] == 1 and stats["compiles"] == 2, stats
    assert stats["compile_work"] > stats["compile_wait"] > 0


def test_a_compile_process_that_dies_is_replaced_and_its_job_counted(tmp_path):
    crash = tmp_path / "exits_at_import.py"
    crash.write_text("import os\nos._exit(3)\n")
    cache = str(tmp_path / "cache")
    (good,) = aj.other_config_jobs(cache)[:1]
    dies = dict(good, key="dies", module="fk_exits_at_import", ref=None, file=str(crash))
    pool = AheadPool(1, {"TRITON_CACHE_DIR": cache})
    try:
        pool.submit([dies])
        (pid,) = pool.pids()
        deadline = time.monotonic() + 120
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        pool.submit([good])
        assert pool.wait(600)
        stats = pool.stats()
        assert pool.pids() != [pid]
    finally:
        pool.close()
    assert (stats["compiled"], stats["failed"]) == (1, 1), stats
    assert "died (exit code 3)" in stats["errors"][0]


def test_an_fp32_case_retypes_only_the_arguments_seen_to_follow_the_dtype(worker):
    from fuzzkern.target import loader

    launch, sent, _ = worker
    _, module = aj.loaded()
    (lt,) = loader.load(f"{aj.TARGETS}::double_any")
    half = {"x": {"tensor": {"dtype": "float16"}}, "y": {"tensor": {"dtype": "float16"}}}
    ahead.begin_case(lt.ref, {"inputs": half})
    spec = aj.broken_spec(module, 16)
    launch.plain(ahead.replace(spec, signature={**spec.signature, "x_ptr": "*fp16"}))
    assert ahead._following[id(spec.fn)] == {"x_ptr"}  # out_ptr stayed fp32: a buffer
    more = ahead.neighbours(spec, dtype="fp32", dtypes=("bf16", "fp32"), flips=False,
                            following=ahead._following[id(spec.fn)])
    assert [(s.signature["x_ptr"], s.signature["out_ptr"]) for s in more] == [
        ("*bf16", "*fp32")]


_GENERATED = textwrap.dedent("""
    import triton
    import triton.language as tl


    @triton.jit
    def gen_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)
""")


def _generated_module(tmp_path):
    """A kernel in a module loaded from a file without a place in ``sys.modules``, the way
    FlagGems loads its generated code (``_gen_module_*``)."""
    import importlib.util

    path = tmp_path / "gen_code.py"
    path.write_text(_GENERATED)
    spec = importlib.util.spec_from_file_location("_gen_module_fk_test_rank_1", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_kernel_a_compile_process_cannot_find_again_asks_for_no_jobs(worker, tmp_path,
                                                                        monkeypatch):
    launch, sent, _ = worker
    ref, module = aj.loaded()
    gen = _generated_module(tmp_path).gen_kernel
    assert ahead.findable(module._broken_kernel.fn) and not ahead.findable(gen)
    # what a compile process would make of its job: the failure FlagGems' runs counted
    spec = ahead.replace(aj.broken_spec(module, 16), fn=gen)
    job = ahead.job_of(spec, ref=ref)
    result = ahead.compile_job(job)
    assert not result["ok"] and "to be importable" in result["error"]
    # in a worker, its compilation goes on and asks for nothing
    monkeypatch.setitem(gen.device_caches, "cpu-test",
                        module._broken_kernel.fn.device_caches["cpu-test"])
    import triton
    from triton.compiler import ASTSource

    monkeypatch.setattr(gen, "compile", triton.compile, raising=False)
    monkeypatch.setattr(gen, "ASTSource", ASTSource, raising=False)
    assert launch.plain(spec) is not None
    assert sent == []
    assert launch.plain(aj.broken_spec(module, 16)) is not None  # a target's kernel does
    assert [e[0] for e in sent] == ["ahead"]


def test_compile_processes_run_at_idle_priority(tmp_path):
    pool = AheadPool(1, {"TRITON_CACHE_DIR": str(tmp_path / "cache"),
                         ahead.HOST_ENV: str(tmp_path / "host")})
    try:
        pool.submit(aj.other_config_jobs(str(tmp_path / "cache"))[:1])
        (pid,) = pool.pids()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # until it has set itself up: its nice value,
            # then its scheduler (two calls: a loaded machine runs the test between them)
            if (os.getpriority(os.PRIO_PROCESS, pid) == 19
                    and os.sched_getscheduler(pid) == os.SCHED_IDLE):
                break
            time.sleep(0.05)
        assert os.getpriority(os.PRIO_PROCESS, pid) == 19
        assert os.sched_getscheduler(pid) == os.SCHED_IDLE
        assert pool.wait(600) and pool.stats()["compiled"] == 1, pool.stats()
    finally:
        pool.close()


def test_the_hosts_compile_slots_leave_the_workers_their_cores(tmp_path, monkeypatch):
    host = str(tmp_path / "host")
    monkeypatch.setenv(ahead.HOST_ENV, host)
    assert ahead.host_slots(cores=16, pools=2) == 14 and ahead.host_slots(2, 2) == 1
    cores = len(os.sched_getaffinity(0))
    mine = [ahead.register_pool() for _ in range(cores - 1)]
    open(os.path.join(host, "pool-1-stale.lock"), "w").close()  # a pool long gone
    assert ahead.pools_on_host() == cores - 1 and ahead.host_slots() == 1
    assert not os.path.exists(os.path.join(host, "pool-1-stale.lock"))
    pool = AheadPool(2, {"TRITON_CACHE_DIR": str(tmp_path / "cache"), ahead.HOST_ENV: host})
    try:
        with ahead.compile_slot() as slot:  # this process holds the host's one slot
            assert slot == 0
            pool.submit(aj.other_config_jobs(str(tmp_path / "cache"))[:2])
            time.sleep(3.0)
            assert len(pool.pids()) == 2 and pool.stats()["compiled"] == 0, pool.stats()
        # the slot is free: the two jobs compile, one after the other
        assert pool.wait(600) and pool.stats()["compiled"] == 2, pool.stats()
        mine.pop()()  # a pool ends
        assert ahead.pools_on_host() == cores - 2
    finally:
        pool.close()
        for unregister in mine:
            unregister()
    assert ahead.pools_on_host() == 0 and not [
        n for n in os.listdir(host) if n.startswith("pool-")]


def test_compiling_ahead_stops_when_its_hit_rate_is_low(tmp_path, monkeypatch):
    monkeypatch.setattr(ahead, "AHEAD_WARMUP", 3)
    cache = str(tmp_path / "cache")
    jobs = aj.other_config_jobs(cache)
    from fuzzkern.execution.pool import CaseClock

    pool = WorkerPool(env={"TRITON_CACHE_DIR": cache, ahead.HOST_ENV: str(tmp_path / "h")},
                      compile_ahead=2)
    try:
        pool._event(["ahead", jobs[:2]], CaseClock(1.0), 0.0)
        pool._event(["ahead-served", 1], CaseClock(1.0), 0.0)
        assert pool.ahead.wait(600) and pool.ahead.paying() is None  # 2 compiled: warming up
        pool._event(["ahead", jobs[2:]], CaseClock(1.0), 0.0)
        assert pool.ahead.wait(600)
        assert pool.ahead.paying() is None  # 1 of 3 served: 33%
        assert pool.ahead.paying(least=0.5) == (
            "hit rate 1/3 (33.3%) below 50% after 3 jobs compiled")
        monkeypatch.setattr(ahead, "MIN_HIT_RATE", 0.5)
        pids = pool.ahead.pids()
        more = ahead.job_of(aj.broken_spec(aj.loaded()[1], 16), cache_dir=cache)
        pool._event(["ahead", [more]], CaseClock(1.0), 0.0)  # not submitted: it stopped
        stats = pool.compile_stats()
    finally:
        pool.close()
    done = stats["ahead"]
    assert (done["submitted"], done["compiled"], done["served"]) == (3, 3, 1), done
    assert done["stopped"].startswith("hit rate 1/3 (33.3%) below 50%")
    assert stats["served_ahead"] == 1 and not [p for p in pids if _alive(p)]


_LOCKS_AT_IMPORT = textwrap.dedent("""
    import multiprocessing, sys
    locks = [multiprocessing.Lock() for _ in range(20)]
    with open({names!r}, "w") as fh:
        fh.write("\\n".join(str(lock._semlock.name) for lock in locks))
""")


def test_a_killed_compile_process_leaves_no_semaphore_behind(tmp_path):
    # a library that makes a multiprocessing.Lock per kernel at import (FlagGems' LibEntry)
    names = tmp_path / "names.txt"
    lib = tmp_path / "locks_at_import.py"
    lib.write_text(_LOCKS_AT_IMPORT.format(names=str(names)))
    cache = str(tmp_path / "cache")
    (good,) = aj.other_config_jobs(cache)[:1]
    job = dict(good, key="locks", module="fk_locks_at_import", ref=None, file=str(lib))
    pool = AheadPool(1, {"TRITON_CACHE_DIR": cache, ahead.HOST_ENV: str(tmp_path / "host")})
    try:
        pool.submit([job])
        assert pool.wait(600) and pool.stats()["failed"] == 1  # imported, not a kernel
        pids = pool.pids()
    finally:
        pool.close()  # kills the compile process: no exit handler of its runs
    assert not [p for p in pids if _alive(p)]
    made = names.read_text().split("\n")
    assert len(made) == 20
    # named semaphores (forkserver's default) would stay in /dev/shm until this process's
    # resource tracker ends; unlinked at once, they have no name
    assert [n for n in made if n != "None" and os.path.exists("/dev/shm/sem." + n.lstrip("/"))
            ] == []
    assert made == ["None"] * 20


_TARGET_WITH_LOCKS = textwrap.dedent("""
    import multiprocessing

    import fuzzkern
    from fuzzkern import strategies as fks

    LOCKS = [multiprocessing.Lock() for _ in range(20)]
    with open({names!r}, "w") as fh:
        fh.write("\\n".join(str(lock._semlock.name) for lock in LOCKS))

    double = fuzzkern.Target(
        launcher=lambda x: 2 * x, reference=lambda x: 2 * x,
        inputs=fks.inputs(x=fks.tensors(("N",), dtypes=["float32"], layout=False)),
        dims={{"N": fks.sizes(min_value=1, max_value=8)}})
""")


def test_a_killed_worker_leaves_no_semaphore_behind(tmp_path):
    from fuzzkern.case.model import Case, Layout, TensorCase, Values
    from fuzzkern.target import loader

    names = tmp_path / "names.txt"
    path = tmp_path / "target_with_locks.py"
    path.write_text(_TARGET_WITH_LOCKS.format(names=str(names)))
    (lt,) = loader.load(f"{path}::double")
    names.unlink()  # what this process made; the worker's own come next
    x = TensorCase.build((4,), "float32", Layout.contiguous(1), Values(seed=0))
    pool = WorkerPool()
    try:
        out = pool.run(lt.ref, Case({"N": 4}, {"x": x}).to_json(), {"modes": ["interpret"]}, 300)
        assert out.verdict == "pass", out.message
        pid = pool._worker.process.pid
        pool.replace()  # killed, as after a hang or at the budget's end
    finally:
        pool.close()
    assert not _alive(pid)
    assert names.read_text().split("\n") == ["None"] * 20
