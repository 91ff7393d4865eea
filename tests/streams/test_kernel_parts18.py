"""The kernel modules split in wave 18 (``kernels.predict``, ``kernels.wetdecode``): every public name of a part is
still importable from the old module, and every part's numba cache is keyed on all the parts."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numba
import pytest

import wholetrace.kernels.predict
import wholetrace.kernels.wetdecode  # noqa: F401 - the modules checked below

#: Each split module and the modules its kernels key their cache on, in ``cache_depends`` order.
PARTS = {
    "wholetrace.kernels.predict": ("wholetrace.kernels.predict_bits", "wholetrace.kernels.predict_codec",
                                   "wholetrace.kernels.predict_cursor"),
    "wholetrace.kernels.wetdecode": ("wholetrace.kernels.wetdecode_layout", "wholetrace.kernels.wetdecode_maps",
                                     "wholetrace.kernels.wetdecode_steps", "wholetrace.kernels.wetdecode"),
}


@pytest.mark.parametrize("name", sorted(PARTS))
def test_every_part_is_named(name: str) -> None:
    """The module's ``cache_depends`` names every ``kernels/<module>*.py`` file: a new part would otherwise keep
    a stale compiled copy of the constants and helpers it inlines from the others."""
    stem = name.rsplit(".", 1)[1]
    folder = Path(sys.modules[name].__file__).parent  # type: ignore[arg-type]
    files = {f"wholetrace.kernels.{p.stem}" for p in folder.glob(f"{stem}*.py")}
    assert files == set(PARTS[name]) | {name}


@pytest.mark.parametrize("name", sorted(PARTS))
def test_public_names_import_from_the_old_module(name: str) -> None:
    """Every public name a part defines is the same object as the old module's attribute of that name."""
    old = sys.modules[name]
    missing = []
    for part in PARTS[name]:
        mod = sys.modules[part]
        for attr, value in vars(mod).items():
            if attr.startswith("_") or getattr(value, "__module__", part) not in (part, None):
                continue
            if isinstance(value, type(sys)):   # an imported module (numpy, ...)
                continue
            if getattr(old, attr, missing) is not value:
                missing.append(attr)
    assert missing == []


@pytest.mark.skipif(numba.config.DISABLE_JIT, reason="numba's cache only exists with the JIT")
@pytest.mark.parametrize("name", sorted(PARTS))
def test_cache_keyed_on_every_part(name: str) -> None:
    """Every kernel of every part has a cache index key ending with the hash of all the parts (read here afresh)."""
    h = hashlib.sha256()
    for mod in PARTS[name]:
        with open(sys.modules[mod].__file__, "rb") as f:  # type: ignore[arg-type]
            h.update(f.read() + b"\0")
    want = h.hexdigest()
    seen = {}
    for mod in PARTS[name]:
        for d in vars(sys.modules[mod]).values():
            if isinstance(d, numba.core.registry.CPUDispatcher) and d.py_func.__module__ == mod:
                key = d._cache._index_key(numba.int64(numba.int64), d.targetctx.codegen())
                assert key[-1] == want, d.py_func.__name__
                seen[mod] = seen.get(mod, 0) + 1
    assert set(seen) == {m for m in PARTS[name] if not m.endswith("_layout")}   # the layout has no kernel


#: Run in a fresh interpreter on a copy of the package: call one cached kernel of a part, print how numba got it.
_PROBE = """
import numpy as np
from wholetrace.kernels import predict_bits, wetdecode_maps
import wholetrace.kernels.predict, wholetrace.kernels.wetdecode
predict_bits.put_gamma(np.zeros(4, np.uint64), 0, 256, np.uint64(5))
wetdecode_maps._hash3(1, 2, 3)
print(sum(predict_bits.put_gamma.stats.cache_hits.values()), sum(predict_bits.put_gamma.stats.cache_misses.values()),
      sum(wetdecode_maps._hash3.stats.cache_hits.values()), sum(wetdecode_maps._hash3.stats.cache_misses.values()))
"""


@pytest.mark.skipif(numba.config.DISABLE_JIT, reason="numba's cache only exists with the JIT")
def test_an_edit_of_another_part_recompiles(tmp_path: Path) -> None:
    """A kernel cached on disk is loaded from the cache in the next process, and compiled again after an edit of
    another part of its module (``predict_cursor`` for ``predict_bits.put_gamma``, ``wetdecode_steps`` for
    ``wetdecode_maps._hash3``), which numba alone would not notice."""
    src = Path(wholetrace.kernels.predict.__file__).parents[2]
    copy = tmp_path / "src"
    shutil.copytree(src / "wholetrace", copy / "wholetrace", ignore=shutil.ignore_patterns("__pycache__"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_")}
    env.update(PYTHONPATH=str(copy), PYTHONDONTWRITEBYTECODE="1")

    def probe() -> list[int]:
        out = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, env=env, timeout=600,
                             cwd=tmp_path)
        assert out.returncode == 0, out.stderr
        return [int(x) for x in out.stdout.split()]

    assert probe() == [0, 1, 0, 1]      # compiled, saved
    assert probe() == [1, 0, 1, 0]      # loaded from the cache
    kernels = copy / "wholetrace" / "kernels"
    for part in ("predict_cursor.py", "wetdecode_steps.py"):
        with open(kernels / part, "a") as f:
            f.write("# edited\n")
    assert probe() == [0, 1, 0, 1]      # compiled again
