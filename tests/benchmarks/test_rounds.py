"""benchmarks/_report.py's process trees (reaped with their CPU, killed when stuck); _rounds.py's orders and robust
figures against naive twins; pathmode's rounds and render."""

from __future__ import annotations

import itertools
import json
import math
import statistics
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
# only while importing: left on sys.path, benchmarks/corpus.py and benchmarks/profile.py would shadow
# tests/corpus.py and the stdlib's profile for every test collected after this one
sys.path.insert(0, str(BENCH))
try:
    import _rounds
finally:
    sys.path.remove(str(BENCH))

# A parent that starts a child in the background and exits at once, as `record --wpp` starts its
# builder through `/bin/sh ... &`: the child, orphaned, burns CPU, then writes its own CPU clock
# to a file as its last act.
ORPHAN = textwrap.dedent("""
    import subprocess, sys
    child = "import time, sys\\ntime.sleep(0.3)\\nt = time.process_time()\\nwhile time.process_time() - t < 0.25: pass\\n" \\
            "open(sys.argv[1], 'w').write(repr(time.process_time()))"
    subprocess.Popen([sys.executable, "-c", child, sys.argv[1]], start_new_session=True,
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)   # not our pipes: their EOF would wait for it
""")

DRIVER = textwrap.dedent("""
    import json, os, sys
    sys.path.insert(0, sys.argv[1])
    import _report
    sub = sys.argv[2] == "1" and _report.become_subreaper()
    out = sys.argv[3]
    run = _report.run_tree([sys.executable, "-c", sys.argv[4], out], os.getcwd(), dict(os.environ))
    print(json.dumps({"sub": sub, "cpu": run.cpu, "orphan_cpu": run.orphan_cpu, "orphans": run.orphans,
                      "done_when_returned": os.path.exists(out)}))
""")


def _drive(tmp_path: Path, subreaper: bool) -> dict:
    out = tmp_path / f"child{int(subreaper)}.txt"
    proc = subprocess.run([sys.executable, "-c", DRIVER, str(BENCH), "1" if subreaper else "0", str(out), ORPHAN],
                          capture_output=True, text=True, check=True, cwd=tmp_path, timeout=60)
    res = json.loads(proc.stdout)
    if not subreaper:   # nobody waited for it here: let it finish before the temporary directory goes
        import time
        for _ in range(200):
            if out.exists():
                break
            time.sleep(0.05)
    res["child_cpu"] = float(out.read_text()) if out.exists() else None
    return res


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_CHILD_SUBREAPER is Linux's")
def test_orphan_cpu_counted_and_waited_for(tmp_path: Path) -> None:
    res = _drive(tmp_path, True)
    assert res["sub"]
    assert res["done_when_returned"], "run_tree returned before the orphaned descendant ended"
    assert res["orphans"] == 1
    # the orphan's own clock (read just before it exited) is inside what the tree is charged
    assert res["orphan_cpu"] >= res["child_cpu"] - 0.01
    assert res["cpu"] - res["orphan_cpu"] > 0.005   # the parent too (a Python start-up): the whole tree is charged


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_CHILD_SUBREAPER is Linux's")
def test_without_subreaper_the_orphan_escapes(tmp_path: Path) -> None:
    """What the benchmark measured before wave 16: the orphan's CPU is not in RUSAGE_CHILDREN."""
    res = _drive(tmp_path, False)
    assert res["orphans"] == 0 and res["orphan_cpu"] == 0
    assert not res["done_when_returned"]
    assert res["child_cpu"] is not None and res["cpu"] < res["child_cpu"]


# run_tree waits for (and on failure kills) every child of its process: in a subprocess of its own,
# never in the pytest worker, whose other children are not its business.
KILLER = textwrap.dedent("""
    import json, os, sys, time
    sys.path.insert(0, sys.argv[1])
    import _report
    _report.become_subreaper()
    cmd, kw, pidfile = json.loads(sys.argv[2]), json.loads(sys.argv[3]), sys.argv[4]
    t = time.perf_counter()
    try:
        _report.run_tree(cmd, os.getcwd(), dict(os.environ), **kw)
        err = None
    except RuntimeError as e:
        err = str(e)
    secs = time.perf_counter() - t
    pids = [int(x) for x in open(pidfile).read().split()] if os.path.exists(pidfile) else []
    def alive(pid):
        try:
            os.kill(pid, 0)
            return True
        except ProcessLookupError:
            return False
    print(json.dumps({"error": err, "secs": secs, "pids": pids, "alive": [p for p in pids if alive(p)],
                      "children": _report._children()}))
""")

