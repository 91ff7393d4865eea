"""A recorded child process's end: its streams flushed and reported as plain's (review21e MED-B, wave 22)."""

from __future__ import annotations

import json
import re
import subprocess
import textwrap
from pathlib import Path

import pytest

from wtutil import cli_in_process, run_plain, run_recorded

# the parent runs each program as a `-c`, stdin and script child (runtime.subprocs: they end with os._exit)
PARENT = '''
    import os, re, subprocess, sys
    here = os.path.dirname(os.path.abspath(__file__))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}   # set by the test, not the shell
    if sys.argv[1] == "unbuffered":
        env["PYTHONUNBUFFERED"] = "1"
    for name in sys.argv[2:]:
        path = os.path.join(here, name)
        code = open(path).read()
        for form, cmd, given in (("c", [sys.executable, "-c", code], None), ("stdin", [sys.executable, "-"], code),
                                 ("script", [sys.executable, path], None)):
            r = subprocess.run(cmd, input=given, capture_output=True, text=True, env=env)
            print(name, form, r.returncode, repr(r.stdout), repr(re.sub(r"0x[0-9a-f]+", "0x?", r.stderr)))
'''

CHILDREN = {
    # plain: "Exception ignored in: <W ...>" and the flush's traceback, exit status 120 (before: 0, nothing)
    "flushraises.py": '''
        import sys
        class W:
            def write(self, s): return len(s)
            def flush(self): raise OSError("nope")
        print("hi", flush=True)
        sys.stdout = W()
    ''',
    # plain reads `closed` (a property of the program's), then calls flush once on each stream;
    # stderr's failing flush is dropped silently, with exit status 120 (before: closed never read, 0)
    "closedprop.py": '''
        import os, sys
        class W:
            def write(self, s): os.write(1, s.encode()); return len(s)
            @property
            def closed(self):
                os.write(1, b"<closed?>"); return False
            def flush(self): os.write(1, b"<flush>")
        class E(W):
            def flush(self): raise ValueError("stderr's flush")
        print("hi")
        sys.stdout = W()
        sys.stderr = E()
    ''',
    # a negative exit status: plain's is its low byte, 255 (before: 1)
    "negative.py": 'import sys\nsys.exit(-1)\n',
    # statuses past a C long: plain's is -1's low byte, 255; -2**63's is 0; 2**32+3's is 3 (review22f
    # LOW-3; before: the low byte of the Python int, 0)
    "huge.py": 'import sys\nsys.exit(2**70)\n',
    "long_max.py": 'import sys\nsys.exit(2**63 - 1)\n',
    "long_min.py": 'import sys\nsys.exit(-2**63)\n',
    "wide.py": 'import sys\nsys.exit(2**32 + 3)\n',
    # text left in the original stdout: plain's finalisation flushes it when it deallocates the
    # object (review22c HIGH-1; before: lost when buffered)
    "dunder_out.py": '''
        import io, sys
        sys.__stdout__.write("to dunder\\n")
        sys.stderr.write("to stderr\\n")
        sys.stdout = io.StringIO()
    ''',
    "saved_out.py": '''
        import os, sys
        out = sys.stdout
        sys.stdout = open(os.devnull, "w")
        out.write("saved stdout\\n")
    ''',
    # the exception of the program's failing flush is read as the interpreter reads it, not through
    # its class's __getattribute__ (review22c LOW-4; before: "<__traceback__>" printed); the classes
    # are made by exec so that no instrumented frame handles the exception
    "flushraises_ga.py": '''
        import os, sys
        exec("""if 1:
            class E(OSError):
                def __getattribute__(self, name):
                    if name in ("__traceback__", "with_traceback"):
                        os.write(1, b"<" + name.encode() + b">")
                    return super().__getattribute__(name)
            class W:
                def write(self, s): return len(s)
                def flush(self): raise E("nope")
        """)
        print("hi", flush=True)
        sys.stdout = W()
    ''',
}


def _write(tmp: Path, name: str, source: str) -> Path:
    path = tmp / name
    path.write_text(textwrap.dedent(source))
    return path


