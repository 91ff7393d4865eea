"""Run the compatibility test subset on every other supported Python found on this machine.

``make test`` runs the whole suite on the interpreter of ``.venv`` (3.11), then this script:
for each supported version other than the running one it looks for an interpreter (on
``PATH``, then under pyenv's root, then ``/usr/bin``), makes ``.venv-X.Y`` with the dev extras
and runs ``pytest -m compat`` there.  A version that is not installed is reported and
skipped; a version that is installed but fails makes the run fail.  Each run's last line gives
its CPU seconds.

    python tools/compat.py [--list] [--versions 3.12,3.13] [pytest args...]

``make test`` runs the subsets beside the 3.11 suite instead of after it: ``--start`` launches
one background run per interpreter found (one pytest process each, log and exit status in
``.compat/``), ``--wait`` waits for them, prints their logs and fails if any failed.  The
interpreters then share the two cores with the 3.11 suite rather than each leaving a core idle
while its venv is made and while its last tests finish.
"""

from __future__ import annotations

import argparse
import glob
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RUNS = REPO / ".compat"
SUPPORTED = ("3.11", "3.12", "3.13")


def _version_of(python: str) -> str | None:
    """``X.Y`` of a working interpreter, or None (pyenv shims of absent versions fail)."""
    try:
        out = subprocess.run([python, "-c", "import sys; print('%d.%d' % sys.version_info[:2], "
                              "getattr(sys, '_is_gil_enabled', lambda: True)())"],
                             capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if out.returncode != 0:
        return None
    version, gil = out.stdout.split()
    return version if gil == "True" else None          # free-threaded builds: not tested here


def find_python(version: str) -> str | None:
    """An interpreter for ``version`` (``"3.12"``), or None."""
    candidates = [shutil.which(f"python{version}")]
    root = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
    candidates += sorted(glob.glob(os.path.join(root, "versions", f"{version}.*", "bin", f"python{version}")),
                         reverse=True)
    candidates += [f"/usr/bin/python{version}", f"/usr/local/bin/python{version}"]
    for c in candidates:
        if c and os.path.exists(c) and _version_of(c) == version:
            return c
    return None


def ensure_venv(python: str, version: str) -> Path:
    """``.venv-X.Y`` with wholetrace and its dev extras, (re)installed when its packaging changes."""
    venv = REPO / f".venv-{version}"
    py = venv / "bin" / "python"
    stamp = venv / ".installed-dev"
    if not py.exists():
        subprocess.run([python, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(py), "-m", "pip", "install", "-q", "--upgrade", "pip"], check=True)
    newest = max((REPO / f).stat().st_mtime for f in ("pyproject.toml", "setup.py", "zz_wholetrace.pth"))
    if not stamp.exists() or stamp.stat().st_mtime < newest:
        subprocess.run([str(py), "-m", "pip", "install", "-q", "-e", f"{REPO}[dev]"], check=True, cwd=REPO)
        stamp.touch()
    return py


def run_subset(version: str, python: str, pytest_args: list[str], workers: int) -> int:
    """Make ``.venv-X.Y`` and run the compatibility subset there; its exit status."""
    print(f"compat: Python {version} ({python}): `pytest -m compat`", flush=True)
    t0, start_cpu = time.perf_counter(), _children_cpu()
    py = ensure_venv(python, version)
    # Byte-compile wholetrace for this interpreter: the tests' subprocesses run with
    # PYTHONDONTWRITEBYTECODE, so they would otherwise compile all of it in every recording.
    subprocess.run([str(py), "-m", "compileall", "-q", str(REPO / "src")], check=True)
    cmd = [str(py), "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "compat and not slow",
           *(["-n", str(workers)] if workers > 1 else []), *pytest_args, "tests"]
    cpu0 = _children_cpu()
    rc = subprocess.run(cmd, cwd=REPO, env=dict(os.environ, WHOLETRACE_COMPAT="1")).returncode
    # CPU seconds of the venv/install and of pytest: `make test` starts these runs in the
    # background, so the shell's `time` around it never counts them.
    print(f"compat: Python {version}: {'passed' if rc == 0 else 'FAILED'} in {time.perf_counter() - t0:.0f} s "
          f"(CPU: venv and install {cpu0 - start_cpu:.0f} s, pytest {_children_cpu() - cpu0:.0f} s)", flush=True)
    return rc


def _children_cpu() -> float:
    """User + system CPU seconds of this process's waited-for children so far."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def start(found: dict[str, str], pytest_args: list[str]) -> int:
    """Launch one background run per interpreter (``--one``), output in ``.compat/X.Y.log``."""
    RUNS.mkdir(exist_ok=True)
    for old in RUNS.glob("*"):
        old.unlink()
    for version in found:
        log = open(RUNS / f"{version}.log", "wb")
        proc = subprocess.Popen([sys.executable, __file__, "--one", version, *pytest_args], cwd=REPO,
                                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        log.close()
        (RUNS / f"{version}.pid").write_text(str(proc.pid))
        print(f"compat: Python {version}: subset started in the background (.compat/{version}.log)", flush=True)
    return 0


def _alive(pid: int) -> bool:
    """Whether process ``pid`` still exists (the runs ``--start`` launched outlive it and are
    reaped by init, so an ended run does not linger as a zombie)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def wait() -> int:
    """Wait for the runs ``--start`` launched; print each log; 1 if any failed or vanished."""
    failed: list[str] = []
    for log in sorted(RUNS.glob("*.log")) if RUNS.is_dir() else []:
        version = log.stem
        status = RUNS / f"{version}.rc"
        pid = int((RUNS / f"{version}.pid").read_text())
        while not status.exists() and _alive(pid):
            time.sleep(1)
        print(f"----- compat: Python {version} -----", flush=True)
        sys.stdout.write(log.read_text(errors="replace"))
        if not status.exists() or status.read_text().strip() != "0":
            failed.append(version)
    if failed:
        print(f"compat: failed on Python {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--versions", default=",".join(SUPPORTED),
                    help="comma-separated X.Y versions to consider (default: all supported)")
    ap.add_argument("--list", action="store_true", help="only print the interpreters found")
    ap.add_argument("--start", action="store_true", help="start the subsets in the background and return")
    ap.add_argument("--wait", action="store_true", help="wait for the subsets --start launched")
    ap.add_argument("--one", metavar="X.Y", help=argparse.SUPPRESS)
    args, pytest_args = ap.parse_known_args(argv)
    if args.wait:
        return wait()
    if args.one:
        rc = 1
        try:
            rc = run_subset(args.one, find_python(args.one) or "", pytest_args, workers=1)
        finally:
            (RUNS / f"{args.one}.rc").write_text(str(rc))
        return rc
    here = "%d.%d" % sys.version_info[:2]
    found: dict[str, str] = {}
    for version in args.versions.split(","):
        if version == here and not args.list:
            continue
        python = find_python(version)
        if args.list:
            print(f"{version}: {python or 'not found'}")
        elif python is None:
            print(f"compat: Python {version} not found; its subset is skipped", flush=True)
        else:
            found[version] = python
    if args.list:
        return 0
    if args.start:
        return start(found, pytest_args)
    failed = [v for v, python in found.items() if run_subset(v, python, pytest_args, workers=2) != 0]
    if failed:
        print(f"compat: failed on Python {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