# A parent that starts, in a session of its own (as record starts its builder), a child that starts a
# grandchild; all three write their pids, the child and grandchild then sleep; the parent sleeps argv[2] s.
SLEEPER = textwrap.dedent("""
    import os, subprocess, sys, time
    child = ("import os, subprocess, sys, time\\n"
             "g = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\\n"
             "open(sys.argv[1], 'a').write(f'{os.getpid()} {g.pid} ')\\n"
             "time.sleep(60)\\n")
    subprocess.Popen([sys.executable, "-c", child, sys.argv[1]], start_new_session=True,
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    open(sys.argv[1], "a").write(f"{os.getpid()} ")
    time.sleep(float(sys.argv[2]))
""")


def _kill(tmp_path: Path, cmd: list[str], **kw: object) -> dict:
    pidfile = tmp_path / "pids"
    proc = subprocess.run([sys.executable, "-c", KILLER, str(BENCH), json.dumps(cmd), json.dumps(kw), str(pidfile)],
                          capture_output=True, text=True, check=True, cwd=tmp_path, timeout=120)
    return json.loads(proc.stdout)


def test_failure_raises_with_stderr(tmp_path: Path) -> None:
    res = _kill(tmp_path, [sys.executable, "-c", "import sys; sys.exit('boom')"])
    assert res["error"] and "boom" in res["error"]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_CHILD_SUBREAPER, /proc")
@pytest.mark.parametrize("case", ["timeout", "reap deadline"])
def test_stuck_run_is_killed_with_its_tree(tmp_path: Path, case: str) -> None:
    """A run that hangs (timeout), or leaves a descendant that does (reap deadline): run_tree raises,
    and the parent, the orphaned child of its own session and that child's child are all gone."""
    if case == "timeout":
        res = _kill(tmp_path, [sys.executable, "-c", SLEEPER, str(tmp_path / "pids"), "60"], timeout=4)
        assert "still running after 4 s" in res["error"]
    else:
        res = _kill(tmp_path, [sys.executable, "-c", SLEEPER, str(tmp_path / "pids"), "0"], reap_timeout=4)
        assert "a descendant still ran 4 s after it exited" in res["error"]
    assert len(res["pids"]) == 3, res   # the three processes were started (else the test shows nothing)
    assert res["alive"] == [] and res["children"] == []
    assert res["secs"] < 50   # not the 60 s sleep: killed


def test_orders() -> None:
    items = ["plain", "blocks", "witness", "path", "path raw"]
    assert _rounds.order(items, "fixed", 1, 0, "x") == items
    shuffled = [_rounds.order(items, "shuffle", 16, r, "richards") for r in range(20)]
    assert all(sorted(s) == sorted(items) for s in shuffled)
    assert shuffled == [_rounds.order(items, "shuffle", 16, r, "richards") for r in range(20)]   # reproducible
    assert len({tuple(s) for s in shuffled}) > 5
    # path does not always follow witness any more
    assert any(s.index("path") != s.index("witness") + 1 for s in shuffled)
    rotated = [_rounds.order(items, "rotate", 0, r) for r in range(len(items))]
    for pos in range(len(items)):   # every command in every place once over len(items) rounds
        assert sorted(r[pos] for r in rotated) == sorted(items)
    with pytest.raises(ValueError):
        _rounds.order(items, "random", 0, 0)


def test_ratios_against_naive() -> None:
    a, b = [2.0, 9.0, 3.0, 4.0], [1.0, 3.0, 2.0, 1.0]
    assert _rounds.paired_ratio(a, b) == pytest.approx(2.5)   # ratios 2, 3, 1.5, 4: median (2 + 3) / 2
    assert _rounds.least_ratio(a, b) == pytest.approx(2.0)
    assert _rounds.median_ratio(a, b) == pytest.approx(3.5 / 1.5)
    # a slow drift (every round of both 10% slower than the last) leaves the paired ratio alone
    drift = [1.1 ** r for r in range(6)]
    assert _rounds.paired_ratio([1.3 * d for d in drift], drift) == pytest.approx(1.3)
    with pytest.raises(ValueError):
        _rounds.paired_ratio([1.0], [1.0, 2.0])


