"""The read side: how fast the decoding kernel counts and regenerates, and how fast reports are built.

Part 1, decoding (``kernels/decode.py`` through ``trace.Trace``).  For each program of the
registry (``tests/corpus.py``, size ``bench``) it records ``blocks``, ``witness`` and
``branches`` once, then in this process, best of ``--runs`` (CPU seconds, recording already
on disk, JIT compiled and cached):

* count: read the chunks, decode, histogram (``Trace.tally`` on an open trace) on the blocks
  recording: events/s;
* regenerate: decode the witness, branches and path recordings to rows: blocks produced per second
  (path as `record --mode path` stores it: its grammars expanded on the way);
* counts witness / counts blocks: ``profile.profiles`` on each recording of the same run,
  and whole processes ``wholetrace counts -o /dev/null`` (wall, median);
* memory: peak traced allocation while counting the largest recording, against its events.

JIT: import + first decode in a child with an empty numba cache, minus the same with the cache.

Part 2, report building (issue 9 section 3).  A program that runs a syntax highlighter, a
Markdown renderer and stdlib packages (``--include`` for each) is recorded in ``count`` and
``blocks`` modes; the phases of ``wholetrace counts`` are timed in this process (best of
``--runs``, CPU): reading the function rows, decoding the stored CFGs of the functions that
may have run (zstd + JSON), profiles (``profile.counted``: their shapes, then propagation or
decoding; functions that never ran stay unparsed summaries), then each format.
"Report" = profiles + format, per 2,000 functions that ran.

    python benchmarks/decode.py [--programs a,b] [--runs N] [--quick] [--no-write]
"""

from __future__ import annotations

import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import corpus_options, machine, snapshot_env, source_version, table, timed, write_section  # noqa: E402
from corpus import PROGRAMS  # noqa: E402

from wholetrace.profile import counted, profiles  # noqa: E402
from wholetrace.profile.model import Idle, ran  # noqa: E402
from wholetrace.render.counts import report_lcov, report_text, write_json  # noqa: E402
from wholetrace.trace.session import Trace  # noqa: E402

PY = sys.executable
MODES = ("blocks", "witness", "branches", "path")
DEFAULT = ["richards", "deltablue", "go", "raytrace", "nqueens", "json", "re", "_pydecimal", "difflib", "tomllib"]
REPORT_INCLUDE = ["pygments", "markdown_it", "difflib", "textwrap", "csv", "configparser", "pprint", "ipaddress",
                  "fractions", "statistics", "shlex", "calendar", "html", "urllib", "email", "tomllib",
                  "_pydecimal", "xml", "gettext"]
REPORT_PROGRAM = '''
import io, csv, difflib, textwrap, configparser, pprint, ipaddress, fractions, statistics, calendar
import html.parser, urllib.parse, email, email.policy, tomllib, _pydecimal, xml.dom.minidom
import xml.etree.ElementTree as ET
from pygments import highlight
from pygments.lexers import PythonLexer, CLexer, JsonLexer, HtmlLexer
from pygments.formatters import HtmlFormatter, TerminalFormatter
import markdown_it
src = open(textwrap.__file__).read()
out = [highlight(src, PythonLexer(), HtmlFormatter()), highlight(src[:3000], CLexer(), TerminalFormatter()),
       highlight('{"a": [1, 2, {"b": null}]}', JsonLexer(), HtmlFormatter()),
       highlight("<html><body><p class='x'>hi</p></body></html>", HtmlLexer(), TerminalFormatter())]
md = markdown_it.MarkdownIt().render("# Title\\n\\nSome *text* and `code`.\\n\\n- a\\n- b\\n")
tree = ET.tostring(ET.fromstring("<a><b x='1'>t</b><c/></a>"))
dom = xml.dom.minidom.parseString("<r><i>1</i></r>").toprettyxml()
msg = email.message_from_string("From: a@b\\nTo: c@d\\nSubject: hi\\n\\nbody\\n", policy=email.policy.default)
cp = configparser.ConfigParser(); cp.read_string("[s]\\nk = v\\n")
rows = list(csv.reader(io.StringIO("a,b\\n1,2\\n")))
d = list(difflib.unified_diff(src.splitlines()[:80], src.splitlines()[5:85]))
t = tomllib.loads('a = 1\\n[b]\\nc = "x"\\nd = [1, 2]\\n')
dec = _pydecimal.Decimal(1) / _pydecimal.Decimal(7)
st = statistics.mean([fractions.Fraction(1, k) for k in range(1, 30)])
u = urllib.parse.urlparse("http://x.org/a?b=c#d")
hp = html.parser.HTMLParser(); hp.feed("<p>hi<b>x</b></p>")
net = list(ipaddress.ip_network("10.0.0.0/28").hosts())
cal = calendar.TextCalendar().formatmonth(2024, 2)
pp = pprint.pformat({"k": list(range(30)), "n": {"a": [1] * 10}})
print(len("".join(out)), len(md), len(tree), len(dom), msg["subject"], cp["s"]["k"], rows, len(d), t, str(dec)[:8], st,
      u.netloc, len(net), len(cal), len(pp))
'''


