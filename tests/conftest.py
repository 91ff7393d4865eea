"""Make the helper modules in tests/ (corpus, genprogs, oracles/) importable from any test, and
give every recording the tests start one instrumented-code cache of their own."""

import os
import sys
import tempfile

import pytest

_TESTS = os.path.dirname(os.path.abspath(__file__))
if _TESTS not in sys.path:
    sys.path.insert(0, _TESTS)

# Shared by the xdist workers and kept between runs (keys change with the instrumenter's
# source), so most recordings after the first run go through the cached, relocated path.
os.environ.setdefault("WHOLETRACE_CACHE_DIR", os.path.join(tempfile.gettempdir(), "wholetrace-test-cache"))

# The compatibility subset (`-m compat`): what `make test` runs on the other supported
# interpreters it finds (tools/compat.py).  Behaviour and oracles, not the analyses on top.
# File -> the tests of it that belong (None: all of them).
COMPAT: dict[str, tuple[str, ...] | None] = {
    "test_corpus.py": ("test_driver_runs", "test_registry"),  # corpus drivers run plain, deterministically
    "runtime/test_corpus_blocks.py": None,              # corpus behaviour, settrace-oracle line counts
    "oracles/test_settrace_oracle.py": None,            # the oracle itself
    "instrument/test_cfg_golden.py": None,              # CFG goldens
    "runtime/test_generated_programs.py": None,         # generated programs in every mode (fewer)
    "test_genprogs.py": ("test_hypothesmith_programs_run_plain",),
    "runtime/test_invisible.py": None,                  # nothing observable
    # record's start-up stand-ins against what they replace (_json's encoder, tokenize's cookie
    # rules, argparse, zstandard's backend, platform): each interpreter has its own
    "runtime/test_startup_pieces.py": None,
    "test_cli_record_fast.py": None,
    # (hypothesmith's odd syntax under a tracer: 3.11 only; its programs have little control flow)
    "runtime/test_tracer_inside.py": ("test_repro", "test_program_with", "test_structured"),
    "runtime/test_unfinished_frames.py": None,          # counts of frames left open (PEP 667 f_locals)
    "regen/test_path_closing_window.py": None,          # GC at 3.12+'s eval breaker, after a closing record
    "instrument/test_exitconst.py": None,               # closing records folded per compiled finally copy
    "regen/test_path_mode.py": ("test_inline_programs_event_for_event[exit",   # ... regenerate blocks exactly
                                "test_inline_programs_event_for_event[dead"),  # dead code (wave 15)
    # except* and a finally ending in if/else (3.13.0 copied its location-less join: a cut ran twice)
    "regen/test_path_raising.py": ("test_except_star", "test_finally_join"),
    # a return through nested with exits / a finally into a with exit (wave 17: the shared edge
    # had an "after" probe only the fall-through ran)
    "instrument/test_cleanup_routes.py": ("test_routes_through_cleanup_regenerate[nested_with_return",
                                          "test_routes_through_cleanup_regenerate[two_items_finally",
                                          "test_routes_through_cleanup_regenerate[with_last",    # 3.13.0
                                          # re-raise after a nested handler (wave 18)
                                          "test_routes_through_cleanup_regenerate[finally_then_handled]",
                                          "test_routes_through_cleanup_regenerate[bare_raise_after"),
    "instrument/test_held_lifetimes.py": None,          # wave 18: held entries' lifetimes, tracer events
    "store/test_store.py": None,                        # store round trip
    # wave 21: which coroutine activations are driven by hand reads frames (3.12's SEND_GEN), and
    # the await wrappers must start no line for a program's tracer on any interpreter
    "instrument/test_coro_flag.py": None,
    "instrument/test_coro_tracer.py": None,
    "compat/test_new_syntax.py": None,                  # PEP 695 / 701 / 709
    "compat/test_loop_sites.py": None,                  # 3.13's loop-step positions
    "compat/test_free_threaded.py": None,               # no GIL: refused in one line
    # wave 22: a recorded subprocess runs from the cpython.run_* audit event and finalises as plain
    "runtime/test_child_finalise22.py": None,
}


# `WHOLETRACE_TEST_CPULOG=path`: each test appends "CPU-s<TAB>wall-s<TAB>worker<TAB>node id" to
# path, CPU being the process's own plus its waited-for children's (recordings, CLI runs), so a
# whole `make test` (both xdist workers, the compat subsets) can be measured where the time goes
# (docs/design.md, "Test suite time, wave 22").  Off unless set.
_CPULOG = os.environ.get("WHOLETRACE_TEST_CPULOG")


def _cpu_seconds() -> float:
    import resource

    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


if _CPULOG:
    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(item, nextitem):  # type: ignore[no-untyped-def]
        import time

        c0, t0 = _cpu_seconds(), time.perf_counter()
        yield
        line = (f"{_cpu_seconds() - c0:.2f}\t{time.perf_counter() - t0:.2f}\t"
                f"{os.environ.get('PYTEST_XDIST_WORKER', '-')}\t{item.nodeid}\n")
        with open(_CPULOG, "a") as f:
            f.write(line)


def pytest_collection_modifyitems(config, items):  # type: ignore[no-untyped-def]
    for item in items:
        rel = os.path.relpath(str(item.path), _TESTS).replace(os.sep, "/")
        if rel in COMPAT and (COMPAT[rel] is None or item.name.startswith(COMPAT[rel])):
            item.add_marker(pytest.mark.compat)


@pytest.fixture(scope="session")
def cf_grammar_kernels(tmp_path_factory):  # type: ignore[no-untyped-def]
    """Compile, once per worker and into numba's on-disk cache, the kernels `record --cf-grammar`
    runs when a path recording ends (reading it back, the grammar, the chunk index): a test that
    times a `record --cf-grammar` subprocess would otherwise time the first compile of them too
    (minutes on a loaded machine; `make test`'s demo compiles them, a targeted run does not).
    Nothing is checked here: the compression is checked where it is used."""
    from wholetrace.match.compress import compress_file
    from wtutil import run_recorded

    d = tmp_path_factory.mktemp("cf-grammar-kernels")
    script = d / "loop.py"
    script.write_text("def f(n):\n    t = 0\n    for i in range(n):\n        t += i % 3\n    return t\nprint(f(50))\n")
    out = d / "loop.wt"
    assert run_recorded(script, out, mode="path").returncode == 0
    compress_file(out)
    return out
