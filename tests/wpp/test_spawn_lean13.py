"""The builder's start-up, wave 13: numpy._core's own __init__ deferred too, the collector off until the kernels are warm, no ctypes; a builder killed mid-run is a one-line error."""

from __future__ import annotations

import os
import marshal
import subprocess
import sys
import uuid
from pathlib import Path

import numpy as np
import pytest

from wtutil import ENV

SRC = str(Path(__file__).resolve().parents[2] / "src")
#: numpy._core's modules its __init__ imports that the lean start-up leaves out
LEFT_OUT = ("numpy._core.einsumfunc", "numpy._core.function_base", "numpy._core.getlimits",
            "numpy._core.memmap", "numpy._core.records", "numpy._core._add_newdocs",
            "numpy._core._add_newdocs_scalars", "numpy._core._dtype_ctypes", "numpy._core._internal")


def _run(code: str, *args: str, env: dict[str, str] | None = None) -> str:
    return subprocess.run([sys.executable, "-W", "error", "-c", code, *args], env=env or ENV,
                          capture_output=True, text=True, check=True).stdout.strip()


# (name, type, module, qualname) of what numpy binds to each name: the oracle is a plain ``import numpy``
_DESCRIBE = ("def describe(np, names):\n"
             "    return sorted((k, type(v).__name__, getattr(v, '__module__', None) if isinstance(v, type) or callable(v) else None,"
             " getattr(v, '__qualname__', None) if isinstance(v, type) or callable(v) else repr(v)[:40]) for k, v in vars(np).items() if k in names)\n")


def test_the_lean_core_runs_no_core_init_and_binds_what_import_numpy_binds() -> None:
    """Before completion: numpy._core's __init__ has not run (no ``__all__``, none of its other
    modules), numpy has the names of ``numeric`` and ``shape_base``, each the object a plain
    ``import numpy`` binds to it (oracle: another process); after completion (a name the lean
    module lacks): the same objects still, numpy._core complete."""
    lean = _run("import sys\nimport wholetrace.wpp.startup as s\n" + _DESCRIBE +
                "np = s.lean_numpy()\n"
                f"left = [m for m in {LEFT_OUT!r} if m in sys.modules]\n"
                "names = sorted(set(np._core.numeric.__all__) | set(np._core.shape_base.__all__))\n"
                "before = dict((k, v) for k, v in vars(np).items() if k in names)\n"
                "print(left, hasattr(np._core, '__all__'), s.numpy_state(), len(names))\n"
                "print(repr(describe(np, set(names))))\n"
                "np.unique\n"
                "print(s.numpy_state(), hasattr(np._core, '__all__'), all(getattr(np, k) is v for k, v in before.items()),"
                " np._core is sys.modules['numpy._core'], 'numpy._core._add_newdocs' in sys.modules)\n"
                "print(repr(names))", env={**ENV, "WHOLETRACE_LEAN_NUMPY": "python"})   # wave 13's tier (wave 18: the upgrade)
    first, described, after, names = lean.splitlines()
    assert first.startswith("[] False lean ")
    assert int(first.split()[-1]) > 100           # empty would pass the rest vacuously
    assert after == "full True True True True"
    plain = _run("import numpy as np\n" + _DESCRIBE + f"print(repr(describe(np, set({names}))))")
    assert described == plain


def test_the_lean_core_keeps_the_openblas_variable_as_numpy_does() -> None:
    """numpy._core's __init__ sets OPENBLAS_MAIN_FREE (putenv) around its C module's load and unsets it."""
    out = _run("import os\nimport wholetrace.wpp.startup as s\ns.lean_numpy()\n"
               "print(os.environ.get('OPENBLAS_MAIN_FREE'), open('/proc/self/environ','rb').read().count(b'OPENBLAS_MAIN_FREE'))",
               env={k: v for k, v in ENV.items() if k != "OPENBLAS_MAIN_FREE"})
    assert out == "None 0"


