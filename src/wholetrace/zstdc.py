"""The ``zstandard`` package's C backend, loaded without the package's ``__init__`` (platform, typing)."""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False   # typing is not imported at start-up (record's and the WPP builder's)
if TYPE_CHECKING:   # pragma: no cover
    from typing import Any


def _zstandard() -> Any:
    """The ``zstandard`` package's C backend, the module ``zstandard`` re-exports on CPython.

    Loaded from the package's folder without running ``zstandard/__init__.py``, which imports
    ``platform`` and ``typing`` (~4 ms of record's start-up) to choose a backend.  The package
    itself when it is imported already, when ``PYTHON_ZSTANDARD_IMPORT_POLICY`` chooses, or
    when the backend is not where it is on CPython.  Not put in ``sys.modules``: a program
    that imports ``zstandard`` imports the package as it would without wholetrace."""
    if "zstandard" in sys.modules or os.environ.get("PYTHON_ZSTANDARD_IMPORT_POLICY", "default").strip() != "default" \
            or sys.implementation.name != "cpython":
        import zstandard

        return zstandard
    from _frozen_importlib import ModuleSpec   # importlib.machinery's (the importlib package is not imported)
    from _frozen_importlib_external import EXTENSION_SUFFIXES, ExtensionFileLoader, PathFinder

    spec = PathFinder.find_spec("zstandard")
    for folder in (spec.submodule_search_locations or []) if spec is not None else []:
        for suffix in EXTENSION_SUFFIXES:
            path = os.path.join(folder, "backend_c" + suffix)
            if os.path.isfile(path):
                try:
                    loader = ExtensionFileLoader("zstandard.backend_c", path)
                    module = loader.create_module(ModuleSpec("zstandard.backend_c", loader,
                                                                                 origin=path))
                    loader.exec_module(module)
                    module.ZstdCompressor, module.ZstdDecompressor, module.ZstdError, module.frame_content_size
                except (ImportError, OSError, AttributeError):  # pragma: no cover - then the package
                    break
                return module
    import zstandard

    return zstandard


zstandard = _zstandard()
