"""Slowdowns per Python version: `count`, `blocks`, `witness` and coverage.py ``--branch``.

Probe costs move with the interpreter (3.12 and 3.13 specialise more, and coverage.py uses
``sys.monitoring`` from 3.12 on), so this runs the same corpus programs under every supported
interpreter found (``tools/compat.py``: ``.venv-X.Y`` environments, made by
``make test-compat``; the running interpreter stands for its own version), interleaved round
by round: for each program (the pyperformance ones, which need no ``--include``), each
interpreter runs plain, ``record --mode count``,
``--mode blocks``, ``--mode witness``, ``coverage run --branch`` and (3.12+) coverage.py's
``sys.monitoring`` core on lines back to back.  Medians
over ``--runs`` rounds; slowdown = median / median plain of the same interpreter; the table
gives geometric means over the programs.

    python benchmarks/versions.py [--programs a,b] [--runs N] [--size small|bench] [--quick] [--no-write]
"""

from __future__ import annotations

import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
from _report import (REPO, corpus_options, geomean, machine, snapshot_env, source_version,  # noqa: E402
                     table, timed, write_section)
from compat import SUPPORTED, find_python  # noqa: E402
from corpus import PROGRAMS  # noqa: E402
from overhead import CORPUS_MD_TEN  # noqa: E402

MODES = ("count", "blocks", "witness")
TOOLS = ("plain",) + MODES + ("coverage", "sysmon")


def interpreters() -> dict[str, str]:
    """Version -> interpreter with wholetrace's dependencies and coverage installed."""
    here = "%d.%d" % sys.version_info[:2]
    found = {here: sys.executable}
    for version in SUPPORTED:
        venv_py = REPO / f".venv-{version}" / "bin" / "python"
        if version != here and venv_py.exists():
            found[version] = str(venv_py)
        elif version != here:
            hint = "installed but no .venv-" + version if find_python(version) else "not installed"
            print(f"versions: Python {version} skipped ({hint}; `make test-compat` makes the environment)",
                  file=sys.stderr)
    return dict(sorted(found.items()))


def commands(py: str, driver: Path, include: list[str], work: Path, tag: str) -> dict[str, list[str]]:
    inc = [a for m in include for a in ("--include", m)]
    out = {"plain": [py, str(driver)]}
    for mode in MODES:
        wt = work / f"{driver.stem}.{tag}.{mode}.wt"
        out[mode] = [py, "-m", "wholetrace.cli", "record", "--mode", mode, "-q", "-o", str(wt), *inc, str(driver)]
    out["coverage"] = [py, "-m", "coverage", "run", "--branch", f"--data-file={work / ('.coverage.' + tag)}",
                       str(driver)]
    # coverage's sys.monitoring core measures lines only before 3.14 (with --branch it falls
    # back to its C tracer, with a warning): the fastest coverage.py a 3.12+ user can get
    out["sysmon"] = ["env", "COVERAGE_CORE=sysmon", *out["coverage"][:4], f"--data-file={work / ('.sysmon.' + tag)}",
                     str(driver)]
    return out


def main(argv: list[str] | None = None) -> int:
    args, names, runs, size, write = corpus_options(
        __doc__.split("\n\n")[0], 3, list(PROGRAMS), argv,
        extra=[("--size", {"choices": ["small", "bench"], "help": "program size (default: bench; small with --quick)"})])
    size = args.size or size
    if not args.programs:
        names = [n for n in names if n in CORPUS_MD_TEN]
    names = [n for n in names if not PROGRAMS[n].include]    # coverage would need per-file --include
    pys = interpreters()
    times: dict[str, dict[str, dict[str, list[float]]]] = {v: {t: {} for t in TOOLS} for v in pys}
    with tempfile.TemporaryDirectory(prefix="wt-versions-") as tmp:
        work = Path(tmp)
        env = snapshot_env(work)
        drivers = {n: PROGRAMS[n].write(work / n, size) for n in names}
        for n in names:                                       # warm-up: caches, numba, .pyc
            for v, py in pys.items():
                for tool, cmd in commands(py, drivers[n], PROGRAMS[n].include, work, v).items():
                    if tool != "sysmon" or v >= "3.12":
                        timed(cmd, drivers[n].parent, env)
        for r in range(runs):
            for n in names:
                for v, py in pys.items():
                    for tool, cmd in commands(py, drivers[n], PROGRAMS[n].include, work, v).items():
                        if tool == "sysmon" and v < "3.12":
                            continue
                        secs, _ = timed(cmd, drivers[n].parent, env)
                        times[v][tool].setdefault(n, []).append(secs)
            print(f"round {r + 1}/{runs} done", file=sys.stderr)
    body = render(names, pys, times, runs, size)
    print(body)
    if write:
        write_section("versions", body)
    return 0


def render(names: list[str], pys: dict[str, str], times: dict[str, dict[str, dict[str, list[float]]]],
           runs: int, size: str) -> str:
    rows = []
    for v in pys:
        med = {t: {n: statistics.median(times[v][t][n]) for n in names if times[v][t].get(n)} for t in TOOLS}
        slow = {t: geomean(med[t][n] / med["plain"][n] for n in med[t]) for t in TOOLS[1:] if med[t]}
        rows.append([f"Python {v}", f"{geomean(med['plain'].values()):.3f} s"]
                    + [f"{slow[t]:.2f}×" if t in slow else "n/a" for t in TOOLS[1:]])
    return "\n".join([
        "## Slowdown per Python version (`benchmarks/versions.py`)",
        "",
        f"Measured {machine()}; source {source_version()}. Programs ({size} size, {runs} interleaved rounds, "
        f"medians; geometric means over the programs): {', '.join(names)}. Whole processes, wall clock; "
        "each slowdown is against plain runs of the same interpreter. coverage.py `--branch` uses its C "
        "tracer on every version here (its `sys.monitoring` core measures branches only from 3.14 on); the "
        "last column is coverage.py with `COVERAGE_CORE=sysmon` and line coverage only, the fastest "
        "coverage.py a 3.12/3.13 user can run.",
        "",
        table(["interpreter", "plain (geomean)", "count ×", "blocks ×", "witness ×", "coverage --branch ×",
               "coverage lines, sysmon ×"], rows),
    ])


if __name__ == "__main__":
    sys.exit(main())
