"""The fixed start-up cost of ``record``: CPU time of short recordings against plain runs.

For an empty program and a few small corpus programs (``tests/corpus.py``, size ``small``),
each round runs, interleaved, ``python X.py`` and ``wholetrace record --mode M -q -o X.M.wt
[--include P]... X.py`` for M in count, blocks, witness, path (the console script pip installs,
as users run it: ``ENTRY``), and takes the CPU time
(user + sys) of each whole process from the operating system (``os.wait4``).  With ``--base
REV`` every command runs a second time in each round against the source of git revision
``REV`` (``git archive``; both byte-compiled, each with its own warm instrumented-code cache),
so the before/after ratio is paired run by run.  Medians over ``--runs`` rounds; an untimed
warm-up round first.  Issue 10 asks ``record`` of an empty program to cost at most 45 ms CPU.

    python benchmarks/recordstart.py [--programs empty,nqueens,json] [--runs N] [--base REV] [--no-write]
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import REPO, geomean, machine, snapshot_env, source_version, table, write_section  # noqa: E402
from corpus import PROGRAMS  # noqa: E402

PY = sys.executable
MODES = ("count", "blocks", "witness", "path")
TOOLS = ("plain",) + MODES
DEFAULT_PROGRAMS = ("empty", "nqueens", "json", "tomllib")
#: How ``record`` is started: the ``wholetrace`` console script beside the interpreter (what the
#: README's ``wholetrace record`` runs; ``python -m wholetrace.cli`` would add runpy,
#: importlib.util and contextlib: ``python -m wholetrace`` 7.1 M instructions more on an empty
#: recording, 105.5 against 98.4 M, which users do not pay), else the same
#: two lines through ``-c``.  With ``--base`` the script imports the base's source (PYTHONPATH).
_SCRIPT = Path(PY).parent / "wholetrace"
ENTRY = [str(_SCRIPT)] if _SCRIPT.is_file() else ["-c", "import sys\nfrom wholetrace.cli import main\nsys.exit(main())"]
TARGET_EMPTY_MS = 45.0


def cpu_of(cmd: list[str], cwd: Path, env: dict[str, str]) -> float:
    """CPU seconds (user + sys) of one whole process, from ``wait4``; raises if it fails."""
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    err = proc.stderr.read() if proc.stderr else b""
    _pid, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"{shlex.join(cmd)} exited {proc.returncode}:\n{err.decode(errors='replace')[-2000:]}")
    return usage.ru_utime + usage.ru_stime


def write_program(name: str, work: Path) -> tuple[Path, list[str]]:
    if name == "empty":
        path = work / "empty.py"
        path.write_text("")
        return path, []
    return PROGRAMS[name].write(work, "small"), list(PROGRAMS[name].include)


def commands(script: Path, include: list[str], work: Path, tag: str) -> dict[str, list[str]]:
    inc = [a for m in include for a in ("--include", m)]
    out = {"plain": [PY, str(script)]}
    for mode in MODES:
        out[mode] = [PY, *ENTRY, "record", "--mode", mode, "-q", "-o",
                     str(work / f"{script.stem}.{mode}.{tag}.wt"), *inc, str(script)]
    return out


def base_env(work: Path, rev: str, env: dict[str, str]) -> dict[str, str]:
    """The environment of the ``--base`` runs: ``rev``'s src/, byte-compiled, its own code cache."""
    import compileall
    import io
    import tarfile

    data = subprocess.run(["git", "archive", rev, "src/wholetrace"], cwd=REPO, capture_output=True, check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(work / "base", filter="data")
    compileall.compile_dir(str(work / "base" / "src"), quiet=1)
    return dict(env, PYTHONPATH=str(work / "base" / "src"), WHOLETRACE_CACHE_DIR=str(work / "wt-cache-base"))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--programs", default=",".join(DEFAULT_PROGRAMS),
                    help=f"comma-separated: empty and corpus program names (default {','.join(DEFAULT_PROGRAMS)})")
    ap.add_argument("--runs", type=int, default=9, help="interleaved rounds (default 9)")
    ap.add_argument("--base", metavar="REV", help="also run git revision REV, paired run by run")
    ap.add_argument("--no-write", action="store_true", help="print only, do not write docs/benchmarks.md")
    args = ap.parse_args(argv)
    names = args.programs.split(",")
    unknown = [n for n in names if n != "empty" and n not in PROGRAMS]
    if unknown:
        ap.error(f"unknown program(s) {', '.join(unknown)}")
    with tempfile.TemporaryDirectory(prefix="wt-recordstart-") as tmp:
        work = Path(tmp)
        envs = {"new": snapshot_env(work)}
        if args.base:
            envs["base"] = base_env(work, args.base, envs["new"])
        version = source_version()
        progs = {n: write_program(n, work) for n in names}
        cmds = {(n, tag): commands(script, inc, work, tag) for n, (script, inc) in progs.items() for tag in envs}
        cpu: dict[tuple[str, str, str], list[float]] = {}
        for r in range(args.runs + 1):         # round 0: warm-up (code caches, OS file cache), not counted
            for n in names:
                for tool in TOOLS:
                    for tag, env in envs.items():
                        secs = cpu_of(cmds[(n, tag)][tool], work, env)
                        if r:
                            cpu.setdefault((n, tool, tag), []).append(secs)
            if r:
                print(f"round {r}/{args.runs} " + "  ".join(
                    f"{n}:{cpu[(n, 'blocks', 'new')][-1] * 1e3:.0f}ms" for n in names), file=sys.stderr, flush=True)
        load = os.getloadavg()
    body = render(names, cpu, args.runs, args.base, version, load, argv)
    print(body)
    if not args.no_write:
        write_section("recordstart", body)
        print("\nwrote section 'recordstart' of docs/benchmarks.md", file=sys.stderr)
    return 0