def cpu_best(fn, runs: int) -> tuple[float, object]:  # type: ignore[no-untyped-def]
    best, value = float("inf"), None
    for _ in range(runs):
        t0 = time.process_time()
        value = fn()
        best = min(best, time.process_time() - t0)
    return best, value


def record(driver: Path, include: list[str], mode: str, out: Path, env: dict[str, str]) -> None:
    inc = [a for m in include for a in ("--include", m)]
    timed([PY, "-m", "wholetrace.cli", "record", "-q", "--mode", mode, "-o", str(out), *inc, str(driver)],
          driver.parent, env)


def decode_stats(paths: dict[str, Path], runs: int, env: dict[str, str], work: Path) -> dict[str, float]:
    out: dict[str, float] = {}
    with Trace.open(paths["blocks"], check=False) as t:
        out["events"] = sum(s.n_events for s in t.streams())

        t.tally()
        secs, tally = cpu_best(t.tally, runs)
        out["blocks"] = int(tally.block.sum())  # type: ignore[attr-defined]
        out["count_rate"] = out["events"] / secs
    for mode in ("witness", "branches", "path"):
        with Trace.open(paths[mode], check=False) as t:
            out[f"{mode}_events"] = sum(s.n_events for s in t.streams())

            def regen() -> int:
                t.tables.reset()
                return sum(len(r) for s in t.streams() for r in t.rows(s.sid, copy=False))
            regen()
            secs, _ = cpu_best(regen, runs)
            out[f"{mode}_rate"] = out["blocks"] / secs
    for mode in ("blocks", "witness"):
        secs, _ = cpu_best(lambda: profiles(Trace.open(paths[mode], check=False)), runs)
        out[f"profiles_{mode}"] = secs
        timed([PY, "-m", "wholetrace.cli", "counts", "-o", os.devnull, str(paths[mode])], work, env)  # warm-up
        walls = [timed([PY, "-m", "wholetrace.cli", "counts", "-o", os.devnull, str(paths[mode])], work, env)[0]
                 for _ in range(runs)]
        out[f"cli_{mode}"] = statistics.median(walls)
    return out


def peak_memory(path: Path) -> tuple[float, float]:
    """(peak MB traced while counting, MB of raw events)."""
    with Trace.open(path, check=False) as t:
        raw = sum(s.n_events for s in t.streams()) * 4 / 1e6
        tracemalloc.start()
        t.counts()
        peak = tracemalloc.get_traced_memory()[1] / 1e6
        tracemalloc.stop()
    return peak, raw


def jit_seconds(path: Path, env: dict[str, str], work: Path) -> tuple[float, float]:
    """(import + first decode with an empty numba cache, the same with the cache filled)."""
    code = ("import time; t=time.perf_counter(); from wholetrace.trace.session import Trace; "
            f"Trace.open({str(path)!r}).counts(); print(time.perf_counter()-t)")
    cold_env = dict(env, NUMBA_CACHE_DIR=str(work / "numba-cold"))
    cold = float(subprocess.run([PY, "-c", code], env=cold_env, capture_output=True, text=True, check=True).stdout)
    warm = float(subprocess.run([PY, "-c", code], env=cold_env, capture_output=True, text=True, check=True).stdout)
    return cold, warm


