"""The builder's start-up, wave 11: ``python -S`` with the recorded process's path, numpy's core only (``wpp.startup``)."""

from __future__ import annotations

import os
import marshal
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from wtutil import ENV

SRC = str(Path(__file__).resolve().parents[2] / "src")


def _run(code: str, *args: str, env: dict[str, str] | None = None) -> str:
    return subprocess.run([sys.executable, "-W", "error", "-c", code, *args], env=env or ENV,
                          capture_output=True, text=True, check=True).stdout.strip()


def test_the_spawn_code_is_the_startup_code() -> None:
    from wholetrace.wpp import spawn, startup

    assert spawn._CODE == startup.CODE


def test_lean_numpy_imports_the_core_only_and_completes_to_what_import_numpy_gives() -> None:
    """Oracle: a plain ``import numpy`` in another process (names of the module's namespace and, per
    name, the module the object comes from).  No warning either (``-W error``: numpy's reload guard)."""
    show = ("print(sorted((k, getattr(v, '__module__', None) or type(v).__name__) for k, v in vars(np).items()"
            " if k not in ('__builtins__',)))")
    lean = _run("import sys\nimport wholetrace.wpp.startup as s\nnp = s.lean_numpy()\n"
                "before = sorted(m for m in ('numpy.lib', 'numpy.linalg', 'numpy.matrixlib', 'numpy.__config__')"
                " if m in sys.modules)\n"
                "a = np.frombuffer(np.array([3, 1, 2], np.int32).tobytes(), np.int32)\n"
                "print(before, s.numpy_state(), np.concatenate([a, a]).tolist())\n"
                "u = np.unique(a)\n"   # numpy.lib: completes the import
                "print(s.numpy_state(), u.tolist(), np.unique is sys.modules['numpy.lib._arraysetops_impl'].unique,"
                " len(np.frombuffer.__doc__ or ''), len(np.ndarray.sum.__doc__ or ''))\n"
                + show)
    # the same calls (np.unique imports numpy.ma, which becomes an attribute)
    plain = _run("import numpy as np\nnp.unique(np.array([3, 1, 2], np.int32))\n"
                 "print(len(np.frombuffer.__doc__ or ''), len(np.ndarray.sum.__doc__ or ''))\n" + show)
    first, second, names = lean.splitlines()
    docs, plain_names = plain.splitlines()
    assert first == "[] lean [3, 1, 2, 3, 1, 2]"
    assert second == "full [1, 2, 3] True " + docs     # the docstrings are added on completion
    assert int(docs.split()[0]) > 100
    assert names == plain_names


def test_lean_numpy_can_be_turned_off() -> None:
    out = _run("import sys\nimport wholetrace.wpp.startup as s\ns.lean_numpy()\nprint(s.numpy_state())",
               env={**ENV, "WHOLETRACE_LEAN_NUMPY": "0"})
    assert out == "full"


def _path() -> list[str]:
    """``site_free_path`` in a fresh process (pytest's assertion rewriter is an import hook here)."""
    path = eval(_run(f"from wholetrace.wpp.spawn import site_free_path; print(repr(site_free_path({SRC!r})))"))
    if path is None:
        pytest.skip("this interpreter imports through more than the path (a finder or path hook from a .pth): "
                    "the builder starts with site")
    assert path[0] == SRC
    return list(path)


def _plain_meta_path() -> list[object]:
    """This process's meta path without pytest's assertion rewriter; skips when it holds a finder
    that ``site_free_path`` declines (an editable install of wholetrace, a plug-in's import hook)."""
    from wholetrace.wpp.spawn import site_free_path

    plain = [f for f in sys.meta_path if type(f).__name__ != "AssertionRewritingHook"]
    saved = sys.meta_path[:]
    sys.meta_path[:] = plain
    try:
        if site_free_path("/wt-root") is None:
            pytest.skip(f"this interpreter's meta path is not plain: {plain}")
    finally:
        sys.meta_path[:] = saved
    return plain


def _frames(mode_events: list[np.ndarray]) -> bytes:
    out = b""
    for sid, ev in enumerate(mode_events):
        ev = np.ascontiguousarray(ev, np.int32)
        for lo in range(0, len(ev), 5000):
            part = ev[lo:lo + 5000]
            out += struct.pack("<ii", sid, len(part)) + part.tobytes()
    return out + struct.pack("<ii", -1, 0)