def test_the_node_phase_reads_the_address_ctypes_gives() -> None:
    """``grammar.builder._set_phase`` reads the node array's address from ``__array_interface__``
    (no ctypes import): the address ``ndarray.ctypes.data`` gives (the oracle)."""
    from wholetrace.grammar import builder as gb
    from wholetrace.kernels import sequitur as K

    for n in (1, 7, 4096, 1 << 14):
        for offset in (0, 1, 4, 16):
            nd = np.zeros(n * 4 + offset, np.int32)[offset:]
            meta = np.zeros(K.M_NODE_PHASE + 1, np.int64)
            gb._set_phase(nd, meta)
            addr = nd.ctypes.data
            assert meta[K.M_NODE_PHASE] == (((-addr) % 64) // 16 if addr % 16 == 0 else 0)


def _builder_state(env: dict[str, str]) -> tuple[dict, list[str]]:
    """Run the builder as wpp.spawn starts it on a few events: its result, and at its exit whether
    the collector is enabled, how many objects are frozen, which of ctypes and ``LEFT_OUT`` are loaded."""
    from test_builder_startup11 import _events, _frames, _path
    from wholetrace.wpp.spawn import _CODE

    code = ("import os, sys, gc\nreal = os._exit\n"
            "def _exit(c):\n    sys.stderr.write('STATE %s %d %s\\n' % (gc.isenabled(), gc.get_freeze_count(),"
            " ','.join(sorted(m for m in sys.modules if m == 'ctypes' or m in " + repr(LEFT_OUT) + "))))\n"
            "    sys.stderr.flush(); real(c)\n"
            "os._exit = _exit\n" + _CODE.replace("; ", "\n"))
    assert _CODE.startswith("import gc; gc.disable(); ")
    p = subprocess.run([sys.executable, "-S", "-c", code, "blocks", "1", "100000", "0", *_path()],
                       input=_frames(_events(4)), capture_output=True, check=True,
                       env={**ENV, "PYTHONPATH": SRC, "OPENBLAS_NUM_THREADS": "1", **env})
    result = marshal.loads(p.stdout)
    assert "error" not in result
    return result, p.stderr.decode().split("STATE ", 1)[1].split("\n")[0].split(" ")


def test_the_builder_collects_again_once_warm_and_loads_no_ctypes() -> None:
    """Started as wpp.spawn starts it: the collector is off during the start-up and on again
    (with the start-up's objects frozen) once the kernels are warm; neither ctypes nor the
    numpy._core modules left out are loaded by the end of a build."""
    result, (enabled, frozen, loaded) = _builder_state({})
    if result["stats"]["kernels"] != "aot":
        pytest.skip("no compiled kernels: numba imports all of numpy")
    assert (enabled, int(frozen) > 0, loaded) == ("True", True, "")


def test_a_jit_builder_collects_its_compile_garbage() -> None:
    """On the JIT path (``WHOLETRACE_AOT=0``: numba compiles or loads the kernels) the collector is
    on while numba works and nothing is frozen (review13b H1: frozen with the collector off, a cold
    compile's ~12 M garbage objects, 0.8 GB, were kept for the whole build).  numba's cache is
    warm after the first run, so the test is cheap after that."""
    result, (enabled, frozen, _) = _builder_state({"WHOLETRACE_AOT": "0"})
    assert result["stats"]["kernels"].startswith("jit: ")
    assert (enabled, frozen) == ("True", "0")


KILLER = """
import os, signal, time
def builder():
    mark = ("WT_KILL_MARK=" + os.environ["WT_KILL_MARK"]).encode()
    for p in os.listdir("/proc"):
        if p.isdigit() and int(p) != os.getpid():
            try:
                with open(f"/proc/{p}/environ", "rb") as f:
                    if mark in f.read().split(b"\\0"):
                        return int(p)
            except OSError:
                pass
def work(k):
    t = 0
    for i in range(k):
        t += i & 3
    return t
work(20000)
pid = builder()
os.kill(pid, signal.SIGKILL)
for _ in range(200):          # until it is gone: then every later chunk finds no reader
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        break
    time.sleep(0.01)
for _ in range(20):
    work(20000)
    time.sleep(0.003)         # flushes meanwhile (1 ms interval)
print("ran", pid > 0)
"""


@pytest.mark.parametrize("sigpipe", ["ignored", "default"])
def test_a_builder_killed_mid_run_is_a_one_line_error_not_a_part_grammar(tmp_path: Path, sigpipe: str) -> None:
    """The program kills the builder (SIGKILL) and goes on recording: ``record`` ends with a
    one-line error naming the builder (exit 2 or 3), the program's own output intact, and no
    grammar stored (oracle: the recording's arrays); the recording's meta ``wpp`` holds that
    error, and ``wpp``, ``info`` and ``trace`` report it (review13b M2: "record it with --wpp",
    0 events, an empty trace).  With ``SIGPIPE`` set to ``SIG_DFL`` by the program, the
    recorder's writes to the dead builder do not kill it (review13b M3: exit 141, no output)."""
    script = tmp_path / "killer.py"
    script.write_text(("import signal\nsignal.signal(signal.SIGPIPE, signal.SIG_DFL)\n" if sigpipe == "default" else "")
                      + KILLER)
    out = tmp_path / "r.wt"
    env = dict(ENV, WT_KILL_MARK=uuid.uuid4().hex, WHOLETRACE_WPP_FLUSH="0.001")
    proc = subprocess.run([sys.executable, "-m", "wholetrace.cli", "record", "--mode", "path", "--wpp", "-q",
                           "-o", str(out), str(script)], capture_output=True, text=True, env=env, timeout=600,
                          cwd=tmp_path, stdin=subprocess.DEVNULL)
    assert proc.stdout == "ran True\n"
    assert proc.returncode in (2, 3), proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "the WPP builder" in lines[0], proc.stderr
    assert "writes to it failed" in lines[0] or "ended without a result" in lines[0], proc.stderr
    import json
    import sqlite3

    with sqlite3.connect(out) as db:
        names = [r[0] for r in db.execute("select name from arrays")]
        meta = dict(db.execute("select key, value from meta"))
    assert not [n for n in names if n.startswith("wpp.grammar")]
    assert json.loads(meta["wpp"])["error"] == lines[0].split("error: ", 1)[-1]
    for command in (["wpp"], ["info"], ["trace"]):
        read = subprocess.run([sys.executable, "-m", "wholetrace.cli", *command, str(out)], capture_output=True,
                              text=True, env=ENV, timeout=600, stdin=subprocess.DEVNULL)
        # (the CLI shortens a long line in its middle)
        assert read.returncode == 2 and ": no WPP in this recording: the WPP" in read.stderr, (command, read.stderr)
        assert read.stderr.rstrip().endswith(lines[0][-20:]), (command, read.stderr)
        assert "record it with --wpp" not in read.stderr


class _MetaWriter:
    """A recording writer's stand-in: keeps the meta set, and whether it was closed."""

    closed = False

    def __init__(self) -> None:
        self.meta: dict[str, object] = {}

    def set_meta(self, **items: object) -> None:
        self.meta.update(items)

    def close(self, **how: object) -> None:
        self.closed = True


def _ended_builder(result: bytes, stderr: bytes) -> tuple[object, int]:
    """A builder's stand-in that has ended: ``result`` on its output, ``stderr`` in its error file;
    (the process, the read end of its input pipe)."""
    import types
    import time

    r, w = os.pipe()
    out_r, out_w = os.pipe()
    os.write(out_w, result)
    os.close(out_w)
    err = open(os.devnull if not stderr else os.memfd_create("err"), "w+b")
    err.write(stderr)
    return types.SimpleNamespace(mode="blocks", lookahead=False, queue_events=10, spawned=time.time(),
                                 stderr=err, fd=w, out=os.fdopen(out_r, "rb"), reap=lambda: None,
                                 progress=None), r


GOOD = marshal.dumps({"grammars": {0: b"x" * 40}, "symbols": b"\0" * 24,
                      "stats": {"received_events": 0}, "streams": {"0": {}}})


@pytest.mark.parametrize("result, says", [
    (GOOD[:-7], "cut short or garbled: "),     # the builder died writing it
    (GOOD[:1], "cut short or garbled: "),
    (b"\xff\x00garbage", "cut short or garbled: bad marshal data"),
    (marshal.dumps([1, 2]), "not the builder's (a list)"),
    (marshal.dumps({"stats": {}}), "not the builder's (a dict)"),
])
@pytest.mark.parametrize("stderr", [b"", b"Traceback (most recent call last):\nMemoryError\n"])
def test_a_cut_short_or_garbled_result_is_the_one_line_error(result: bytes, says: str, stderr: bytes) -> None:
    """The builder's result cut short (it died writing it), garbled or not its dict: ``close``
    raises the one-line InternalError with what is wrong and the builder's last stderr line (review13b
    M1: a traceback of marshal's EOFError), stores meta ``wpp`` = the error, closes the writer."""
    from wholetrace.errors import InternalError
    from wholetrace.wpp import online

    process, r = _ended_builder(result, stderr)
    writer = _MetaWriter()
    wpp = online.OnlineWpp(writer, "blocks", process=process)   # type: ignore[arg-type]
    with pytest.raises(InternalError) as info:
        wpp.close()
    os.close(r)
    message = str(info.value)
    assert "\n" not in message and message.startswith("the WPP builder failed: ") and says in message
    assert ("MemoryError" in message) == bool(stderr)
    assert writer.meta["wpp"] == {"error": message, "mode": "blocks", "keep_raw": False, "events": 0}
    assert writer.closed


def test_names_in_use_stay_bound_while_numpy_completes() -> None:
    """A thread calling lean names in a loop (as the builder's reader calls ``np.frombuffer``)
    while another completes numpy (numba's import in the JIT fallback): no AttributeError, the
    names the same objects throughout; each in a fresh process, 4 times."""
    code = ("import sys, threading\nimport wholetrace.wpp.startup as s\nnp = s.lean_numpy()\n"
            "fb, empty = np.frombuffer, np.empty\nerrs, seen, stop = [], set(), threading.Event()\n"
            "def use():\n    while not stop.is_set():\n        try:\n"
            "            seen.add((np.frombuffer is fb, np.empty is empty))\n"
            "            np.frombuffer(bytearray(8), np.int32)\n"
            "        except BaseException as e:\n            errs.append(repr(e)); return\n"
            "t = threading.Thread(target=use)\nt.start()\nnp.unique\nstop.set()\nt.join()\n"
            "print(errs, sorted(seen), s.numpy_state())")
    for _ in range(4):
        assert _run(code) == "[] [(True, True)] full"


def test_the_recorder_reads_the_result_without_pickle() -> None:
    """The recorder's side of ``--wpp`` (``wpp.online``) imports neither pickle nor re (1.5-4.5 ms
    of record's start-up): the builder's result comes in marshal's format."""
    out = _run("import sys\nimport wholetrace.wpp.online\nprint(sorted(m for m in ('pickle', 're', 'copyreg', '_compat_pickle')"
               " if m in sys.modules))")
    assert out == "[]"


def test_the_spawn_imports_no_signal_module() -> None:
    """``wpp.spawn`` and ``wpp.online`` take their signal numbers and calls from ``_signal``
    (``signal`` brings ``enum``, ``functools`` and ``collections``, ~6 ms before the builder is
    started); the numbers ``posix_spawn`` resets are those of the signals meant (oracle: the C
    library's ``strsignal``)."""
    out = _run("import sys\nimport wholetrace.wpp.spawn\n"
               "print(sorted(m for m in ('signal', 'enum', 'functools', 'collections') if m in sys.modules))\n"
               "import wholetrace.wpp.online\nprint(sorted(m for m in ('signal', 'enum') if m in sys.modules))", env=None)
    assert out == "[]\n[]"
    import _signal
    import signal

    assert [signal.strsignal(n) for n in (_signal.SIGPIPE, _signal.SIGXFSZ)] == ["Broken pipe", "File size limit exceeded"]


#: numpy 2.0.x, whose C default promotion is "legacy" (numpy/__init__.py sets "weak"), installed
#: with ``pip install --target`` by the review of wave 13; skipped where it is not
NUMPY_20 = Path("/work/tmp/review13b/np/2.0.2")
_PROMOTION = ("a = np.array([1], np.int8)\ntry:\n    r = str((a + 300).dtype)\nexcept OverflowError:\n    r = 'overflow'\n"
              "print(r, (np.ones(2, np.float32) + np.float64(3.0)).dtype, (np.ones(2, np.float32) + 3.0).dtype)\n")


@pytest.mark.skipif(not (NUMPY_20 / "numpy").is_dir(), reason="no numpy 2.0.x installed aside")
def test_the_lean_numpy_promotes_as_numpy_does_on_numpy_20() -> None:
    """On numpy 2.0 the lean start-up sets NEP 50's "weak" promotion as ``numpy/__init__.py`` does
    (review13b M4: left at the C default "legacy", int8 + 300 gave int16 and float32 + float64(3)
    float32); oracle: a plain ``import numpy`` of the same numpy in another process."""
    env = {**ENV, "PYTHONPATH": os.pathsep.join([SRC, str(NUMPY_20)])}
    lean = _run("import wholetrace.wpp.startup as s\nnp = s.lean_numpy()\nassert s.numpy_state() == 'lean'\n"
                "import sys\nprint(sys.modules['numpy._core.multiarray']._get_promotion_state(), np.__version__)\n"
                + _PROMOTION + "print(s.numpy_state())", env=env).splitlines()
    plain = _run("import numpy as np\nprint(np._get_promotion_state(), np.__version__)\n" + _PROMOTION, env=env).splitlines()
    assert lean[0].split()[1].startswith("2.0.") and lean[-1] == "lean"
    assert lean[:-1] == plain == [f"weak {lean[0].split()[1]}", "overflow float64 float32"]
