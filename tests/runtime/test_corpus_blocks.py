"""Real programs: identical behaviour with and without `record --mode blocks`, and block
counts that agree with an independent sys.settrace line oracle."""

from __future__ import annotations

from pathlib import Path

import pytest

from corpus import PROGRAMS
from oracles.settrace_lines import line_counts, single_simple_statement_lines
from wholetrace.profile import profiles as profiles_of
from wholetrace.trace.session import Trace
from wtutil import run_plain, run_recorded


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("corpus")


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_same_behaviour_and_oracle_line_counts(name: str, tmp_path: Path) -> None:
    prog = PROGRAMS[name]
    driver = prog.write(tmp_path, "small")
    plain = run_plain(driver)
    out = tmp_path / f"{name}.wt"
    rec = run_recorded(driver, out, include=tuple(prog.include))
    assert rec.returncode == plain.returncode, rec.stderr[-3000:]
    assert rec.stdout == plain.stdout
    assert rec.stderr == plain.stderr
    assert plain.stdout.strip(), "driver printed nothing to compare"

    with Trace.open(out) as trace:
        profs = profiles_of(trace)
        cfgs = {p.fid: p.cfg for p in profs}
        stmt_counts = {p.fid: p.stmts for p in profs}
        files = {p.file for p in profs}
        fn_file = {p.fid: p.file for p in profs}
        assert trace.meta["ended"] == "exit"
    assert files, "nothing was instrumented"
    oracle = line_counts(driver, [], files)
    compared = 0
    for file in files:
        source = Path(file).read_text()
        wanted = single_simple_statement_lines(source)
        ours: dict[int, int] = {}
        for fid, cfg in cfgs.items():
            if fn_file[fid] != file:
                continue
            if cfg.kind == "module" and not file.startswith(str(tmp_path)):
                continue  # stdlib module bodies ran before the oracle's tracer started
            for st in cfg.stmts:
                if st.line == st.end_line and st.line in wanted and st.kind == "simple":
                    ours[st.line] = ours.get(st.line, 0) + int(stmt_counts[fid][st.id])
        for line in wanted:
            if line in ours:
                assert ours[line] == oracle.get((file, line), 0), f"{file}:{line}: {source.splitlines()[line - 1].strip()}"
                compared += 1
    assert compared > 20
