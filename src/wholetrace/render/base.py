"""The renderer interface (as pyinstrument's ``Renderer``): options in the constructor, then ``render``."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, ClassVar, TextIO

if TYPE_CHECKING:
    from wholetrace.trace.session import Trace


class Renderer(ABC):
    """Writes one view of a trace to a text stream.  Subclasses name their ``format`` (the
    command-line ``--format`` value) and take their options as constructor arguments."""

    format: ClassVar[str]

    @abstractmethod
    def render(self, trace: Trace, out: TextIO) -> None:
        """Write the view of ``trace`` to ``out`` (streamed: traces can be long)."""

    def render_text(self, trace: Trace) -> str:
        """The view as one string (small views and tests)."""
        import io

        buf = io.StringIO()
        self.render(trace, buf)
        return buf.getvalue()


def choose(renderers: list[type[Renderer]], fmt: str) -> type[Renderer]:
    """The renderer class for ``--format fmt``."""
    for r in renderers:
        if r.format == fmt:
            return r
    raise ValueError(f"no renderer for format {fmt!r}")