def _events(seed: int) -> list[np.ndarray]:
    """Two streams of witness-mode-like events: ENTER f / block ids / LEAVE, nested and repeated."""
    from wholetrace.events import ENTER_BASE, LEAVE

    rng = np.random.default_rng(seed)
    streams = []
    for _ in range(2):
        ev: list[int] = []
        motifs = [rng.integers(0, 40, rng.integers(2, 7)).tolist() for _ in range(30)]
        for _ in range(3000):
            f = int(rng.integers(0, 9))
            ev += [-(ENTER_BASE + f), *motifs[int(rng.integers(0, 30))], LEAVE]
        streams.append(np.array(ev, np.int32))
    return streams


def _build(cmd: list[str], data: bytes, env: dict[str, str]) -> dict:
    p = subprocess.run(cmd, input=data, capture_output=True, env=env, check=True)
    result = marshal.loads(p.stdout)
    assert "error" not in result, result
    return result


@pytest.mark.parametrize("lookahead", ["0", "1"])
def test_the_builder_started_the_new_way_builds_the_same_grammars(lookahead: str) -> None:
    """``python -S -c CODE`` with a path and numpy's core only against the wave-10 start
    (``python -m wholetrace.wpp.builder`` with site and all of numpy): byte-identical grammars
    and terminal tables; both use the compiled kernels when they are there."""
    from wholetrace.wpp.spawn import _CODE

    path = _path()
    data = _frames(_events(11))
    env = {**ENV, "PYTHONPATH": SRC, "OPENBLAS_NUM_THREADS": "1"}
    args = ["blocks", lookahead, "100000", "0"]
    new = _build([sys.executable, "-S", "-c", _CODE, *args, *path], data, env)
    old = _build([sys.executable, "-m", "wholetrace.wpp.builder", *args], data, {**env, "WHOLETRACE_LEAN_NUMPY": "0"})
    assert new["stats"]["startup"] == {"numpy": "lean", "site": False}
    assert old["stats"]["startup"] == {"numpy": "full", "site": True}
    assert new["stats"]["kernels"] == old["stats"]["kernels"]
    assert set(new["grammars"]) == {0, 1}
    assert new["grammars"] == old["grammars"] and new["symbols"] == old["symbols"]
    assert new["stats"]["received_events"] == sum(len(e) for e in _events(11))


def test_the_builder_imports_nothing_it_should_not() -> None:
    """After building and encoding two streams: no site, none of numpy but its core, no numba
    (compiled kernels), none of the modules earlier waves kept out."""
    from wholetrace.wpp.spawn import _CODE

    code = ("import os, sys\nreal = os._exit\n"
            "def _exit(c):\n    sys.stderr.write('MODULES ' + ' '.join(sorted(sys.modules)) + '\\n'); sys.stderr.flush(); real(c)\n"
            "os._exit = _exit\n" + _CODE.replace("; ", "\n"))
    p = subprocess.run([sys.executable, "-S", "-c", code, "blocks", "1", "100000", "0", *_path()],
                       input=_frames(_events(3)), capture_output=True, check=True,
                       env={**ENV, "PYTHONPATH": SRC, "OPENBLAS_NUM_THREADS": "1"})
    result = marshal.loads(p.stdout)
    assert "error" not in result
    modules = set(p.stderr.decode().split("MODULES ", 1)[1].split())
    assert "numpy._core._multiarray_umath" in modules and "wholetrace.grammar.encoding" in modules   # the check sees them
    banned = {"site", "sitecustomize", "numpy.lib", "numpy.linalg", "numpy.matrixlib", "numpy.__config__",
              "numpy.fft", "numpy.random", "tempfile", "bz2", "lzma", "hashlib", "pathlib", "subprocess"}
    if result["stats"]["kernels"] == "aot":
        banned |= {"numba", "llvmlite"}
    assert sorted(banned & modules) == []