def _exact_quantiles(ratios: list[list[float]], qs: tuple[float, ...]) -> list[float]:
    """The bootstrap distribution enumerated exactly (all n^n resamples of the rounds)."""
    n = len(ratios[0])
    vals = sorted(math.exp(statistics.fmean(math.log(statistics.median(r[i] for i in idx)) for r in ratios))
                  for idx in itertools.product(range(n), repeat=n))
    return [vals[min(len(vals) - 1, int(q * len(vals)))] for q in qs]


def test_bootstrap_against_exact_enumeration() -> None:
    ratios = [[1.0, 1.2, 0.9, 1.5], [1.1, 0.95, 1.3, 1.05], [0.8, 1.4, 1.0, 1.1]]
    lo, hi = _rounds.bootstrap_interval(ratios, reps=4000, seed=3)
    e_lo, e_hi = _exact_quantiles(ratios, (0.03, 0.97))
    e_lo5, e_hi95 = _exact_quantiles(ratios, (0.07, 0.93))
    assert e_lo <= lo <= e_lo5 and e_hi95 <= hi <= e_hi
    same = [[1.25] * 5, [0.8] * 5]
    assert _rounds.bootstrap_interval(same) == pytest.approx((1.0, 1.0))
    with pytest.raises(ValueError):
        _rounds.bootstrap_interval([[1.0, 2.0], [1.0]])


def test_verdict() -> None:
    assert _rounds.verdict(1.5, (1.45, 1.55), 1.6, 7).startswith("met (decided")
    assert _rounds.verdict(1.65, (1.62, 1.7), 1.6, 7).startswith("not met (decided")
    assert _rounds.verdict(1.58, (1.52, 1.66), 1.6, 7).startswith("met (undecided")
    assert _rounds.verdict(1.5, (1.45, 1.55), 1.6, 3).startswith("met (undecided")   # too few rounds
    # the point outside its own interval, on the other side of the target: not decided (L1)
    assert _rounds.verdict(1.59, (1.61, 1.7), 1.6, 7).startswith("met (undecided")
    assert _rounds.verdict(1.61, (1.5, 1.59), 1.6, 7).startswith("not met (undecided")
    # both point figures are printed; decided only when the median agrees
    v = _rounds.verdict(1.5, (1.45, 1.55), 1.6, 7, median=1.55)
    assert v.startswith("met (decided") and "1.500×" in v and "1.550×" in v
    v = _rounds.verdict(1.5, (1.45, 1.55), 1.6, 7, median=1.65)
    assert v.startswith("met (undecided") and "median figure says not met" in v
    assert _rounds.verdict(1.65, (1.62, 1.7), 1.6, 7, median=1.58).startswith("not met (undecided")


def test_verdict_under_load() -> None:
    quiet = _rounds.verdict(1.5, (1.45, 1.55), 1.6, 15, median=1.5, load=_rounds.LOADED)
    assert quiet.startswith("met (decided")
    for point, iv in ((1.5, (1.45, 1.55)), (1.7, (1.65, 1.75))):
        v = _rounds.verdict(point, iv, 1.6, 15, median=point, load=_rounds.LOADED + 0.1)
        assert "under load: not a verdict on the targets" in v and "decided" not in v


def test_adjacent_order() -> None:
    items = ["plain", "blocks", "witness", "path", "path raw"]
    seen_sides, seen_places = set(), set()
    for r in range(40):
        o = _rounds.order(items, "adjacent", 16, r, "json", around=("path", ("plain", "witness")))
        assert sorted(o) == sorted(items)
        i = o.index("path")
        assert 0 < i < len(o) - 1 and {o[i - 1], o[i + 1]} == {"plain", "witness"}
        seen_sides.add(o[i - 1])
        seen_places.add(i)
    assert seen_sides == {"plain", "witness"} and seen_places == {1, 2, 3}
    # without the three among the items it is a plain shuffle
    assert sorted(_rounds.order(["a", "b", "c"], "adjacent", 1, 0, around=("path", ("plain", "witness")))) == ["a", "b", "c"]


