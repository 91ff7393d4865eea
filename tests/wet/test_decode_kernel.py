"""The decoding kernel (``kernels/wetdecode.py``) against its slow reference twin
(``tests/wet/decode_reference.py``, dicts and objects): the same instances, control parents,
calls, record attribution and access log (locations compared by what they name), on the
golden programs, generated programs and two corpus programs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from corpus import PROGRAMS
from decode_reference import Decoder
from genprogs import structured_programs, write_program
from hypothesis import HealthCheck, given, seed, settings
from golden import GOLDEN, THREADS
from wholetrace.store import Recording
from wholetrace.wet.capture import load
from wholetrace.wet.decode import ATTR, ELEM, GLOBAL, LOCAL, decode
from wholetrace.wet.static import function_facts
from wtutil import run_recorded


def reference(rec, log, facts) -> Decoder:
    dec = Decoder(facts, log)
    for st in rec.streams():
        sl = log.streams.get(st.sid)
        if sl is not None:
            dec.stream_pass(st.sid, rec.events(st.sid), sl.pos, sl.slot, sl.tag, sl.val)
    return dec


def named(locs, names, keys) -> list[tuple]:
    """Location table with name ids and key ids replaced by what they stand for."""
    out = []
    for k, a, b in locs:
        if k in (LOCAL, GLOBAL, ATTR):
            b = names[b]
        elif k == ELEM:
            b = tuple(keys[b])
        out.append((k, a, b))
    return out


def check_same(wt: Path) -> int:
    with Recording(wt) as rec:
        log = load(rec)
        facts = function_facts(rec, log)
        ref = reference(rec, log, facts)
        got = decode(rec, facts, log)
    for name in ("i_fid", "i_sid", "i_frame", "i_stream", "i_kind", "i_cd", "a_inst", "a_op", "a_fb"):
        assert getattr(got, name).tolist() == getattr(ref, name), name
    assert [tuple(c) for c in got.calls.tolist()] == ref.calls
    want_rec = np.concatenate(ref.rec_inst) if ref.rec_inst else np.zeros(0, np.int64)
    assert got.rec_inst.tolist() == want_rec.tolist()
    assert got.unknown_calls == ref.unknown_calls
    mine = named(got.locs.tolist(), got.names, got.keys)
    theirs = named(list(ref.locs), list(ref.names), list(ref.keys))
    assert [mine[i] for i in got.a_loc.tolist()] == [theirs[i] for i in ref.a_loc]
    return len(ref.i_fid)


def recorded(tmp_path: Path, source: str) -> Path:
    script = tmp_path / "prog.py"
    script.write_text(source)
    wt = tmp_path / "prog.wt"
    assert run_recorded(script, wt, mode="full").returncode in (0, 1)
    return wt


@pytest.mark.nojit
@pytest.mark.parametrize("name", ["generator_send", "exception_mid_statement", "closure", "dict_keys"])
def test_kernel_python_twin_small(name: str, tmp_path: Path) -> None:
    """Runs under NUMBA_DISABLE_JIT=1 too: the kernel's Python form against the reference."""
    assert check_same(recorded(tmp_path, GOLDEN[name][0])) > 0


@pytest.mark.parametrize("name", sorted(GOLDEN) + sorted(THREADS))
def test_kernel_equals_reference_golden(name: str, tmp_path: Path) -> None:
    source = (GOLDEN | THREADS)[name][0]
    assert check_same(recorded(tmp_path, source)) > 0


@seed(20261126)
@settings(max_examples=10, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(source=structured_programs())
def test_kernel_equals_reference_generated(source: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    td = tmp_path_factory.mktemp("gen")
    driver = write_program(source, td)
    got = run_recorded(driver, td / "prog.wt", mode="full", timeout=120)
    if got.returncode not in (0, 1):
        return                                     # a timeout or resource limit: nothing to compare
    assert check_same(td / "prog.wt") > 0


@pytest.mark.parametrize("name", [pytest.param("richards", marks=pytest.mark.slow), "json"])  # richards: ~45 s
def test_kernel_equals_reference_corpus(name: str, tmp_path: Path) -> None:
    prog = PROGRAMS[name]
    script = prog.write(tmp_path, "small")
    wt = tmp_path / "prog.wt"
    got = run_recorded(script, wt, mode="full", include=tuple(prog.include), cwd=tmp_path)
    assert got.returncode == 0, got.stderr
    assert check_same(wt) > 1000
