"""The builder's start-up, wave 10: what it no longer imports or computes, and the spawn without subprocess."""

from __future__ import annotations

import os
import select
import struct
import subprocess
import sys
import time

from wtutil import ENV


def _fresh(code: str) -> str:
    return subprocess.run([sys.executable, "-c", code], env=ENV, capture_output=True, text=True,
                          check=True).stdout.strip()


def test_encoding_import_and_the_builders_encoding_need_no_bz2_lzma_or_coder_tables() -> None:
    """bz2 and lzma are blocked once the kernel modules are imported (numba, under the JIT, imports
    them through shutil): importing ``grammar.encoding`` and ``encode_explicit(fast=True)`` (all the
    builder does with it) still work, and the context-mixing coder's tables are not made."""
    out = _fresh("import sys\nimport numpy as np\n"
                 "import wholetrace.kernels.sequitur_code, wholetrace.kernels.sequitur_flat\n"
                 "sys.modules['bz2'] = sys.modules['lzma'] = None\n"
                 "import wholetrace.grammar.encoding as E\nfrom wholetrace.grammar import sequitur\n"
                 "g = sequitur(np.array([1, 2, 1, 2, 3, 1, 2, 3], np.int64), lookahead=True)\n"
                 "print(E.decode(E.encode_explicit(g, fast=True)).expand().tolist(), len(E._cm_tables_memo))")
    assert out == "[1, 2, 1, 2, 3, 1, 2, 3] 0"


def test_lazy_coder_tables_are_the_kernel_modules_tables() -> None:
    from wholetrace.grammar import encoding as E
    from wholetrace.kernels import sequitur_code as CM

    for got, want in zip(E._cm_tables(), CM.tables()):
        assert (got == want).all()
    assert E._cm_tables() is E._cm_tables()


def test_aot_key_imports_no_hashlib_and_is_the_hashlib_sha256_of_the_same_parts() -> None:
    """Oracle: the key recomputed with hashlib and platform (the wave-8 form)."""
    code = ("import sys\nfrom wholetrace.wpp import aot\nk = aot.key()\nprint('hashlib' in sys.modules, k)\n"
            "import hashlib, os, platform, numpy as np\n"
            "here = os.path.realpath(aot.__file__); pkg = os.path.dirname(os.path.dirname(here))\n"
            "kern = os.path.join(pkg, 'kernels'); h = hashlib.sha256()\n"
            "src = [os.path.join(kern, n) for n in sorted(os.listdir(kern)) if n.endswith('.py')]\n"
            "callers = [os.path.join(pkg, *c) for c in aot.CALLERS]\n"
            "build = os.path.join(os.path.dirname(here), 'aotbuild.py')\n"   # the build side (wave 17)
            "for p in src + callers + [os.path.join(pkg, 'events.py'), here, build]:\n"
            "    h.update(os.path.basename(p).encode() + b'\\0' + open(p, 'rb').read() + b'\\0')\n"
            "for part in (aot._version_file('numba'), aot._version_file('llvmlite'), np.__version__.encode(),\n"
            "             sys.version.encode(), platform.machine().encode(), sys.implementation.cache_tag.encode()):\n"
            "    h.update(part + b'\\0')\n"
            "print(h.hexdigest()[:24])")
    first, oracle = _fresh(code).splitlines()
    imported, key = first.split()
    assert imported == "False"
    assert key == oracle


def test_the_spawn_imports_neither_subprocess_nor_tempfile_nor_pickle() -> None:
    out = _fresh("import sys\nfrom wholetrace.wpp.cli import start_builder\n"
                 "import wholetrace.wpp.spawn\n"
                 "print(sorted(m for m in ('subprocess', 'tempfile', 'pickle', 'pathlib', 'typing', 'threading')"
                 " if m in sys.modules))")
    assert out == "[]"


