"""`record` parses its usual command lines without argparse (``runtime.cli.fast_record_args``).

Oracle: argparse itself (``runtime.cli.record_parser`` through ``parse_own``), which every
command line the fast parser declines still goes through.  The fast parser must either decline
or give exactly the options argparse gives, for every command line below.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wholetrace.errors import UsageError
from wholetrace.runtime.cli import RECORD_OPTIONS, fast_record_args, parse_own, parser_options, record_parser
from wtutil import ENV

ACCEPTED = [
    ["prog.py"],
    ["prog.py", "--mode", "x", "-o", "y"],                 # the program's own arguments
    ["--mode", "path", "-q", "-o", "out.wt", "prog.py", "a", "b"],
    ["--mode", "count", "--output", "o.wt", "--quiet", "--weights", "old.wt", "prog.py"],
    ["--include", "json", "--include", "re", "--no-cache", "--cf-grammar", "--no-children", "prog.py"],
    ["--mode", "blocks", "--mode", "witness", "prog.py"],  # the last one wins
    ["-q", "-q", "prog.py"],
    ["-m", "pkg.mod", "x", "--y"],
    ["-o", "o.wt", "-m", "pytest", "-q"],
    ["-"],
    ["--mode", "", "prog.py"],
    ["-o", "a b.wt", "prog.py"],
    ["--mode", "path", "--wpp", "prog.py"], ["--no-wpp", "prog.py"], ["--wpp", "--keep-raw", "prog.py"],
    ["--lookahead", "prog.py"], ["--no-lookahead", "--wpp", "--no-wpp", "prog.py"],
    ["--wpp", "--no-wpp", "prog.py"], ["--keep-raw", "prog.py"],
    ["--mode", "path", "--wpp", "--keep-raw", "--no-lookahead", "--wpp-queue", "1000", "prog.py", "--wpp"],
    ["--no-lookahead", "--lookahead", "--wpp-queue", "0", "--wpp-queue", "12", "-m", "pkg"],
]
DECLINED = [
    ["-h"], ["--help"], ["-q", "-h", "prog.py"],
    ["--mode=path", "prog.py"], ["--mod", "path", "prog.py"], ["-oout.wt", "prog.py"], ["-qo", "o.wt", "prog.py"],
    ["--wpp=1", "prog.py"], ["--wp", "prog.py"], ["--keep", "prog.py"],
    ["--no-l", "prog.py"], ["--lookahead=x", "prog.py"], ["--no-wpp=", "prog.py"], ["--wpp", "--keep", "prog.py"],
    ["--no-w", "prog.py"], ["--wpp-queue=10", "prog.py"],
    ["--wpp-queue", "x", "prog.py"], ["--wpp-queue", "-1", "prog.py"], ["--wpp-queue", "1.5", "prog.py"],
    ["-o", "-x.wt", "prog.py"], ["--mode", "-1", "prog.py"], ["--mode"], ["-m"], ["-o"],
    ["--format", "x", "prog.py"], ["--bogus", "prog.py"],
]


@pytest.mark.parametrize("argv", ACCEPTED, ids=" ".join)
def test_fast_parser_gives_what_argparse_gives(argv):
    fast = fast_record_args(argv)
    assert fast is not None, "a usual command line takes the fast path"
    slow = parse_own(record_parser(), argv, "record")
    assert vars(fast) == vars(slow)


@pytest.mark.parametrize("argv", DECLINED, ids=" ".join)
def test_fast_parser_declines_what_it_does_not_know(argv):
    assert fast_record_args(argv) is None


NO_PROGRAM = [[], ["-q"], ["-o", "x.wt"], ["--"], ["-o", "o.wt", "--"]]


@pytest.mark.parametrize("argv", NO_PROGRAM)
def test_no_program_is_the_same_error(argv):
    with pytest.raises(UsageError) as slow:
        parse_own(record_parser(), argv, "record")
    if "--" in argv:   # declined: argparse reads the separator
        assert fast_record_args(argv) is None
        return
    with pytest.raises(UsageError) as fast:
        fast_record_args(argv)
    assert str(fast.value) == str(slow.value)


def test_defaults_cover_every_option_of_the_parser():
    """Every option record_parser knows (the WPP ones included) has its default in the fast
    parser's table: a new option added without one fails here, not in a user's recording."""
    slow = vars(parse_own(record_parser(), ["prog.py"], "record"))
    fast = vars(fast_record_args(["prog.py"]))
    assert set(fast) == set(slow)
    assert fast == slow
    # and every option string, with whether it takes a value (where wholetrace's words end)
    assert RECORD_OPTIONS == parser_options(record_parser())


def test_errors_and_help_are_argparse_s(tmp_path):
    """What the declined command lines print is argparse's, as before (one subprocess each)."""
    runs = {}
    for argv in (["-h"], ["--mode"], ["--bogus", "p.py"], ["--wpp-queue", "x", "p.py"]):
        r = subprocess.run([sys.executable, "-m", "wholetrace", "record", *argv], capture_output=True, text=True,
                           env={**ENV, "COLUMNS": "100"}, cwd=tmp_path, timeout=120)
        runs[argv[0]] = r
    assert runs["-h"].returncode == 0 and runs["-h"].stdout.startswith("usage: wholetrace record")
    assert "--wpp-queue EVENTS" in runs["-h"].stdout and "--no-children" in runs["-h"].stdout
    assert runs["--mode"].returncode == 2 and "argument --mode: expected one argument" in runs["--mode"].stderr
    assert runs["--bogus"].returncode == 2 and "unrecognized arguments: --bogus" in runs["--bogus"].stderr
    assert runs["--wpp-queue"].returncode == 2 and "invalid int value: 'x'" in runs["--wpp-queue"].stderr