def _counts(path: Path, process: int) -> dict:
    code, out, err = cli_in_process("counts", "--process", str(process), "--format", "json", str(path))
    assert code == 0, err
    return json.loads(out)


def _norm(r: subprocess.CompletedProcess) -> tuple[int, str, str]:
    return r.returncode, re.sub(r"0x[0-9a-f]+", "0x?", r.stdout), re.sub(r"0x[0-9a-f]+", "0x?", r.stderr)


@pytest.mark.parametrize("buffering", ("buffered", "unbuffered"))
def test_subprocess_children_end_their_streams_as_plain(tmp_path: Path, buffering: str) -> None:
    """Each child's exit status, stdout and stderr are plain's, with the children's streams
    buffered (CI) or not (PYTHONUNBUFFERED); every child's part is stored with its end."""
    for name, source in CHILDREN.items():
        _write(tmp_path, name, source)
    prog = _write(tmp_path, "parent.py", PARENT)
    plain = run_plain(prog, buffering, *CHILDREN)
    assert "flushraises.py c 120 'hi\\n' 'Exception ignored in: <__main__.W object at 0x?>" in plain.stdout
    assert "dunder_out.py script 0 'to dunder\\n' 'to stderr\\n'" in plain.stdout, plain.stdout
    assert "saved_out.py c 0 'saved stdout\\n' ''" in plain.stdout, plain.stdout
    rec = run_recorded(prog, tmp_path / "x.wt", buffering, *CHILDREN)
    assert _norm(rec) == _norm(plain)
    code, out, err = cli_in_process("info", "--json", str(tmp_path / "x.wt"))
    assert code == 0, err
    processes = json.loads(out)["processes"]
    assert len(processes) == 1 + 3 * len(CHILDREN), processes
    ended = [(p["ended"], p["exit_code"]) for p in processes[1:] if p["events"] > 0]
    codes = [-1, 2**70, 2**63 - 1, -2**63, 2**32 + 3]   # the program's own, stored as given
    assert sorted(ended) == sorted([("exit", 0)] * 3 * (len(CHILDREN) - len(codes))
                                   + [("sys.exit", c) for c in codes] * 3), processes


# a multiprocessing child's stdout: plain flushes it once (Process._bootstrap), ignoring a ValueError
MP = '''
    import multiprocessing as mp, os, sys
    class W:
        def __init__(self): self.n = 0
        def write(self, s): os.write(1, s.encode()); return len(s)
        def flush(self):
            self.n += 1
            os.write(1, f"<flush {self.n}>".encode())
    class V(W):
        def flush(self):
            super().flush()
            raise ValueError("flush fails")
    def work(kind):
        sys.stdout = W() if kind == "count" else V()
        print("child", kind)
    if __name__ == "__main__":
        ctx = mp.get_context(sys.argv[1])
        for kind in ("count", "raise"):
            p = ctx.Process(target=work, args=(kind,))
            p.start()
            p.join()
            print("exit", kind, p.exitcode, flush=True)
'''


@pytest.mark.parametrize("method", ("fork", "spawn"))
def test_multiprocessing_child_stdout_flushed_as_plain(tmp_path: Path, method: str) -> None:
    """Before: one flush more in every child, and a ValueError from it printed by multiprocessing's
    finaliser loop with the child's recording never stopped."""
    prog = _write(tmp_path, "mpflush.py", MP)
    plain = run_plain(prog, method)
    assert "<flush 1>" in plain.stdout and "child raise" in plain.stdout, plain.stdout
    rec = run_recorded(prog, tmp_path / "x.wt", method)
    assert _norm(rec) == _norm(plain)
    code, out, err = cli_in_process("info", "--json", str(tmp_path / "x.wt"))
    assert code == 0, err
    processes = json.loads(out)["processes"]
    assert len(processes) == 3, processes
    line = str(textwrap.dedent(MP).splitlines().index('    print("child", kind)') + 1)
    for p in processes[1:]:
        assert _counts(tmp_path / "x.wt", p["process"])["lines"][str(prog.resolve())][line] == 1, p
