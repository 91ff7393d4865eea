"""The SEQUITUR kernels split over three modules: one numba cache key over all three files, an AOT stand-in that imports no kernel module."""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import numba
import pytest

from wholetrace.kernels import sequitur as K  # noqa: F401 - imports the three modules

NAMES = ("wholetrace.kernels.sequitur_table", "wholetrace.kernels.sequitur_rules", "wholetrace.kernels.sequitur")


@pytest.mark.skipif(numba.config.DISABLE_JIT, reason="numba's cache only exists with the JIT")
def test_cache_keyed_on_all_three_files() -> None:
    """A kernel inlining a helper of another module must recompile when that module changes:
    every kernel's cache index key ends with the hash of the three sources (read here afresh)."""
    h = hashlib.sha256()
    for name in NAMES:
        with open(sys.modules[name].__file__, "rb") as f:  # type: ignore[arg-type]
            h.update(f.read() + b"\0")
    want = h.hexdigest()
    seen = 0
    for name in NAMES:
        for d in vars(sys.modules[name]).values():
            if isinstance(d, numba.core.registry.CPUDispatcher) and d.py_func.__module__ == name:
                key = d._cache._index_key(numba.int64(numba.int64), d.targetctx.codegen())
                assert key[-1] == want, (name, d.py_func.__name__)
                seen += 1
    assert seen >= 20  # the helpers of all three modules, not just the entry points


def test_aot_standin_imports_no_kernel_module() -> None:
    """wpp.aot re-creates a kernel module's module-valued globals by importing them: a kernel
    module there would load numba's real module before ``install`` and force the JIT."""
    from wholetrace.wpp import aot

    imports, _ = aot._python_parts(sys.modules["wholetrace.kernels.sequitur"], {})
    assert not [m for m in imports.values() if m.startswith("wholetrace.kernels")]


@pytest.mark.skipif(numba.config.DISABLE_JIT, reason="numba's cache only exists with the JIT")
def test_a_numba_without_the_cache_hook_keeps_no_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Should numba drop its private ``FunctionCache._index_key``, the kernels compile uncached
    (never stale) instead of failing at import."""
    import importlib.util

    from wholetrace.kernels import _jit

    src = tmp_path / "wt_cache_probe.py"
    src.write_text("from wholetrace.kernels._jit import kernel\n\n@kernel\ndef twice(x):\n    return 2 * x\n")
    spec = importlib.util.spec_from_file_location("wt_cache_probe", src)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "wt_cache_probe", mod)
    spec.loader.exec_module(mod)
    monkeypatch.setattr(numba.core.caching, "FunctionCache", type("FunctionCache", (), {}))
    _jit.cache_depends(["wt_cache_probe"])
    assert isinstance(mod.twice._cache, _jit._NoCache)
    assert mod.twice(21) == 42
