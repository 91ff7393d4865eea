"""Statement counts against an independent sys.settrace line oracle: real programs recorded in
`blocks` mode (with identical behaviour), and the oracle's own tricky program and the inline
programs recorded in every mode.  Every line the oracle's rule selects is compared (none may
be missing from wholetrace's statements), module bodies included."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from corpus import PROGRAMS, oracle_params
from inline_programs import INLINE
from oracles.settrace_lines import line_counts
from oracles.tricky import TRICKY
from wtutil import compare_lines, profiles, run_plain, run_recorded

MODES = ("blocks", "count", "count-naive", "witness", "branches", "full")
#: Fewest lines compared per program: about 90 % of what the rule selects today (all of it is
#: compared), so a change that loses statements, functions or files fails here.
FLOOR = {"_pydecimal": 1400, "chaos": 130, "deltablue": 225, "difflib": 340, "fannkuch": 37, "float": 43,
         "go": 205, "hexiom": 240, "json": 285, "nbody": 64, "nqueens": 33, "pyflate": 290, "raytrace": 170,
         "re": 860, "richards": 180, "spectral_norm": 41, "tomllib": 300,
         "tricky": 42, "generators": 20, "exceptions": 27, "loops": 12, "finally_with": 14, "classes_match": 10,
         "except_star": 38}


@pytest.mark.parametrize("name", oracle_params())
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
    files = {key[0] for key in profiles(out)}
    assert files, "nothing was instrumented"
    compared = compare_lines(out, files, line_counts(driver, [], files))
    assert compared >= FLOOR[name], compared


PROGRAMS_FOR_MODES = {"tricky": TRICKY, **INLINE}


@pytest.mark.parametrize("name", sorted(PROGRAMS_FOR_MODES))
def test_every_mode_agrees_with_the_oracle(name: str, tmp_path: Path) -> None:
    script = tmp_path / f"{name}.py"
    script.write_text(textwrap.dedent(PROGRAMS_FOR_MODES[name]))
    plain = run_plain(script)
    oracle = line_counts(script, [], {str(script)})
    for mode in MODES:
        out = tmp_path / f"{mode}.wt"
        proc = run_recorded(script, out, mode=mode)
        assert (proc.returncode, proc.stdout, proc.stderr) == (plain.returncode, plain.stdout, plain.stderr), mode
        assert compare_lines(out, {str(script)}, oracle) >= FLOOR[name], mode
