"""Plain record classes with a dataclass's ``==``, ``repr`` and (frozen) hash, without importing ``dataclasses``.

``record`` loads about twenty record classes before the program's first line; as dataclasses
they cost ``dataclasses`` itself (with ``inspect``, ``tokenize``, ``copy``) and ~0.25 ms each
to generate (docs/design.md, "Start-up of record, wave 10").  A subclass lists its fields in
``__slots__`` (or ``_fields``, when it keeps a ``__dict__`` or some slots are not fields) and
writes its own ``__init__``; ``==`` compares the fields of two objects of the same class, in
order, and ``repr`` shows them, as a dataclass with those fields does (fields a dataclass
declared with ``compare=False, repr=False`` are left out of ``_fields``).
"""

from __future__ import annotations

from _operator import attrgetter   # operator's own (operator.py imports it; docs/design.md, "Record's start-up, wave 15")
TYPE_CHECKING = False   # typing is not imported at start-up (mypy reads the name as typing's)
if TYPE_CHECKING:   # pragma: no cover
    from collections.abc import Callable

__all__ = ["Record", "FrozenRecord", "replace"]


class Record:
    """Equality and repr over ``_fields``; unhashable, as a dataclass with ``eq`` and without ``frozen``."""

    __slots__ = ()
    _fields: tuple[str, ...] = ()
    _get: Callable[[object], object]
    __hash__ = None  # type: ignore[assignment]

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        if "_fields" not in cls.__dict__:
            cls._fields = tuple(cls.__dict__.get("__slots__", ()))
        cls._get = attrgetter(*cls._fields) if cls._fields else (lambda obj: ())

    def __eq__(self, other: object) -> bool:
        if other.__class__ is self.__class__:
            get = self._get
            return get(self) == get(other)  # type: ignore[no-any-return]
        return NotImplemented

    def __repr__(self) -> str:
        inner = ", ".join([f"{f}={getattr(self, f)!r}" for f in self._fields])
        return f"{self.__class__.__qualname__}({inner})"


class FrozenRecord(Record):
    """A ``Record`` whose fields cannot be assigned after ``__init__`` (which sets them with
    ``object.__setattr__``), hashable by its fields, as a frozen dataclass.  Its ``__init__``
    takes the ``_fields`` in order (pickling and copying call it: they cannot assign)."""

    __slots__ = ()

    def __reduce__(self) -> tuple[type, tuple[object, ...]]:
        return self.__class__, tuple([getattr(self, f) for f in self._fields])

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(self._get(self))

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r}")


def replace(obj: Record, **changes: object) -> Record:
    """A new object of ``obj``'s class with ``changes`` (``dataclasses.replace`` for a record
    whose ``__init__`` takes its ``_fields`` by name)."""
    kwargs = {f: getattr(obj, f) for f in obj._fields}
    kwargs.update(changes)
    return obj.__class__(**kwargs)
