"""`record --mode witness` and `--mode branches`, regenerated, against `record --mode blocks`.

Real recordings of every corpus program (size small), of the inline programs of
``tests/inline_programs.py`` and of structured generated programs: the regenerated traces equal
the blocks trace in activation form (each activation's own blocks and exception records,
and its ordered child activations), and event for event on the inline programs (written
without implicit calls into instrumented code).  The programs behave as they do plain.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pytest

from corpus import PROGRAMS, corpus_params
from inline_programs import INLINE
from regenutil import KINDS, children_follow_calls, compare, streams_of
from naive_decode import activation_form
from wholetrace.events import ENTER_BASE, EXC, LEAVE
from wholetrace.store import Recording
from wholetrace.trace.session import Trace
from wtutil import cli_in_process, run_plain, run_recorded

# ----------------------------------------------------------------------------- unit

def test_activation_form_helper() -> None:
    F = lambda f: -(ENTER_BASE + f)  # noqa: E731
    a = np.array([F(0), 2, F(1), 2, 3, LEAVE, 4, EXC, 7, 5, F(1), 2, LEAVE, LEAVE], np.int32)
    b = np.array([F(0), 2, 4, F(1), 2, 3, LEAVE, EXC, 7, 5, F(1), 2, LEAVE, LEAVE], np.int32)
    assert activation_form(a) == activation_form(b)       # a child may move among parent blocks
    assert activation_form(a) == [(-1, (), 1), (0, (2, 4, EXC, 7, 5), 2), (1, (2, 3), 0), (1, (2,), 0)]
    c = np.array([F(0), 2, F(1), 2, LEAVE, 4, EXC, 7, 5, F(1), 3, LEAVE, LEAVE], np.int32)
    assert activation_form(a) != activation_form(c)


# ----------------------------------------------------------------------------- inline programs

@pytest.fixture(scope="module")
def inline(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Path]]:
    root = tmp_path_factory.mktemp("witness-inline")
    out: dict[str, dict[str, Path]] = {}
    for name, src in INLINE.items():
        script = root / f"{name}.py"
        script.write_text(textwrap.dedent(src))
        plain = run_plain(script)
        out[name] = {}
        for mode in ("blocks",) + KINDS:
            wt = root / f"{name}.{mode}.wt"
            r = run_recorded(script, wt, mode=mode)
            assert (r.returncode, r.stdout, r.stderr) == (plain.returncode, plain.stdout, plain.stderr), mode
            out[name][mode] = wt
    return out


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", sorted(INLINE))
def test_inline_programs_event_for_event(inline: dict[str, dict[str, Path]], name: str, kind: str) -> None:
    stats = compare(inline[name]["blocks"], inline[name][kind], exact=True)
    assert stats["recorded events"] < stats["blocks events"]
    _, blocks, cfgs, _ = streams_of(inline[name]["blocks"])
    for ev in blocks:
        assert not children_follow_calls(ev, cfgs)


def test_cli_trace_and_counts_regenerate(inline: dict[str, dict[str, Path]]) -> None:
    paths = inline["exceptions"]
    outs = {}
    for mode, wt in paths.items():
        (rc_t, trace, err_t), (rc_c, counts, err_c), (rc_i, info, err_i) = (
            cli_in_process(*argv, str(wt)) for argv in (("trace",), ("counts", "--format", "json"), ("info",)))
        assert (rc_t, rc_c, rc_i) == (0, 0, 0), (err_t, err_c, err_i)
        assert f"--mode {mode}" in info
        outs[mode] = (trace, counts)
    assert outs["witness"] == outs["blocks"] == outs["branches"]
    assert outs["blocks"][0].count("\nB ") > 10


def test_kernel_regenerates_like_the_reference_in_small_pieces(inline: dict[str, dict[str, Path]]) -> None:
    """The decoding kernel fed 7 events at a time, with room for few rows, equals the
    pure-Python regenerator (``regen.driver``, the twin) on every inline program."""
    from wholetrace.regen.driver import recording_plans, regenerate_stream
    from wholetrace.trace.decode import StreamDecoder
    from wholetrace.trace.session import block_events

    for name in sorted(INLINE):
        for kind in KINDS:
            with Recording(inline[name][kind]) as rec:
                trace = Trace(rec)
                plans = recording_plans(rec)
                for st in rec.streams():
                    raw = rec.events(st.sid)
                    pieces = [raw[i:i + 7] for i in range(0, len(raw), 7)]
                    want = np.concatenate(list(regenerate_stream(pieces, plans, chunk_size=50)))
                    dec = StreamDecoder(trace.tables, capacity=64)
                    got = np.concatenate([block_events(r) for r in dec.decode(pieces)])
                    assert np.array_equal(got, want), (name, kind)


# ----------------------------------------------------------------------------- corpus

@pytest.mark.parametrize("name", corpus_params(share=(1, 2)))
def test_corpus_programs_regenerate(name: str, tmp_path: Path) -> None:
    prog = PROGRAMS[name]
    driver = prog.write(tmp_path, "small")
    plain = run_plain(driver)
    paths = {}
    for mode in ("blocks",) + KINDS:
        paths[mode] = tmp_path / f"{mode}.wt"
        r = run_recorded(driver, paths[mode], mode=mode, include=tuple(prog.include))
        assert (r.returncode, r.stdout, r.stderr) == (plain.returncode, plain.stdout, plain.stderr), (mode, r.stderr[-2000:])
    stats = {k: compare(paths["blocks"], paths[k], exact=False) for k in KINDS}
    assert stats["witness"]["recorded events"] < stats["witness"]["blocks events"]
    assert stats["witness"]["recorded events"] <= stats["branches"]["recorded events"]
