"""The WPP builder's ahead-of-time compiled kernels (``wpp/aot.py``): the same grammars, byte for
byte, as the JIT kernels on the SEQUITUR vectors and on a recording, without importing numba; the
JIT fallback when the compiled module is missing, disabled, or given arguments it was not compiled for."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from wholetrace.grammar import sequitur
from wholetrace.store import Recording
from wholetrace.wpp import aot
from wtutil import ENV

pytestmark = pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")

VECTORS = Path(__file__).resolve().parents[1] / "grammar" / "test_sequitur_vectors.py"


def _vectors() -> dict[str, np.ndarray]:
    """The shared SEQUITUR vectors: the small ones (ASCII codes) and rand4 (1 M symbols)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("_wt_sequitur_vectors", VECTORS)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(VECTORS.parent))  # its naive twin's folder
    try:
        spec.loader.exec_module(mod)
    finally:
        sys.path.remove(str(VECTORS.parent))
    out = {text: mod.codes(text).astype(np.int64) for text in mod.SMALL}
    out["rand4"] = mod.vector("rand4").astype(np.int64)
    return out


GRAMMARS = textwrap.dedent('''
    import hashlib, json, sys
    import numpy as np
    from wholetrace.wpp.aot import install
    how = install()
    from wholetrace.grammar import sequitur
    data = np.load(sys.argv[1])
    out = {"kernels": how, "numba": "numba" in sys.modules, "sha": {}}
    for name in data.files:
        for la in (False, True):
            out["sha"][f"{name} {la}"] = hashlib.sha256(sequitur(data[name], lookahead=la).to_bytes()).hexdigest()
    print(json.dumps(out))
''')


@pytest.fixture(scope="module")
def compiled() -> Path:
    """The compiled kernels for this key (built once per machine and version if missing)."""
    if isinstance(aot.load(), str):
        subprocess.run([sys.executable, "-m", "wholetrace.wpp.aot"], check=True, env=ENV,
                       stdout=subprocess.DEVNULL, timeout=900)
    assert not isinstance(aot.load(), str)
    return aot.cache_dir() / aot.key()


def _grammar_hashes(tmp: Path, data: Path, **env: str) -> dict[str, object]:
    script = tmp / "grammars.py"
    script.write_text(GRAMMARS)
    proc = subprocess.run([sys.executable, str(script), str(data)], capture_output=True, text=True,
                          env={**ENV, **env}, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout)


def test_compiled_kernels_give_the_jit_grammars_on_the_sequitur_vectors(tmp_path: Path, compiled: Path) -> None:
    vectors = _vectors()
    data = tmp_path / "vectors.npz"
    np.savez(data, **{name: a for name, a in vectors.items()})
    got = _grammar_hashes(tmp_path, data)
    assert got["kernels"] == "aot" and got["numba"] is False
    want = {f"{name} {la}": hashlib.sha256(sequitur(a, lookahead=la).to_bytes()).hexdigest()
            for name, a in vectors.items() for la in (False, True)}
    assert got["sha"] == want
    # and the fallback, in the same harness: the JIT in the builder's place
    off = _grammar_hashes(tmp_path, data, **{aot.ENV_SWITCH: "0"})
    assert off["kernels"].startswith("jit") and off["numba"] is True and off["sha"] == want


@pytest.mark.parametrize("env, why", [({aot.ENV_DIR: "empty"}, "jit: no compiled kernels"),
                                      ({"NUMBA_DISABLE_JIT": "1"}, "jit: NUMBA_DISABLE_JIT")])
def test_a_missing_compiled_module_falls_back_to_the_jit(tmp_path: Path, env: dict[str, str], why: str) -> None:
    data = tmp_path / "v.npz"
    np.savez(data, abcab=np.frombuffer(b"abcabdabcabd", np.uint8).astype(np.int64))
    env = {k: str(tmp_path / v) if k == aot.ENV_DIR else v for k, v in env.items()}
    got = _grammar_hashes(tmp_path, data, **env)
    assert got["kernels"].startswith(why) and got["numba"] is True
    assert got["sha"]["abcab False"] == hashlib.sha256(sequitur(np.frombuffer(b"abcabdabcabd", np.uint8)
                                                                .astype(np.int64)).to_bytes()).hexdigest()


