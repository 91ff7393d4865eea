"""Spawned and forkserver ``multiprocessing`` children: the object pickled into them that starts their recording."""

# Split from ``runtime.children`` (wave 17); ``Children.patch_spawn`` adds a :class:`Stowaway` to
# what ``multiprocessing.spawn.get_preparation_data`` sends the child (as coverage.py does).

from __future__ import annotations

import os
import sys
import types

from wholetrace.runtime.children import Children, Config, hook, new_part, part_name
from wholetrace.store.schema import PROCESS_KEY

TYPE_CHECKING = False   # typing is not imported at start-up (docs/design.md, "Start-up of record, wave 10")
if TYPE_CHECKING:   # pragma: no cover
    from typing import Any


class Stowaway:
    """Unpickled in a spawned child (before it imports the program's main module): starts its recording."""

    def __init__(self, config: Config) -> None:
        self.config = config

    def __reduce__(self) -> tuple[Any, tuple[Config]]:
        return (start_spawned, (self.config,))


def start_spawned(config: Config) -> None:
    """Start recording this freshly spawned ``multiprocessing`` child into a new part."""
    from wholetrace.instrument.loader import Scope
    from wholetrace.runtime import runner

    if runner.LIVE is not None:
        return None
    name = part_name()
    writer = new_part(os.path.join(config.parts, name))
    live = runner.start(writer, Scope(list(config.roots), list(config.include)), mode=config.mode,
                        cache=config.cache, **config.meta)
    ch = Children(live, Config(config.parts, config.mode, config.roots, config.include, config.cache, config.meta,
                               name), name)
    live.children = ch
    writer.set_meta(**{PROCESS_KEY: {"pid": os.getpid(), "ppid": os.getppid(), "parent": config.parent,
                                     "start": "spawn"}})
    writer.commit()
    hook()
    live.finder.on_import["multiprocessing.spawn"] = ch.patch_spawn
    ch.set_environment()
    spawn = sys.modules.get("multiprocessing.spawn")
    if spawn is not None:
        ch.patch_spawn(spawn)
        _instrument_main(spawn, live.instrumenter)
    # spawn children keep the finalisers registered now; forkserver children clear them and
    # run the after-fork hooks instead
    util = sys.modules.get("multiprocessing.util")
    if util is not None:
        ch._mp_child()
        util.register_after_fork(ch, Children._mp_child)
        ch.mp_hooked = True
    live.recorder.ends_inside = True
    return None


def _instrument_main(spawn: types.ModuleType, instrumenter: Any) -> None:
    """Make the child's next ``_fixup_main_from_path`` (the program's main module, run as
    ``__mp_main__``) run instrumented code; the original is back after that one call."""
    original = spawn._fixup_main_from_path

    def _fixup_main_from_path(main_path: str) -> None:
        spawn._fixup_main_from_path = original
        current = sys.modules["__main__"]
        if os.path.splitext(os.path.basename(main_path))[0] == "ipython" \
                or getattr(current, "__file__", None) == main_path:
            return
        spawn.old_main_modules.append(current)
        with open(main_path, "rb") as fh:
            code = instrumenter.compile(fh.read(), main_path)
        main = types.ModuleType("__mp_main__")
        main.__dict__.update(spawn.runpy._run_module_code(code, None, "__mp_main__", pkg_name="",  # type: ignore[attr-defined]
                                                    script_name=main_path))
        sys.modules["__main__"] = sys.modules["__mp_main__"] = main
    # (``spawn.runpy``: multiprocessing.spawn's own import; runpy is not imported at start-up)

    spawn._fixup_main_from_path = _fixup_main_from_path