def test_the_builder_keeps_no_descriptor_it_inherited(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """posix_spawn closes nothing (Popen closed every fd but 0-2): a pipe the recorded process
    could pass on must not stay open in the builder, whose reader would wait on it.  The exec'd
    builder (the forked one: tests/wpp/test_builder_fork23.py)."""
    from wholetrace.wpp.spawn import START_ENV, BuilderProcess

    monkeypatch.setenv(START_ENV, "exec")

    r, w = os.pipe()
    os.set_inheritable(w, True)
    p = BuilderProcess("path", lookahead=True, queue_events=1000)
    p.reap()
    os.close(w)
    try:
        ready, _, _ = select.select([r], [], [], 60)
        assert ready and os.read(r, 1) == b""      # EOF: nobody else holds the write end
    finally:
        os.write(p.fd, struct.pack("<ii", -1, 0))  # the end frame
        os.close(p.fd)
        data = p.out.read()
        p.out.close()
        p.stderr.close()
        os.close(r)
    import marshal

    assert "error" not in marshal.loads(data)


def _builder_pid(spawned: float) -> int:
    """The pid of the builder started at ``spawned`` (its command line carries it)."""
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/cmdline", "rb") as f:
                    argv = f.read().split(b"\0")
            except OSError:
                continue
            from wholetrace.wpp.spawn import _CODE   # the builder runs ``python [-S] -c _CODE ...`` (wave 11)

            if (b"wholetrace.wpp.builder" in argv or _CODE.encode() in argv) and repr(spawned).encode() in argv:
                return int(name)
    raise AssertionError("the builder is not running")


def test_the_shell_is_reaped_and_the_builder_is_no_child_in_its_own_session(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from wholetrace.wpp.spawn import START_ENV, BuilderProcess

    monkeypatch.setenv(START_ENV, "exec")   # the forked builder: tests/wpp/test_builder_fork23.py

    p = BuilderProcess("path", queue_events=1000)
    sh = p._sh
    p.reap()
    try:
        assert sh is not None
        try:
            os.kill(sh, 0)
            alive = True
        except ProcessLookupError:
            alive = False
        assert not alive                     # the shell exited and was reaped
        pid = _builder_pid(p.spawned)
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        ppid, sid = int(fields[1]), int(fields[3])
        assert ppid != os.getpid()           # not our child
        assert sid == sh != os.getsid(0)     # its own session (the shell led it)
    finally:
        os.write(p.fd, struct.pack("<ii", -1, 0))
        os.close(p.fd)
        p.out.read()
        p.out.close()
        p.stderr.close()


def test_the_aot_key_memo_follows_the_files(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The memoised key is the full key (the hash of the contents) for every state of the files,
    written over in place with the same size, and when the memo file is damaged."""
    from wholetrace.instrument import digest
    from wholetrace.wpp import aot

    monkeypatch.setenv(aot.ENV_DIR, str(tmp_path / "cache"))
    real = aot._key_files()
    a = tmp_path / "a.py"
    a.write_bytes(b"x = 1\n")
    monkeypatch.setattr(aot, "_key_files", lambda: real + [str(a)])
    first = aot.key()
    assert first == aot._full_key(real + [str(a)])
    assert not list((tmp_path / "cache").glob("key-*"))    # a.py is racily clean: no memo yet
    monkeypatch.setattr(digest, "RACY_NS", -10**12)          # as if every file were old
    assert aot.key() == first
    assert len(list((tmp_path / "cache").glob("key-*"))) == 1
    assert aot.key() == first
    time.sleep(0.05)    # file times advance by the kernel's clock tick (1-10 ms): a rewrite within
    a.write_bytes(b"x = 2\n")  # one tick at the same size would keep the stamp (documented)
    second = aot.key()
    assert second != first and second == aot._full_key(real + [str(a)])
    for memo in (tmp_path / "cache").glob("key-*"):
        memo.write_bytes(b"not a key")
    assert aot.key() == second
    monkeypatch.setattr(aot, "_key_files", lambda: real)
    assert aot.key() == aot._full_key(real)