def test_a_stand_in_kernel_takes_other_argument_types_through_the_jit(compiled: Path) -> None:
    modules = aot.load()
    assert not isinstance(modules, str)
    flat = modules["wholetrace.kernels.sequitur_flat"]
    from wholetrace.kernels import sequitur_flat as real

    a64 = np.array([0, 1, 127, 128, 300, 1 << 40], np.int64)
    assert flat.varint_encode(a64).tobytes() == real.varint_encode(a64).tobytes()     # compiled export
    a32 = a64[:5].astype(np.int32)                                                     # not compiled: JIT
    assert flat.varint_encode(a32).tobytes() == real.varint_encode(a32).tobytes()
    assert flat._real_module is not None and flat._real_module is not real           # a private JIT copy


PROGRAM = textwrap.dedent('''
    class Node:
        def __init__(self, v, kids=()):
            self.v, self.kids = v, list(kids)
        def total(self):
            t = self.v
            for k in self.kids:
                t += k.total()
            return t
    def tree(d):
        return Node(d, [tree(d - 1) for _ in range(3)]) if d else Node(1)
    def risky(i):
        try:
            if i % 7 == 0:
                raise ValueError(i)
            return i
        except ValueError:
            return -1
    print(sum(tree(6).total() for _ in range(5)), sum(risky(i) for i in range(5000)))
''')


def _record(tmp: Path, out: Path, *options: str, **env: str) -> None:
    script = tmp / "prog.py"
    script.write_text(PROGRAM)
    cmd = [sys.executable, "-m", "wholetrace.cli", "record", "--mode", "path", "--wpp", *options, "-q", "-o", str(out),
           str(script)]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp, env={**ENV, **env}, timeout=600,
                          stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr[-2000:]


def _stored(path: Path) -> tuple[str, dict[str, bytes]]:
    with Recording(path) as rec:
        names = sorted({name for name, _key, _size in rec.array_sizes("wpp.")})
        return rec.meta["wpp"]["kernels"], {n: rec.get_array(n).tobytes() for n in sorted(names)}


def test_a_recording_builds_the_same_wpp_with_compiled_and_jit_kernels(tmp_path: Path, compiled: Path) -> None:
    _record(tmp_path, tmp_path / "aot.wt")
    _record(tmp_path, tmp_path / "jit.wt", **{aot.ENV_SWITCH: "0"})
    _record(tmp_path, tmp_path / "missing.wt", **{aot.ENV_DIR: str(tmp_path / "nothing")})
    k_aot, aot_arrays = _stored(tmp_path / "aot.wt")
    k_jit, jit_arrays = _stored(tmp_path / "jit.wt")
    k_missing, missing_arrays = _stored(tmp_path / "missing.wt")
    assert k_aot == "aot" and k_jit == f"jit: {aot.ENV_SWITCH}=0" and k_missing.startswith("jit: no compiled")
    assert len(aot_arrays) >= 2 and aot_arrays == jit_arrays == missing_arrays


def test_spilled_chunks_are_built_by_the_compiled_kernels(tmp_path: Path, compiled: Path) -> None:
    """A queue bound of one event spills every chunk; read back, they must still match the
    exports (a read-only array did not: the builder fell back to the JIT, seconds of compiling)."""
    _record(tmp_path, tmp_path / "memory.wt")
    _record(tmp_path, tmp_path / "spilled.wt", "--wpp-queue", "1")
    with Recording(tmp_path / "spilled.wt") as rec:
        assert rec.meta["wpp"]["spilled_chunks"] >= 1
    k_memory, memory_arrays = _stored(tmp_path / "memory.wt")
    k_spilled, spilled_arrays = _stored(tmp_path / "spilled.wt")
    assert k_memory == k_spilled == "aot"
    assert len(memory_arrays) >= 2 and memory_arrays == spilled_arrays


