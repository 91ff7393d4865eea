"""Fixed costs on short runs of big packages: plain against ``record --mode count`` and
``wholetrace profile``, end to end, with the time split into phases.

Three short programs over real packages from the package index (dev extras): a jinja2
template render, pygments highlighting a stdlib module to HTML and to the terminal, and a
tomlkit document built, dumped and parsed.  Each round times, whole process and wall clock:

* plain:    ``python drive_X.py``
* count:    ``python -m wholetrace record --mode count -q -o X.wt --include PKG... drive_X.py``
* profile:  ``python -m wholetrace profile -o /dev/null --include PKG... drive_X.py``

with the instrumented-code cache warm (an untimed warm-up run fills it).  Medians over
``--runs`` interleaved rounds; the target (issue 9) is ``profile`` at most 1.5x plain.

The phases come from one more run per round in a harness process that records the same
program in-process with timers around the pieces (``python benchmarks/startup.py --phases
X``): start-up (importing wholetrace and opening the recording), cache load (reading and
relocating cached code), registration (``Recorder.register_file``: one row per file, target
at most 20 us per function), run (the program itself, minus the two before), flush (stopping
the recorder and closing the file), and the report: reading the recording back, counting
(propagation and line mapping, ``profile.profiles``) and rendering the text report; target at
most 0.2 s per 2,000 functions that ran for counting and rendering together.

    python benchmarks/startup.py [--programs a,b] [--runs N] [--quick] [--no-write]
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import shlex
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import corpus_options, machine, snapshot_env, source_version, table, timed, write_section  # noqa: E402

PY = sys.executable
TARGET_PROFILE = 1.5          # profile / plain, warm cache
TARGET_REGISTRATION_US = 20   # per function
TARGET_REPORT_S = 0.2         # counting + rendering per 2,000 functions that ran

PROGRAMS: dict[str, tuple[list[str], str]] = {
    "jinja2": (["jinja2", "markupsafe"], '''
import jinja2
env = jinja2.Environment(loader=jinja2.DictLoader({
    "base.html": "<html><title>{% block title %}{% endblock %}</title><body>{% block body %}{% endblock %}</body></html>",
    "page.html": """{% extends 'base.html' %}{% macro row(item, loop) %}<tr class="{{ loop.cycle('odd','even') }}">