def test_no_site_only_when_imports_go_through_the_path(monkeypatch: pytest.MonkeyPatch) -> None:
    from wholetrace.wpp.spawn import site_free_path

    monkeypatch.setattr(sys, "meta_path", _plain_meta_path())
    path = site_free_path("/wt-root")
    here = ("", os.getcwd())     # not the builder's (wave 14: test_spawn_path14)
    assert path is not None and path[0] == "/wt-root" and path[1:] == [p for p in sys.path if p != "/wt-root" and p not in here]
    plain = list(sys.meta_path)

    class EditableFinder:   # an editable install's finder, an import hook: the path is not the whole story
        def find_spec(self, *a: object) -> None:
            return None

    monkeypatch.setattr(sys, "meta_path", [EditableFinder(), *plain])
    assert site_free_path("/wt-root") is None
    monkeypatch.setattr(sys, "meta_path", plain)
    assert site_free_path("/wt-root") is not None
    monkeypatch.setattr(sys, "path_hooks", [*sys.path_hooks, lambda p: None])
    assert site_free_path("/wt-root") is None



def test_a_virtualenv_venv_s_finder_is_plain(monkeypatch: pytest.MonkeyPatch) -> None:
    """virtualenv's ``_virtualenv.pth`` (tox, poetry, hatch venvs) puts its ``_Finder`` first in
    the meta path of every process; it only patches distutils/setuptools' ``dist`` on import."""
    from wholetrace.wpp.spawn import site_free_path

    finder = type("_Finder", (), {"__module__": "_virtualenv", "find_spec": lambda self, *a, **k: None})
    monkeypatch.setattr(sys, "meta_path", [finder(), *_plain_meta_path()])
    assert site_free_path("/wt-root") is not None



def test_finders_and_path_hooks_are_recognised_by_identity_not_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    """A user's finder or path hook named as the interpreter's (or the shims') is an import hook
    like any other; the interpreter's own FileFinder hook made again with its loaders is plain."""
    import importlib.machinery as im
    import zipimport

    from wholetrace.wpp.spawn import site_free_path

    plain = _plain_meta_path()

    def finder(name: str, module: str = __name__) -> object:
        return type(name, (), {"__module__": module, "find_spec": lambda self, *a, **k: None})()

    for fake in (finder("PathFinder"), type("PathFinder", (), {}), finder("DistutilsMetaFinder"),
                 finder("_Finder"), finder("_Finder", "virtualenv_not")):
        monkeypatch.setattr(sys, "meta_path", [fake, *plain])
        assert site_free_path("/wt-root") is None, fake
    monkeypatch.setattr(sys, "meta_path", [finder("DistutilsMetaFinder", "_distutils_hack"), *plain])
    assert site_free_path("/wt-root") is not None
    monkeypatch.setattr(sys, "meta_path", plain)

    zip_hook, file_hook = sys.path_hooks
    assert zip_hook is zipimport.zipimporter
    details = dict(zip(file_hook.__code__.co_freevars, (c.cell_contents for c in file_hook.__closure__)))
    standard = details["loader_details"]

    def path_hook_for_FileFinder(path: str) -> None:
        raise ImportError(path)

    path_hook_for_FileFinder.__qualname__ = file_hook.__qualname__
    zipimporter = type("zipimporter", (), {"__qualname__": "zipimporter"})

    class Loader(im.SourceFileLoader):
        pass

    for hooks in ([zip_hook, path_hook_for_FileFinder], [zipimporter, file_hook],
                  [zip_hook, im.FileFinder.path_hook(*standard, (Loader, [".xpy"]))],
                  [zip_hook, file_hook, file_hook], [file_hook]):
        monkeypatch.setattr(sys, "path_hooks", hooks)
        assert site_free_path("/wt-root") is None, hooks
    monkeypatch.setattr(sys, "path_hooks", [zip_hook, im.FileFinder.path_hook(*standard)])
    assert site_free_path("/wt-root") is not None