def test_the_key_changes_with_the_kernel_sources(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A stale module (kernels edited since it was compiled) is never loaded: the key hashes the sources."""
    before = aot.key()
    fake = tmp_path / "wholetrace"
    (fake / "kernels").mkdir(parents=True)
    (fake / "wpp").mkdir()
    real = Path(aot.__file__).resolve().parent.parent
    for p in (real / "kernels").glob("*.py"):
        (fake / "kernels" / p.name).write_bytes(p.read_bytes())
    (fake / "events.py").write_bytes((real / "events.py").read_bytes())
    (fake / "wpp" / "aot.py").write_bytes(Path(aot.__file__).read_bytes())
    (fake / "wpp" / aot.BUILD).write_bytes((real / "wpp" / aot.BUILD).read_bytes())   # the build side is in the key
    for parts in aot.CALLERS:
        (fake / parts[0]).mkdir(exist_ok=True)
        (fake.joinpath(*parts)).write_bytes(real.joinpath(*parts).read_bytes())
    monkeypatch.setattr(aot, "__file__", str(fake / "wpp" / "aot.py"))
    assert aot.key() == before
    with open(fake / "kernels" / "sequitur.py", "a") as f:
        f.write("\n# edited\n")
    edited = aot.key()
    assert edited != before
    # the Python layer deciding the kernels' argument types is in the key too (an int64 array
    # handed where the exports take int32 would silently run on numba's JIT)
    with open(fake / "wpp" / "intern.py", "a") as f:
        f.write("\n# edited\n")
    callers_edited = aot.key()
    assert callers_edited != edited
    # and the build side (``wpp.aotbuild``: what is exported, with which flags)
    with open(fake / "wpp" / aot.BUILD, "a") as f:
        f.write("\n# edited\n")
    assert aot.key() != callers_edited


def test_a_call_no_export_matches_is_named(compiled: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A stand-in kernel called with argument types the compiled module has no export for runs on
    the JIT, and says so: the builder puts the names in meta ``wpp.kernels``."""
    from wholetrace.wpp.builder import _kernels_used

    monkeypatch.setattr(aot, "JIT_FALLBACKS", set())
    modules = aot.load()
    assert not isinstance(modules, str)
    intern = modules["wholetrace.kernels.wpp_intern"]
    keys = np.array([5, 9], np.int64)
    assert [list(a) for a in intern.unpack(keys)] == [[0, 0], [-1, -1], [5, 9]]
    assert aot.JIT_FALLBACKS == set() and _kernels_used("aot") == "aot"
    assert [list(a) for a in intern.unpack(keys.astype(np.int32))] == [[0, 0], [-1, -1], [5, 9]]
    assert aot.JIT_FALLBACKS == {"wpp_intern.unpack"}
    assert _kernels_used("aot") == "aot (jit: wpp_intern.unpack)"


def test_python_functions_reading_other_globals_stay_with_the_real_module() -> None:
    """A stand-in re-creates a kernel module's plain functions over its own namespace only if
    every global they read is there (a class, say, is not: the call goes to the real module)."""
    import types

    m = types.ModuleType("fake_kernels")
    exec("import numpy as np\nK = 3\nclass C:\n    pass\n"
         "def ok():\n    return np.int64(K) + len([1])\n"
         "def bad():\n    return C()\n"
         "def worse():\n    return bad()\n", m.__dict__)
    imports, functions = aot._python_parts(m, {})
    assert imports == {"np": "numpy"} and set(functions) == {"ok"}


def test_install_starts_with_no_fallbacks_named(compiled: Path) -> None:
    """``JIT_FALLBACKS`` is the process's; ``install`` empties it, so a second build in one process
    does not report the first one's fallbacks (a subprocess: install replaces the kernel modules)."""
    code = ("from wholetrace.wpp import aot\naot.JIT_FALLBACKS.add('earlier.kernel')\n"
            "print(aot.install(), sorted(aot.JIT_FALLBACKS))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=ENV, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["aot", "[]"]


def test_every_stand_in_loads_its_real_module_after_install(compiled: Path) -> None:
    """review15b MED 2: the JIT fallback of any kernel module works in the builder's set-up (lean
    numpy, ``install``): ``sequitur``'s ``cache_depends`` reads its siblings' ``__file__``, which a
    stand-in now gives (the real module's file), so its real module loads (a subprocess: install
    replaces the kernel modules)."""
    code = textwrap.dedent('''
        import sys
        from wholetrace.wpp import startup
        startup.lean_numpy()
        from wholetrace.wpp import aot
        print(aot.install())
        names = sorted(n for n, m in list(sys.modules.items()) if isinstance(m, aot._StandIn))
        for name in names:
            real = sys.modules[name]._real()
            assert real.__file__ == sys.modules[name].__file__, name
            print(name, real.__name__ == name and real.__file__.endswith(name.rpartition(".")[2] + ".py"))
    ''')
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=ENV, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.split("\n")
    assert lines[0] == "aot"
    got = dict(line.split() for line in lines[1:] if line)
    assert "wholetrace.kernels.sequitur" in got and set(got.values()) == {"True"}, got