def report_phases(path: Path, runs: int) -> dict[str, float]:
    parsed = {e.fid for e in counted(Trace.open(path, check=False)) if not isinstance(e, Idle)}

    def load() -> Trace:
        t = Trace.open(path, check=False)
        for f in t.functions.values():
            if f.fid in parsed:
                f.cfg  # noqa: B018 - decode the stored CFGs the report reads (those that may have run)
        return t
    res: dict[str, float] = {}
    res["rows"], _ = cpu_best(lambda: Trace.open(path, check=False).functions, runs)
    res["cfgs"] = cpu_best(load, runs)[0] - res["rows"]

    def prof() -> tuple[float, object]:
        t = load()
        t0 = time.process_time()
        ps = counted(t)
        return time.process_time() - t0, ps
    done = [prof() for _ in range(runs)]
    res["profiles"] = min(d[0] for d in done)
    ps = done[0][1]
    res["text"], _ = cpu_best(lambda: report_text(ps), runs)  # type: ignore[arg-type]
    res["json"], _ = cpu_best(lambda: write_json(ps), runs)  # type: ignore[arg-type]
    res["lcov"], _ = cpu_best(lambda: report_lcov(ps), runs)  # type: ignore[arg-type]
    res["functions"] = len(ps)  # type: ignore[arg-type]
    res["parsed"] = len(parsed)
    res["ran"] = sum(1 for p in ps if ran(p))  # type: ignore[attr-defined, union-attr]
    return res


def main(argv: list[str] | None = None) -> int:
    args, names, runs, size, write = corpus_options(__doc__.split("\n\n")[0], 3, list(PROGRAMS), argv)
    if args.programs is None:  # type: ignore[attr-defined]
        names = DEFAULT
    with tempfile.TemporaryDirectory(prefix="wt-decode-") as tmp:
        work = Path(tmp)
        env = snapshot_env(work)
        version = source_version()
        stats, biggest = {}, None
        for n in names:
            p = PROGRAMS[n]
            driver = p.write(work, size)
            paths = {m: work / f"{driver.stem}.{m}.wt" for m in MODES}
            for m in MODES:
                record(driver, p.include, m, paths[m], env)
            stats[n] = decode_stats(paths, runs, env, work)
            if biggest is None or stats[n]["events"] > stats[biggest[0]]["events"]:
                biggest = (n, paths["blocks"])
            print(f"{n}: count {stats[n]['count_rate'] / 1e6:.1f} M events/s, regen witness "
                  f"{stats[n]['witness_rate'] / 1e6:.1f} M blocks/s", file=sys.stderr, flush=True)
        peak, raw = peak_memory(biggest[1])  # type: ignore[index]
        cold, warm = jit_seconds(biggest[1], env, work)  # type: ignore[index]
        prog = work / "report_workload.py"
        prog.write_text(REPORT_PROGRAM)
        reports = {}
        for mode in ("count", "blocks"):
            out = work / f"report.{mode}.wt"
            record(prog, REPORT_INCLUDE, mode, out, env)
            reports[mode] = report_phases(out, runs)
    body = render(names, stats, (biggest[0], peak, raw), (cold, warm), reports, runs, size, version, argv)  # type: ignore[index]
    print(body)
    if write:
        write_section("decode", body)
        print("\nwrote section 'decode' of docs/benchmarks.md", file=sys.stderr)
    return 0


