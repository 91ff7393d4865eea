"""Shipped code's module/class bodies and generators run as plain anywhere, count exactly, and carry no run state (review24b, wave 24)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from wtutil import cli_in_process, run_plain, run_recorded

pytest.importorskip("cloudpickle")

# Class bodies (one nested in another) and a generator whose loop is wrapped (its continue
# crosses a finally): their probes fetch the stream at each step, in the recording and in a
# plain child.  The payload's size is printed before and after the run raised and handled
# exceptions in a class body and at module level: plain's does not change.
MAIN = '''
    import subprocess, sys
    import cloudpickle

    def withclass(x):
        class K:
            try:
                v = 1 // x
            except ZeroDivisionError:
                v = -1
            class Inner:
                w = 2 if x else 3
        return K.v, K.Inner.w

    def gen(n):
        for i in range(n):
            try:
                if i % 2:
                    continue
            finally:
                pass
            yield i

    fs = (withclass, gen)
    before = len(cloudpickle.dumps(fs))
    w, g = cloudpickle.loads(cloudpickle.dumps(fs))
    print(w(0), w(1), w(0), list(g(5)))
    for i in range(40):
        try:
            1 // (i % 2)
        except ZeroDivisionError:
            pass
    print(len(cloudpickle.dumps(fs)) == before)
    child = "import cloudpickle, sys; w, g = cloudpickle.loads(sys.stdin.buffer.read()); print(w(0), w(1), list(g(5)))"
    r = subprocess.run([sys.executable, "-c", child], input=cloudpickle.dumps(fs), capture_output=True)
    print(r.returncode, r.stdout.decode().strip(), r.stderr.decode())
'''


def _counts(wt: Path) -> dict[str, object]:
    status, out, err = cli_in_process("counts", "--format", "json", str(wt))
    assert status == 0, err
    return json.loads(out)


@pytest.mark.parametrize("mode", ("blocks", "witness", "path", "count"))
def test_shipped_class_bodies_and_generators_run_as_plain(tmp_path: Path, mode: str) -> None:
    """Before: the plain child raised ``TypeError: 'NoneType' object is not callable`` in the
    trace modes (the inert stream fetch), and the payload grew with the run (its size changed)."""
    main = tmp_path / "main.py"
    main.write_text(textwrap.dedent(MAIN))
    plain = run_plain(main)
    assert plain.stdout == "(-1, 3) (1, 2) (-1, 3) [0, 2, 4]\nTrue\n0 (-1, 3) (1, 2) [0, 2, 4] \n", plain
    rec = run_recorded(main, tmp_path / "x.wt", mode=mode)
    assert (rec.returncode, rec.stdout, rec.stderr) == (plain.returncode, plain.stdout, plain.stderr)


CLASS_BODY = '''
    import cloudpickle

    def withclass(x):
        class K:
            try:
                v = 1 // x
            except ZeroDivisionError:
                v = -1
        return K.v

    g = cloudpickle.loads(cloudpickle.dumps(withclass))
    print(g(0), g(1), g(0))
'''


def test_count_mode_counts_a_shipped_class_bodys_handler(tmp_path: Path) -> None:
    """Count mode's counts equal blocks' (the oracle: each block recorded as it runs).  Before:
    the copy's class body counted 1 call of 3 and no handler run (its edges went to a copy)."""
    main = tmp_path / "main.py"
    main.write_text(textwrap.dedent(CLASS_BODY))
    found = {}
    for mode in ("blocks", "count"):
        assert run_recorded(main, tmp_path / f"{mode}.wt", mode=mode).stdout == "-1 1 -1\n"
        found[mode] = _counts(tmp_path / f"{mode}.wt")
    assert found["count"] == found["blocks"]
    body = [f for f in found["count"]["functions"] if f["name"] == "withclass.<locals>.K"]   # type: ignore[index]
    assert [f["calls"] for f in body] == [3] and found["count"]["lines"][str(main)]["9"] == 2   # type: ignore[index]


LOADERS = '''
    import copyreg, asyncio, cloudpickle
    for m in (copyreg, asyncio, cloudpickle):
        print(m.__name__, type(m.__loader__).__name__, type(m.__spec__.loader).__name__, m.__loader__ is m.__spec__.loader)
'''


