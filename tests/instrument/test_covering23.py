"""The with-exit statement lookup finds a code unit's exception-table entry by bisection: the
same entry as the linear scan, without a scan per code unit (wave 23: instrumenting one
720-line generated function took 45 CPU-s, 233 million ``Entry.covers`` calls)."""

from __future__ import annotations

import ast
from pathlib import Path
from types import CodeType

import pytest

from cleanup_programs import program
from wholetrace.instrument import bytecode
from wholetrace.instrument.loader import Instrumenter
from wholetrace.runtime.recorder import Recorder
from wholetrace.store import RecordingWriter


def _codes(code: CodeType) -> list[CodeType]:
    return [code] + [c for k in code.co_consts if isinstance(k, CodeType) for c in _codes(k)]


def _template(src: str, tmp_path: Path, mode: str = "blocks") -> CodeType:
    inst = Instrumenter(Recorder(RecordingWriter(tmp_path / f"{mode}.wt"), mode))
    return inst.template(ast.parse(src, "prog.py"), src, "prog.py")[0]


def test_bisection_finds_the_scans_entry(tmp_path: Path) -> None:
    """Every code unit of every code object, compiled plain and instrumented: the bisection's
    entry is the linear scan's (the naive twin), and the compiler's tables take the bisection."""
    src = program(1)
    n = 0
    for top in (compile(src, "prog.py", "exec"), _template(src, tmp_path)):
        for code in _codes(top):
            entries = bytecode.parse_exception_table(code.co_exceptiontable)
            starts = [e.start for e in entries]
            assert all(a.end <= b.start for a, b in zip(entries, entries[1:])), code.co_name
            for unit in range(len(code.co_code) // 2 + 1):
                assert bytecode._covering(entries, unit, starts) is bytecode._covering(entries, unit)
                n += 1
    assert n > 10_000


def test_instrumenting_scans_the_table_less_than_once_a_code_unit(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Instrumenting a generated program with many ``with``/``try`` statements calls
    ``Entry.covers`` fewer times than the instrumented code has code units (before: 21 times
    as many on this program, 233 million calls on seed 12's)."""
    calls = [0]
    covers = bytecode.Entry.covers

    def counted(self: bytecode.Entry, unit: int) -> bool:
        calls[0] += 1
        return covers(self, unit)

    monkeypatch.setattr(bytecode.Entry, "covers", counted)
    code = _template(program(1), tmp_path)
    units = sum(len(c.co_code) // 2 for c in _codes(code))
    assert units > 20_000
    assert calls[0] < units, (calls[0], units)