def _record_env(tmp: Path, extra: dict[str, str]) -> dict:
    prog = tmp / "prog.py"
    prog.write_text("import helper\ndef f(n):\n    return sum(i * i for i in range(n))\n"
                    "for k in range(300):\n    f(k)\nprint('done', helper.X)\n")
    out = tmp / "o.wt"
    p = subprocess.run([sys.executable, "-m", "wholetrace", "record", "--mode", "path", "--wpp", "-q",
                        "-o", str(out), str(prog)], cwd=tmp, env={**ENV, **extra}, capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "done 7"
    from wholetrace.store import open_recording

    with open_recording(out) as rec:
        return dict(rec.meta["wpp"])


@pytest.mark.parametrize("start", ["exec", "fork"])
@pytest.mark.parametrize("how", ["pythonpath", "startup", "home"])
def test_the_builder_starts_with_the_users_python_environment(tmp_path: Path, how: str, start: str) -> None:
    """PYTHONPATH (a directory the program imports from), PYTHONSTARTUP (a file that fails: only
    interactive sessions read it), PYTHONHOME (the interpreter's own prefix): the recording works
    and the builder started without site (exec'd; forked: with the recorder's, wave 23), numpy's
    core only."""
    _path()     # skips where the builder starts with site
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "helper.py").write_text("X = 7\n")
    extra = {"PYTHONPATH": os.pathsep.join([str(lib), ENV.get("PYTHONPATH", "")]).rstrip(os.pathsep),
             "WHOLETRACE_WPP_START": start}
    if how == "startup":
        bad = tmp_path / "startup.py"
        bad.write_text("raise SystemExit('PYTHONSTARTUP was run')\n")
        extra["PYTHONSTARTUP"] = str(bad)
    if how == "home":
        extra["PYTHONHOME"] = sys.base_prefix if sys.base_exec_prefix == sys.base_prefix else \
            os.pathsep.join([sys.base_prefix, sys.base_exec_prefix])
    meta = _record_env(tmp_path, extra)
    forked = start == "fork" and sys.platform == "linux"
    assert meta["startup"] == {"numpy": "lean", "site": forked, "start": "fork" if forked else "exec"}
    assert meta["events"] > 1000


def test_the_jit_fallback_completes_numpy_and_builds_the_same_grammars() -> None:
    """Without the compiled kernels the builder imports numba, which needs all of numpy: the lean
    module completes itself on numba's first attribute and the grammars are the compiled ones'."""
    from wholetrace.wpp.spawn import _CODE

    data = _frames(_events(5))
    env = {**ENV, "PYTHONPATH": SRC, "OPENBLAS_NUM_THREADS": "1"}
    cmd = [sys.executable, "-S", "-c", _CODE, "blocks", "1", "100000", "0", *_path()]
    jit = _build(cmd, data, {**env, "WHOLETRACE_AOT": "0"})
    compiled = _build(cmd, data, env)
    assert jit["stats"]["kernels"].startswith("jit")
    assert jit["stats"]["startup"] == {"numpy": "full", "site": False}
    assert jit["grammars"] == compiled["grammars"] and jit["symbols"] == compiled["symbols"]


def test_the_lean_numpy_completes_once_for_two_threads() -> None:
    """Two threads behind a barrier ask the lean numpy for names it lacks (numpy.lib's unique, the
    submodules lib/linalg): both get numpy's objects, none an AttributeError, and no warning
    (``-W error``: numpy's reload guard); each pair in a fresh process, 8 times."""
    code = ("import sys, threading\nimport wholetrace.wpp.startup as s\nnp = s.lean_numpy()\n"
            "got, errs = {}, []\nbar = threading.Barrier(2)\n"
            "def f(name):\n    bar.wait()\n    try:\n        got[name] = getattr(np, name)\n"
            "    except BaseException as e:\n        errs.append(f'{name}: {type(e).__name__}: {e}')\n"
            "ts = [threading.Thread(target=f, args=(n,)) for n in ('unique', sys.argv[1])]\n"
            "[t.start() for t in ts]\n[t.join() for t in ts]\n"
            "import numpy.lib._arraysetops_impl as a, numpy.linalg, numpy.lib\n"
            "print(errs, got['unique'] is a.unique, got[sys.argv[1]] is sys.modules['numpy.' + sys.argv[1]],"
            " s.numpy_state())")
    for other in ("lib", "linalg") * 4:
        assert _run(code, other) == "[] True True full"


#: a numpy._core ``__init__`` as numpy 2.x's, in the parts the lean path follows (it copes with the
#: layouts of :func:`_fake_numpy`)
_FAKE_CORE_INIT = ("from . import multiarray, umath, numerictypes\n"
                   "if hasattr(multiarray, 'set_typeDict'):\n    multiarray.set_typeDict(numerictypes.sctypeDict)\n"
                   "try:\n    from . import fromnumeric\nexcept ImportError:\n    pass\n"
                   "from . import numeric, shape_base\nfrom .numeric import *\nfrom .shape_base import *\n")