<td>{{ item.name|title }}</td><td>{{ item.price|round(2) }}</td><td>{{ item.tags|join(', ')|upper }}</td></tr>{% endmacro %}
{% block title %}{{ title|e }}{% endblock %}{% block body %}<table>{% for item in items if item.price > 1 %}
{{ row(item, loop) }}{% else %}<tr><td>none</td></tr>{% endfor %}</table>{% set total = items|sum(attribute='price') %}
<p>{{ "%.2f"|format(total) }} {{ items|length }}</p>{% endblock %}"""}), autoescape=True)
items = [{"name": f"item {i}", "price": i * 1.25, "tags": ["a", "b", str(i)]} for i in range(200)]
print(len(env.get_template("page.html").render(title="Prices & more", items=items)))
'''),
    "pygments": (["pygments"], '''
import inspect
import json.decoder
import pygments, pygments.lexers, pygments.formatters
src = inspect.getsource(json.decoder)
lexer = pygments.lexers.get_lexer_by_name("python")
html = pygments.highlight(src, lexer, pygments.formatters.HtmlFormatter(linenos=True))
term = pygments.highlight(src, lexer, pygments.formatters.TerminalFormatter())
print(len(html), len(term))
'''),
    "tomlkit": (["tomlkit"], '''
import tomlkit
doc = tomlkit.document()
doc.add("title", "demo")
for i in range(40):
    t = tomlkit.table()
    t.add("id", i); t.add("name", f"item {i}"); t.add("tags", ["a", "b", str(i)]); t.add("price", i * 0.5)
    doc.add(f"item{i}", t)
text = tomlkit.dumps(doc)
back = tomlkit.parse(text)
back["item3"]["price"] = 99.5
print(len(text), len(tomlkit.dumps(back)), back["item39"]["name"])
'''),
}
TOOLS = ("plain", "count", "profile")
PHASES = ("start-up", "cache load", "registration", "run", "flush", "read", "counting", "rendering")


def commands(name: str, work: Path) -> dict[str, list[str]]:
    include, _src = PROGRAMS[name]
    inc = [a for m in include for a in ("--include", m)]
    driver = str(work / f"drive_{name}.py")
    return {"plain": [PY, driver],
            "count": [PY, "-m", "wholetrace", "record", "--mode", "count", "-q", "-o", str(work / f"{name}.wt"),
                      *inc, driver],
            "profile": [PY, "-m", "wholetrace", "profile", "-o", os.devnull, *inc, driver],
            "phases": [PY, __file__, "--phases", name, str(work)]}


# ----------------------------------------------------------------------------- the harness

def phases(name: str, work: Path) -> dict[str, Any]:
    """Record ``drive_<name>.py`` in this process with timers around each phase (prints JSON)."""
    t_start = time.perf_counter()
    from wholetrace.instrument import cache as cache_mod, loader
    from wholetrace.runtime import recorder as recorder_mod, runner
    from wholetrace.store import RecordingWriter

    spent = {"cache load": 0.0, "registration": 0.0, "flush": 0.0}

    def timer(owner: Any, attr: str, phase: str) -> None:
        inner = getattr(owner, attr)

        def wrapped(*args: Any, **kwargs: Any) -> Any:
            t = time.perf_counter()
            try:
                return inner(*args, **kwargs)
            finally:
                spent[phase] += time.perf_counter() - t
        setattr(owner, attr, wrapped)

    timer(cache_mod.InstrumentCache, "load", "cache load")
    timer(loader, "relocate", "cache load")
    original_register = recorder_mod.Recorder.register_file
    timer(recorder_mod.Recorder, "register_file", "registration")
    registered: list[tuple[str, Any]] = []
    timed_register = recorder_mod.Recorder.register_file

    def keep(self: Any, file: str, entry: Any) -> Any:
        registered.append((file, entry))
        return timed_register(self, file, entry)
    recorder_mod.Recorder.register_file = keep  # type: ignore[method-assign]
    timer(runner.Live, "stop", "flush")
    include, _src = PROGRAMS[name]
    out = work / f"{name}.phases.wt"
    writer = RecordingWriter(out)
    t_run = time.perf_counter()
    real_stdout, sys.stdout = sys.stdout, open(os.devnull, "w")
    try:
        outcome = runner.record(runner.Target(script=str(work / f"drive_{name}.py")), writer, mode="count",
                                include=list(include))
    finally:
        sys.stdout.close()
        sys.stdout = real_stdout
    t_end = time.perf_counter()
    alone = []
    for k in range(5):   # the same registrations again, with no program running beside them
        scratch = RecordingWriter(work / f"{name}.scratch.wt")
        rec_ = recorder_mod.Recorder(scratch, "count")
        t = time.perf_counter()
        for file, entry in registered:
            original_register(rec_, file, entry)
        alone.append(time.perf_counter() - t)
        scratch.close(ended="exit", exit_code=0)
    from wholetrace.profile import counted as profiles_of   # the report's imports count as reading
    from wholetrace.render.counts import report_text
    from wholetrace.trace.session import Trace
    with Trace.open(out) as trace:
        n_functions = len(trace.functions)
        t_read = time.perf_counter()
        profiles = profiles_of(trace)
    t_count = time.perf_counter()
    report_text(profiles)
    t_render = time.perf_counter()
    ran = sum(1 for p in profiles if p.weight > 0)
    return {"start-up": t_run - t_start, "cache load": spent["cache load"], "registration": spent["registration"],
            "run": t_end - t_run - spent["flush"] - spent["cache load"] - spent["registration"],
            "flush": spent["flush"], "read": t_read - t_end, "counting": t_count - t_read,
            "rendering": t_render - t_count, "functions": n_functions, "ran": ran, "registration alone": min(alone),
            "exit": outcome.exit_code}


# ----------------------------------------------------------------------------- the benchmark

def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--phases"]:
        print(json.dumps(phases(argv[1], Path(argv[2]))))
        return 0
    args, names, runs, _size, write = corpus_options(__doc__.split("\n\n")[0], 5, list(PROGRAMS), argv)
    with tempfile.TemporaryDirectory(prefix="wt-startup-") as tmp:
        work = Path(tmp)
        env = snapshot_env(work)
        version = source_version()
        load = [os.getloadavg()[0]]
        cmds = {}
        for n in names:
            (work / f"drive_{n}.py").write_text(PROGRAMS[n][1].lstrip())
            cmds[n] = commands(n, work)
            for tool in TOOLS:        # untimed warm-up: OS caches, __pycache__ and the code cache
                timed(cmds[n][tool], work, env)
        times = {n: {t: [] for t in TOOLS} for n in names}
        phase_runs: dict[str, list[dict[str, Any]]] = {n: [] for n in names}
        body = ""
        for r in range(runs):
            for n in names:
                for tool in TOOLS:
                    secs, _proc = timed(cmds[n][tool], work, env)
                    times[n][tool].append(secs)
                _secs, proc = timed(cmds[n]["phases"], work, env)
                phase_runs[n].append(json.loads(proc.stdout.decode().strip().splitlines()[-1]))
                print(f"round {r + 1}/{runs} {n:9s} " + "  ".join(f"{t} {times[n][t][-1]:.2f}s" for t in TOOLS),
                      file=sys.stderr, flush=True)
            load.append(os.getloadavg()[0])
            body = render(names, times, phase_runs, r + 1, runs, argv, version, load)
            if write:
                write_section("startup", body)
    print(body)
    return 0


def render(names: list[str], times: dict[str, dict[str, list[float]]], phase_runs: dict[str, list[dict[str, Any]]],
           done: int, runs: int, argv: list[str], version: str, load: list[float]) -> str:
    med = {n: {t: statistics.median(v) for t, v in tt.items()} for n, tt in times.items()}
    ph = {n: {k: statistics.median(float(p[k]) for p in runs_) for k in (*PHASES, "functions", "ran", "registration alone")}
          for n, runs_ in phase_runs.items()}
    rows, prows = [], []
    worst_profile, worst_reg, worst_report = 0.0, 0.0, 0.0
    for n in names:
        m, p = med[n], ph[n]
        ratio = m["profile"] / m["plain"]
        reg_us = 1e6 * p["registration"] / max(p["functions"], 1)
        alone_us = 1e6 * p["registration alone"] / max(p["functions"], 1)
        report_per_2000 = (p["counting"] + p["rendering"]) / max(p["ran"], 1) * 2000
        worst_profile, worst_reg, worst_report = max(worst_profile, ratio), max(worst_reg, alone_us), max(worst_report, report_per_2000)
        rows.append([n, f"{int(p['functions']):,}", f"{int(p['ran']):,}", f"{m['plain']:.2f}", f"{m['count']:.2f}",
                     f"{m['count'] / m['plain']:.2f}×", f"{m['profile']:.2f}", f"**{ratio:.2f}×**"])
        prows.append([n, *(f"{p[k]:.3f}" for k in PHASES), f"{reg_us:.1f} / {alone_us:.1f}", f"{report_per_2000:.2f}"])
    cmdline = "python benchmarks/startup.py" + "".join(" " + shlex.quote(a) for a in argv)
    verdict = [
        f"- target `profile` ≤ {TARGET_PROFILE}× plain (warm cache): worst {worst_profile:.2f}× — "
        f"**{'met' if worst_profile <= TARGET_PROFILE else 'not met'}**",
        f"- target registration ≤ {TARGET_REGISTRATION_US} µs per function (registering alone): worst {worst_reg:.1f} µs — "
        f"**{'met' if worst_reg <= TARGET_REGISTRATION_US else 'not met'}**",
        f"- target counting + rendering ≤ {TARGET_REPORT_S} s per 2,000 functions that ran: worst "
        f"{worst_report:.2f} s — **{'met' if worst_report <= TARGET_REPORT_S else 'not met'}**",
    ]
    return "\n".join([
        "## Fixed costs on short runs of big packages: plain, `record --mode count`, `profile`",
        "",
        f"Measured {machine()}; `{cmdline}` (median of {done} interleaved round{'s' if done != 1 else ''}"
        f"{'' if done == runs else f' of {runs}'}, finished {_dt.datetime.now().strftime('%H:%M')} local time); "
        f"wholetrace {version}. 1-minute load average {' → '.join(f'{x:.1f}' for x in load)} on "
        f"{os.cpu_count()} CPUs: other jobs on the machine add noise to wall times.",
        "",
        "Whole-process wall time, instrumented-code cache warm. functions: registered (every function "
        "of every instrumented file); ran: with a non-zero block count.",
        "",
        table(["program", "functions", "ran", "plain s", "count s", "count ×", "profile s", "profile ×"], rows),
        "Phases (seconds, median), from the same recording made in-process by a harness: start-up = "
        "importing wholetrace and opening the recording (the interpreter's own start is not included); "
        "cache load = reading and relocating cached code; run = the program minus the two before; "
        "read = importing the read side, opening the recording and decoding its function registry; counting = propagation and "
        "line mapping (`profile.profiles`); rendering = the text report. Registration \"alone\": the run's "
        "`register_file` calls made again into a fresh recording with nothing running beside them "
        "(fastest of 5), which a loaded machine disturbs less.",
        "",
        table(["program", *PHASES, "registration µs / function: in the run / alone",
               "counting + rendering s / 2,000 ran"], prows),
        "\n".join(verdict),
    ])


if __name__ == "__main__":
    sys.exit(main())