# pathmode.rounds() on cheap commands (--repeat 2), then render() on synthetic figures, in a subprocess:
# importing pathmode puts benchmarks/ (its corpus.py, profile.py) on sys.path, and rounds() waits on
# every child of its process.
ROUNDS = textwrap.dedent("""
    import json, os, sys
    from pathlib import Path
    sys.path.insert(0, sys.argv[1])
    import pathmode as pm
    py = sys.executable
    cmds = {n: {t: [py, "-c", f"print({2 if (n, t) == ('b', 'blocks') else 1})"] for t in pm.TOOLS} for n in ("a", "b")}
    calls = []
    times, cpus, raw, mism = pm.rounds(cmds, 3, pm.Plan("shuffle", 16, 2, 0.0), Path.cwd(), dict(os.environ), calls.append)
    names, k = ["a", "b"], {"plain": 1.0, "blocks": 1.2, "witness": 1.1, "path": 1.3, "path raw": 1.25}
    T = {n: {t: [k[t] * (1 + 0.1 * r) for r in range(6)] for t in pm.TOOLS} for n in names}
    C = {n: {t: [0.5] * 6 for t in (*pm.TOOLS, pm.REC)} for n in names}
    stats = {n: {"blocks": (100, 10), "witness": (60, 8), "path": (50, 5), "path raw": (50, 7),
                 "path_regen": {"rate": 1e6, "agree": "=", "fallback": 0, "functions": 1, "lag": {}}} for n in names}
    def raw_at(load):
        out, prev = [], None
        for r in range(6):
            for n in names:
                for t in pm.TOOLS:
                    out.append({"round": r, "program": n, "tool": t, "repeat": 0, "wall": T[n][t][r], "cpu": 0.5,
                                "orphan_cpu": 0.1 * (t == "path"), "orphans": int(t == "path"), "tail": 0.0,
                                "load": load, "prev": prev and prev[1], "prev_program": prev and prev[0]})
                    prev = (n, t)
        return out
    body = {str(load): pm.render(names, T, stats, [], 6, "small", "v", [], cpus=C, raw=raw_at(load),
                                 plan=pm.Plan("shuffle", 16, 1, 0.0), reaper=True) for load in (0.5, 5.0)}
    print(json.dumps({"times": times, "cpus": cpus, "raw": raw, "mism": mism, "calls": len(calls), "body": body}))
""")


def test_rounds_aligned_and_render(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-c", ROUNDS, str(BENCH)], capture_output=True, text=True, check=True,
                          cwd=tmp_path, timeout=300)
    res = json.loads(proc.stdout)
    tools = ["plain", "blocks", "witness", "path", "path raw"]
    times, cpus, raw = res["times"], res["cpus"], res["raw"]
    assert len(raw) == res["calls"] == 2 * 5 * 3 * 2
    for n in ("a", "b"):
        assert len(cpus[n]["path recorder"]) == 3
        for t in tools:
            assert len(times[n][t]) == len(cpus[n][t]) == 3
            for r in range(3):
                runs = [x for x in raw if (x["program"], x["tool"], x["round"]) == (n, t, r)]
                assert sorted(x["repeat"] for x in runs) == [0, 1]
                best = min(runs, key=lambda x: x["wall"])   # the round keeps the least wall, and its CPU
                assert times[n][t][r] == best["wall"] and cpus[n][t][r] == best["cpu"]
        for r in range(3):   # a program's ten runs of a round are back to back: its pairs share one stretch of time
            at = [i for i, x in enumerate(raw) if (x["program"], x["round"]) == (n, r)]
            assert at == list(range(at[0], at[0] + 10))
    assert raw[0]["prev"] is None
    assert all((x["prev_program"], x["prev"]) == (y["program"], y["tool"]) for y, x in zip(raw, raw[1:]))
    assert res["mism"] == ["b"]

    quiet, loaded = res["body"]["0.5"], res["body"]["5.0"]
    heads = [line for line in quiet.splitlines() if line.startswith("| program |")]
    assert [h.count(" | ") + 1 for h in heads] == [25, 12]   # the main table, then the CPU / robust one
    verdict = quiet.split("targets' verdict: the paired wall figure")[1].split("\n")[0]
    # path / plain 1.3 every round, path / witness 1.3 / 1.1: paired = median = the interval's ends
    assert "path / witness **1.182×**, not met (decided" in verdict
    assert "path ≤ 1.6×: **1.300×**, met (decided" in verdict
    assert "after witness 1.182× (n=12)" in quiet   # path always ran right after witness here
    assert "Taken under load" not in quiet and "Taken under load" in loaded
    tail = loaded.split("targets' verdict: the paired wall figure")[1].split("\n")[0].split("≤ witness: path / witness")[1]
    assert tail.count("under load: not a verdict on the targets") == 2 and "decided" not in tail