def _fake_numpy(tmp: Path, layout: str) -> Path:
    """A numpy 2.x package of a layout not yet seen, where the lean path fails at a given step
    (``layout``) but numpy's own ``__init__``s work: its __init__ as numpy's (version, _globals,
    _core, then lib); its multiarray counts its loads (builtins.LOADS: a compiled module cannot be
    loaded twice)."""
    pkg = tmp / "numpy"
    core = pkg / "_core"
    core.mkdir(parents=True)
    (pkg / "__init__.py").write_text("from .version import __version__\nfrom . import _core\nfrom ._core import *\nlib = 'LIB'\n"
                                     "def __getattr__(name):\n    raise AttributeError(name)\n")
    (pkg / "version.py").write_text("__version__ = '2.9.0'\n")
    (pkg / "_globals.py").write_text("class _CopyMode: pass\n_NoValue = object()\n")
    (pkg / "_distributor_init.py").write_text("")
    (pkg / "_expired_attrs_2_0.py").write_text("__expired_attributes__ = {}\n")
    (core / "__init__.py").write_text(_FAKE_CORE_INIT)
    (core / "multiarray.py").write_text(
        "import builtins\nbuiltins.LOADS = getattr(builtins, 'LOADS', 0) + 1\n"
        + ("" if layout == "no set_typeDict" else "def set_typeDict(d):\n    pass\n")
        + ("" if layout == "no madvise" else "def _set_madvise_hugepage(v):\n    return v\n"))
    (core / "umath.py").write_text("")
    (core / "numerictypes.py").write_text("sctypeDict = {}\n")
    if layout != "no fromnumeric":
        (core / "fromnumeric.py").write_text("")
    (core / "numeric.py").write_text(("" if layout == "no __all__" else "__all__ = ['full']\n")
                                     + "def full():\n    return 'FULL'\n")
    (core / "shape_base.py").write_text("__all__ = ['stack']\ndef stack():\n    return 'STACK'\n")
    return tmp


@pytest.mark.parametrize("tier", ["python", "c"])
@pytest.mark.parametrize("layout", ["no set_typeDict", "no fromnumeric", "no __all__", "no madvise", "followed"])
def test_a_numpy_core_the_lean_path_cannot_take_completes_at_once(tmp_path: Path, layout: str, tier: str) -> None:
    """A future numpy 2.x whose ``_core`` the lean path cannot follow, at each of its steps (after
    multiarray and numerictypes are loaded, at an import, at the names, after the names are
    bound): the builder still gets numpy, completed at once, as ``import numpy`` gives it (oracle:
    another process), each module loaded once.  The control ``followed`` (nothing missing) stays lean
    in the python tier (wave 13's lean core); the C tier (wave 18) finds no compiled module in
    this fake ``numpy._core`` and completes at once for every layout."""
    _fake_numpy(tmp_path, layout)
    env = {**ENV, "PYTHONPATH": os.pathsep.join([str(tmp_path), SRC]), "WHOLETRACE_LEAN_NUMPY": tier}
    show = ("print(np.__version__, np.lib, np.full(), np.stack(), np.full is sys.modules['numpy._core.numeric'].full,"
            " sys.modules['numpy'] is np, builtins.LOADS)\n")
    out = _run("import builtins, sys\nimport wholetrace.wpp.startup as s\nnp = s.lean_numpy()\nprint(s.numpy_state())\n"
               + show, env=env)
    plain = _run("import builtins, sys\nimport numpy as np\n" + show, env=env)
    assert plain == "2.9.0 LIB FULL STACK True True 1"
    assert out == ("lean" if layout == "followed" and tier == "python" else "full") + "\n" + plain


@pytest.mark.parametrize("setting", [None, "0", "1"])
def test_the_lean_numpy_sets_madvise_hugepage_as_import_numpy_does(setting: str | None) -> None:
    """Oracle: ``import numpy`` in another process, with NUMPY_MADVISE_HUGEPAGE unset, 0 and 1."""
    env = {k: v for k, v in ENV.items() if k != "NUMPY_MADVISE_HUGEPAGE"}
    if setting is not None:
        env["NUMPY_MADVISE_HUGEPAGE"] = setting
    get = "print(np._core._multiarray_umath._get_madvise_hugepage())"   # the C tier has no multiarray (wave 18)
    lean = _run("import wholetrace.wpp.startup as s\nnp = s.lean_numpy()\nprint(s.numpy_state())\n" + get, env=env)
    plain = _run("import numpy as np\n" + get, env=env)
    assert lean == "lean\n" + plain
    if setting is not None:
        assert plain == str(bool(int(setting)))