def _slowdown(cpu: dict[tuple[str, str, str], list[float]], name: str, tool: str, tag: str) -> float:
    return statistics.median(cpu[(name, tool, tag)]) / statistics.median(cpu[(name, "plain", tag)])


def _ms(values: list[float]) -> str:
    return f"{statistics.median(values) * 1e3:.0f} ({min(values) * 1e3:.0f}-{max(values) * 1e3:.0f})"


def render(names: list[str], cpu: dict[tuple[str, str, str], list[float]], runs: int, base: str | None,
           version: str, load: tuple[float, float, float], argv: list[str] | None) -> str:
    tags = ["base", "new"] if base else ["new"]
    lines = ["## Fixed start-up of `record` (CPU time, size `small`)", "",
             f"`python benchmarks/recordstart.py {shlex.join(argv if argv is not None else sys.argv[1:])}` "
             f"({machine()}, source {version}; load average at the end "
             f"{load[0]:.1f}/{load[1]:.1f}/{load[2]:.1f}: other jobs ran, so the absolute times are under load).  "
             f"CPU time = user + sys of each whole process (`wait4`), median (min-max) of {runs} interleaved "
             f"rounds after a warm-up, in ms; record = `{shlex.join(['python', *ENTRY])} record` "
             f"(the console script users run); slowdown = record / plain, medians"
             + (f"; `base` = git revision `{base}`, `new` = the working tree, run alternately in every round, "
                "new/base = median of the paired ratios." if base else ".")]
    headers = ["program", "tool"] + [f"{t} CPU ms" for t in tags] + [f"{t} slowdown" for t in tags] \
        + (["new/base"] if base else [])
    rows = []
    for n in names:
        for tool in TOOLS:
            row: list[object] = [n if tool == "plain" else "", tool]
            row += [_ms(cpu[(n, tool, t)]) for t in tags]
            row += ["" if tool == "plain" else f"{_slowdown(cpu, n, tool, t):.2f}x" for t in tags]
            if base:
                ratios = [a / b for a, b in zip(cpu[(n, tool, "new")], cpu[(n, tool, "base")])]
                row.append(f"{statistics.median(ratios):.2f}")
            rows.append(row)
    lines += ["", table(headers, rows), ""]
    corpus = [n for n in names if n != "empty"]
    if corpus:
        gm = []
        for tool in MODES:
            cells = [f"{geomean(_slowdown(cpu, n, tool, t) for n in corpus):.2f}x" for t in tags]
            gm.append([tool, *cells])
        lines += [f"Geometric mean of the slowdowns over {', '.join(corpus)}:", "",
                  table(["mode"] + [f"{t}" for t in tags], gm), ""]
    if "empty" in names:
        empty = statistics.median(cpu[("empty", "blocks", "new")]) * 1e3
        verdict = "met" if empty <= TARGET_EMPTY_MS else "not met"
        lines.append(f"Target (issue 10): `record --mode blocks` of an empty program at most {TARGET_EMPTY_MS:.0f} ms "
                     f"CPU: {empty:.0f} ms, {verdict} (under the load above).")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