# -- generated command lines -----------------------------------------------------------------
# Words a user may type before, between and after record's options: every option of the parser
# in full, abbreviated, glued to its value and with ``=``; the separator; values that look like
# options, are empty, hold spaces or ``=``; scripts and module names.
_OPTION_WORDS = ["--mode", "-o", "--output", "-q", "--quiet", "--weights", "--include", "--no-cache", "--cf-grammar",
                 "--no-children", "-m", "--wpp", "--no-wpp", "--keep-raw", "--lookahead", "--no-lookahead",
                 "--wpp-queue", "-h", "--help", "--mo", "--out", "--inc", "--no-c", "--no-ca", "--q", "--cf",
                 "--mode=path", "--include=json", "--output=o.wt", "-oout.wt", "-qo", "-qq", "-mjson", "--",
                 "--format", "--limit", "--bogus", "-x", "--wp", "--keep", "--no-l", "--no-w", "--look", "--wpp=1",
                 "--lookahead=x", "--keep-raw=1"]
_VALUE_WORDS = ["path", "blocks", "json", "o.wt", "prog.py", "pkg.mod", "", "-", "-1", "-x.wt", "a b", "-a b",
                "a=b", "--", "10", "x"]


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(st.sampled_from(_OPTION_WORDS), st.sampled_from(_VALUE_WORDS)), max_size=8))
def test_generated_command_lines_parse_as_argparse_parses_them(argv):
    """On any command line: the fast parser declines, or gives exactly argparse's options, or
    raises the UsageError argparse's path raises."""
    try:
        fast = fast_record_args(argv)
    except UsageError as exc:
        with pytest.raises(UsageError) as slow_exc:
            parse_own(record_parser(), argv, "record")
        assert str(slow_exc.value) == str(exc)
        return
    if fast is None:
        return
    slow = parse_own(record_parser(), argv, "record")
    assert vars(fast) == vars(slow)


# -- where wholetrace's words end ---------------------------------------------------------------
# Oracle: argparse given wholetrace's words only (record_parser().parse_args(OWN + END)); the
# command line is OWN + END + the program's words.  OWN: record's options spelled as argparse takes
# them (in full, abbreviated, run together, glued, with =), and some it rejects; END: SCRIPT (words
# argparse takes as a positional: a negative number, a word with a space) or -m MODULE.
_OWN_SPELLINGS = [["--mode", "path"], ["--mo", "path"], ["--m", "count"], ["--mode=witness"], ["--mo=path"],
                  ["-o", "o.wt"], ["-oo.wt"], ["-o=o.wt"], ["--out", "x.wt"], ["--output=x.wt"], ["-o", "-1"],
                  ["-q"], ["--qu"], ["-qq"], ["-qo", "o.wt"], ["-qoo.wt"], ["--inc", "json"], ["--include", "re"],
                  ["--i", "re"], ["--no-ca"], ["--no-ch"], ["--cf"], ["--we", "old.wt"], ["--wpp"], ["--no-w"],
                  ["--k"], ["--wpp-q", "5"], ["--wpp-queue", "7"], ["--l"], ["--no-l"], ["--lookahead"],
                  ["--wp"], ["--no"], ["--bogus"], ["-x"], ["-qx"], ["-q=x"], ["--wpp-q", "x"]]