def render(names, stats, memory, jit, reports, runs, size, version, argv) -> str:  # type: ignore[no-untyped-def]
    rows = []
    for n in names:
        s = stats[n]
        rows.append([n, f"{int(s['events']):,}", f"{int(s['blocks']):,}", f"{s['count_rate'] / 1e6:.1f}",
                     f"{s['witness_rate'] / 1e6:.1f}", f"{s['branches_rate'] / 1e6:.1f}", f"{s['path_rate'] / 1e6:.1f}",
                     f"{s['profiles_witness'] / s['profiles_blocks']:.2f}×",
                     f"{s['cli_blocks']:.2f}", f"{s['cli_witness']:.2f}", f"{s['cli_witness'] / s['cli_blocks']:.2f}×"])
    med = {k: statistics.median(stats[n][k] for n in names) for k in ("count_rate", "witness_rate", "branches_rate", "path_rate")}
    ratio_in = statistics.median(stats[n]["profiles_witness"] / stats[n]["profiles_blocks"] for n in names)
    ratio_cli = statistics.median(stats[n]["cli_witness"] / stats[n]["cli_blocks"] for n in names)
    rep_rows = []
    for mode, r in reports.items():
        build = {f: r["profiles"] + r[f] for f in ("text", "json", "lcov")}
        rep_rows.append([mode, int(r["functions"]), int(r["ran"]), int(r["parsed"]), f"{r['rows']:.3f}",
                         f"{r['cfgs']:.3f}", f"{r['profiles']:.3f}", f"{r['text']:.3f}", f"{r['json']:.3f}",
                         f"{r['lcov']:.3f}"]
                        + [f"{build[f] / r['ran'] * 2000:.3f}" for f in ("text", "json", "lcov")])
    worst = max(float(x) for row in rep_rows for x in row[-3:])    # every format
    cmdline = "python benchmarks/decode.py" + "".join(" " + shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:]))
    target = lambda ok: "met" if ok else "not met"  # noqa: E731
    return "\n".join([
        "## Decoding and report building (the read side)",
        "",
        f"Measured {machine()}; `{cmdline}` (size `{size}`, best of {runs}); wholetrace {version}; "
        f"1-minute load average {os.getloadavg()[0]:.1f}. In-process figures are CPU seconds of one core "
        "(the JIT already compiled and cached); `wholetrace counts` columns are whole processes (wall, median).",
        "",
        table(["program", "blocks events", "executed blocks", "count M events/s", "regen witness M blocks/s",
               "regen branches M blocks/s", "regen path M blocks/s", "profiles witness / blocks", "counts blocks s", "counts witness s",
               "counts witness / blocks"], rows),
        f"- count from a blocks trace, median: **{med['count_rate'] / 1e6:.1f} M events/s** "
        f"(target ≥ 30: {target(med['count_rate'] >= 3e7)})",
        f"- regeneration, median: witness **{med['witness_rate'] / 1e6:.1f}**, branches "
        f"**{med['branches_rate'] / 1e6:.1f}**, path **{med['path_rate'] / 1e6:.1f} M blocks/s** (target ≥ 10: "
        f"{target(min(med['witness_rate'], med['branches_rate'], med['path_rate']) >= 1e7)}; path: "
        "the recording's grammars expanded on the way)",
        f"- `counts` on witness / on blocks of the same run, median: in process **{ratio_in:.2f}×**, whole "
        f"`wholetrace counts` **{ratio_cli:.2f}×** (target ≤ 1.2×: {target(ratio_cli <= 1.2)})",
        f"- memory: peak {memory[1]:.1f} MB traced while counting {memory[0]} ({memory[2]:.0f} MB of events): "
        "bounded by the chunk and row buffers, not the trace",
        f"- JIT: import + first count {jit[0]:.1f} s with an empty numba cache, {jit[1]:.1f} s with it filled",
        "",
        "Report building (`wholetrace counts`), CPU seconds by phase; \"profiles\" is `profile.counted` "
        "(parsing the CFGs of the functions that may have run, decoding or propagating their counts; "
        "\"parsed\" functions: those that may have run, the others are one-line summaries whose CFGs are "
        "never read); the last three columns are profiles + that format, per 2,000 functions that ran:",
        "",
        table(["mode", "functions", "ran", "parsed", "read rows", "decode CFGs", "profiles", "text", "json", "lcov",
               "text /2000", "json /2000", "lcov /2000"], rep_rows),
        f"- report building per 2,000 functions that ran: worst **{worst:.3f} s** (target ≤ 0.2 s: "
        f"{target(worst <= 0.2)}); decoding the stored CFGs (zstd + JSON of the parsed functions) is "
        "listed apart.",
    ])


if __name__ == "__main__":
    sys.exit(main())
