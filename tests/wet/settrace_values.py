"""Independent reference recorder for WET capture (imports nothing from wholetrace).

``reference(script)`` runs ``script`` in a fresh interpreter under ``sys.settrace`` and
returns, per frame *activation* of the script's own code (a call, or a generator
resumption), in call order: the qualified name, the lines that ran (``'line'`` events) and
the local names whose binding changed after each line, read from ``f_locals``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

RUNNER = r'''
import json, os, runpy, sys
script = os.path.abspath(sys.argv[1])
out_path = sys.argv[2]
groups = []            # [qualname, lines, changes]
snap = {}              # id(frame) -> {name: value}
last = {}              # id(frame) -> (group index, line)
alive = []             # frames kept so ids are not reused

def desc(v):
    if type(v) in (int, float, bool, str, type(None)):
        return repr(v)
    return "<" + type(v).__name__ + ">"

def changes(frame):
    old = snap.get(id(frame), {})
    now = dict(frame.f_locals)
    out = []
    for k, v in now.items():
        if k.startswith("__") or (k in old and old[k] is v):
            continue
        out.append([k, desc(v)])
    snap[id(frame)] = now
    return out

def flush(frame):
    g, line = last.get(id(frame), (None, None))
    ch = changes(frame)
    if g is not None and ch:
        groups[g][2].extend([line] + c for c in ch)

def local(frame, event, arg):
    if event == "line":
        flush(frame)
        g = last[id(frame)][0]
        groups[g][1].append(frame.f_lineno)
        last[id(frame)] = (g, frame.f_lineno)
    elif event == "return":
        flush(frame)
    return local

def tracer(frame, event, arg):
    if event != "call" or frame.f_code.co_filename != script:
        return None
    name = frame.f_code.co_qualname
    if name.split(".")[-1].startswith("<") and name != "<module>":
        return None
    if id(frame) not in snap:
        alive.append(frame)
        snap[id(frame)] = dict(frame.f_locals)
    groups.append([name, [], []])
    last[id(frame)] = (len(groups) - 1, None)
    return local

sys.argv = [script]
sys.settrace(tracer)
try:
    runpy.run_path(script, run_name="__main__")
finally:
    sys.settrace(None)
    with open(out_path, "w") as f:
        json.dump(groups, f)
'''


def reference(script: Path) -> list[tuple[str, list[int], list[tuple[int, str, str]]]]:
    with tempfile.TemporaryDirectory() as td:
        out = Path(td) / "ref.json"
        runner = Path(td) / "runner.py"
        runner.write_text(RUNNER)
        subprocess.run([sys.executable, str(runner), str(script), str(out)], check=True,
                       capture_output=True, timeout=120, cwd=script.parent)
        groups = json.loads(out.read_text())
    return [(q, lines, [tuple(c) for c in ch]) for q, lines, ch in groups]