_ENDS = [["prog.py"], ["-1"], ["-2.5"], ["-a b"], [""], ["-m", "pkg"], ["-mpkg"], ["-qm", "pkg"], ["-qmpkg"],
         ["-m=pkg"], ["--", "prog.py"], ["--", "-weird.py"], ["--", "--mode"], ["--a b"], ["--x=a b"]]
_PROGRAM_WORDS = ["a", "-q", "--mode", "x", "-o", "--", "-m", "--mo", "-qo", "prog.py"]


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(_OWN_SPELLINGS), max_size=4), st.sampled_from(_ENDS),
       st.lists(st.sampled_from(_PROGRAM_WORDS), max_size=3))
def test_wholetrace_s_words_end_where_argparse_finds_the_program(own, end, rest):
    own = [w for spelling in own for w in spelling]
    try:
        want = vars(record_parser().parse_args(own + end))
    except SystemExit:
        want = None
    argv = own + end + rest
    try:
        got = vars(parse_own(record_parser(), argv, "record"))
    except (SystemExit, UsageError):
        assert want is None, f"argparse takes {own + end}"
        return
    assert want is not None, f"argparse rejects {own + end}"
    assert got.pop("program_args") == rest
    assert got == want
    fast = fast_record_args(argv)
    assert fast is None or vars(fast) == {**want, "program_args": rest}


def test_a_script_named_like_an_option_records_after_the_separator(tmp_path):
    """``record -q -- -weird.py a -o x``: argparse takes the word after ``--`` as SCRIPT (the split
    gave every word after ``--`` to the program, so no SCRIPT was ever found)."""
    (tmp_path / "-weird.py").write_text("import sys\nprint(sys.argv[1:])\n")
    r = subprocess.run([sys.executable, "-m", "wholetrace", "record", "-qo", "o.wt", "--", "-weird.py", "a", "-o", "x"],
                       capture_output=True, text=True, env=ENV, cwd=tmp_path, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "['a', '-o', 'x']\n" and r.stderr == ""


def test_an_abbreviated_option_records(tmp_path):
    """``record --mo path`` (argparse's abbreviation of --mode) split its value off as SCRIPT."""
    (tmp_path / "prog.py").write_text("import sys\nprint(sys.argv[1:])\n")
    r = subprocess.run([sys.executable, "-m", "wholetrace", "record", "--mo", "path", "-qo", "o.wt", "prog.py", "-q"],
                       capture_output=True, text=True, env=ENV, cwd=tmp_path, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "['-q']\n" and r.stderr == ""
    from wholetrace.store import Recording

    with Recording(tmp_path / "o.wt") as rec:
        assert rec.meta["mode"] == "path"


def test_the_wpp_options_take_the_fast_path(tmp_path):
    """``record --wpp --keep-raw --no-lookahead --wpp-queue N`` parses without argparse: the
    program does not see argparse (nor gettext and locale, which it imports) in its process."""
    (tmp_path / "prog.py").write_text("import sys\nprint(sorted(m for m in ('argparse', 'gettext', 'locale') "
                                      "if m in sys.modules))\n")
    r = subprocess.run([sys.executable, "-m", "wholetrace", "record", "--mode", "path", "--wpp", "--keep-raw",
                        "--no-lookahead", "--wpp-queue", "100000", "-q", "-o", "o.wt", "prog.py"],
                       capture_output=True, text=True, env=ENV, cwd=tmp_path, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "[]\n"
    from wholetrace.store import Recording

    with Recording(tmp_path / "o.wt") as rec:
        assert rec.meta["wpp"]["keep_raw"] and rec.meta["wpp"]["lookahead"] is False