def test_hooked_modules_keep_their_plain_loader(tmp_path: Path) -> None:
    """Before: ``copyreg``'s and ``asyncio``'s ``__loader__``/``__spec__.loader`` were the
    finder's ``_PostImportLoader`` (its after-import hooks)."""
    main = tmp_path / "main.py"
    main.write_text(textwrap.dedent(LOADERS))
    plain = run_plain(main)
    assert plain.returncode == 0 and "asyncio SourceFileLoader SourceFileLoader True" in plain.stdout, plain
    rec = run_recorded(main, tmp_path / "x.wt", mode="witness")
    assert (rec.returncode, rec.stdout, rec.stderr) == (plain.returncode, plain.stdout, plain.stderr)


OWN_VAR = '''
    import contextvars, copy, copyreg, pickle, traceback
    import cloudpickle
    v = contextvars.ContextVar("mine")
    for proto in range(6):
        for dumps in (pickle.dumps, pickle._dumps):
            try:
                dumps(v, protocol=proto)
            except TypeError as e:
                print(proto, "".join(traceback.format_exception(e)))
    for fn in (copy.copy, copy.deepcopy):
        try:
            fn(v)
        except TypeError as e:
            print("".join(traceback.format_exception(e)))
    print(contextvars.ContextVar in copyreg.dispatch_table, sorted(t.__name__ for t in copyreg.dispatch_table))
'''


def test_plain_pickle_and_copy_of_a_context_variable_are_plain(tmp_path: Path) -> None:
    """Only the picklers of code (cloudpickle's, dill's) learn the recording's context variables:
    ``copyreg.dispatch_table`` and plain ``pickle``/``copy`` tracebacks are plain's at every
    protocol.  Before: an entry in ``copyreg.dispatch_table``, other lines and messages."""
    main = tmp_path / "main.py"
    main.write_text(textwrap.dedent(OWN_VAR))
    plain = run_plain(main)
    assert plain.returncode == 0 and "\nFalse [" in plain.stdout, plain
    rec = run_recorded(main, tmp_path / "x.wt", mode="witness")
    assert (rec.returncode, rec.stdout, rec.stderr) == (plain.returncode, plain.stdout, plain.stderr)


WRITER = '''
    import cloudpickle, sys
    def f(x):
        if x > 0:
            return x + 1
        return -x
    with open(sys.argv[1], "wb") as fh:
        cloudpickle.dump(f, fh)
'''

READER = '''
    import cloudpickle, os, sys
    with open(sys.argv[1], "rb") as fh:
        data = fh.read()
    g = cloudpickle.loads(data)   # another recording's code: its calls are not recorded here
    print("parent", g(1), flush=True)
    pid = os.fork()
    if pid == 0:
        h = cloudpickle.loads(data)
        print("child", h(2), h(-1), flush=True)
        raise SystemExit(0)
    os.waitpid(pid, 0)
'''


def test_foreign_code_in_a_recorded_process_and_its_fork_child_is_noted(tmp_path: Path) -> None:
    """A recorded process that runs another recording's code is listed as partly recorded (the
    summary does not count it as a process not recorded), and so is its fork child, which loads
    the code again.  Before: "not recorded: pid <root>" and no note for the child (``NOTED``)."""
    (tmp_path / "writer.py").write_text(textwrap.dedent(WRITER))
    (tmp_path / "reader.py").write_text(textwrap.dedent(READER))
    pkl = str(tmp_path / "f.pkl")
    assert run_recorded(tmp_path / "writer.py", tmp_path / "w.wt", pkl, mode="count").returncode == 0
    rec = run_recorded(tmp_path / "reader.py", tmp_path / "r.wt", pkl, mode="count", quiet=False)
    assert rec.stdout == "parent 2\nchild 3 1\n" and "not recorded" not in rec.stderr, rec
    status, out, err = cli_in_process("info", str(tmp_path / "r.wt"))
    notes = [line for line in out.splitlines() if "pickled by value" in line]
    assert len(notes) == 2 and all(line.startswith("partly recorded: pid ") for line in notes), out
