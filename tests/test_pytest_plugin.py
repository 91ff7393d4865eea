"""`pytest --wholetrace` and `wholetrace record -m pytest` on a small project (a package, tests
with rewritten asserts, fixtures, failing tests).  Oracles: the plain pytest run (outcomes and
assertion messages, from its JUnit XML), the `blocks` recording (counts of every other mode),
and counts worked out by hand."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from wtutil import ENV, assert_same_counts, profiles

FILES = {
    "pytest.ini": "[pytest]\n",
    "calc/__init__.py": '"""A tiny calculator."""\nfrom calc.ops import add, divide, mean\n',
    "calc/ops.py": '''
        def add(a, b):
            return a + b


        def divide(a, b):
            if b == 0:
                raise ZeroDivisionError("b is zero")
            return a / b


        def mean(xs):
            total = 0
            for x in xs:
                total = add(total, x)
            return divide(total, len(xs))


        class Account:
            def __init__(self, balance=0):
                self.balance = balance

            @property
            def overdrawn(self):
                return self.balance < 0

            def withdraw(self, amount):
                if amount > self.balance:
                    raise ValueError(f"cannot withdraw {amount}")
                self.balance -= amount
                return self.balance
    ''',
    "tests/conftest.py": '''
        import pytest
        from calc.ops import Account


        @pytest.fixture
        def account():
            acc = Account(100)
            yield acc
            acc.balance = 0


        @pytest.fixture(scope="session")
        def numbers():
            return [1, 2, 3, 4]
    ''',
    "tests/test_calc.py": '''
        import pytest
        from calc import add, divide, mean


        def test_add():
            assert add(2, 3) == 5


        def test_mean(numbers):
            assert mean(numbers) == 2.5


        @pytest.mark.parametrize("a,b,expected", [(6, 3, 2), (1, 4, 0.25), (5, 0, None)])
        def test_divide(a, b, expected):
            if b == 0:
                with pytest.raises(ZeroDivisionError, match="zero"):
                    divide(a, b)
            else:
                assert divide(a, b) == expected


        def test_mean_wrong(numbers):
            result = mean(numbers)
            assert result == 3, "the mean is off"


        def test_withdraw(account):
            assert account.withdraw(30) == 70
            with pytest.raises(ValueError):
                account.withdraw(500)
            assert not account.overdrawn


        def test_dict_compare():
            got = {"a": add(1, 1), "b": [1, 2, 3]}
            assert got == {"a": 2, "b": [1, 2, 4]}


        def test_nested_call_message():
            assert divide(add(1, 2), 3) > 1
    ''',
}


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("proj")
    for name, text in FILES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(textwrap.dedent(text).lstrip())
    return root


def pytest_run(root: Path, name: str, *args: str, wholetrace: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    """``[python -m wholetrace ...] python -m pytest ... --junitxml=<name>.xml`` in the project."""
    head = [sys.executable, "-m", "wholetrace", *wholetrace, "-m", "pytest"] if wholetrace else [sys.executable, "-m", "pytest"]
    cmd = [*head, "-p", "no:cacheprovider", "-q", f"--junitxml={name}.xml", *args]
    return subprocess.run(cmd, cwd=root, env=ENV, capture_output=True, text=True, timeout=600)


def outcomes(xml: Path) -> list[tuple[str, str, str, str]]:
    """(test, outcome, message, details) of every test case of a JUnit XML report."""
    out = []
    for case in ET.parse(xml).getroot().iter("testcase"):
        kids = [k for k in case if k.tag in ("failure", "error", "skipped")]
        kind = kids[0].tag if kids else "passed"
        msg = kids[0].get("message", "") if kids else ""
        out.append((f"{case.get('classname')}::{case.get('name')}", kind, msg, kids[0].text or "" if kids else ""))
    return out


@pytest.fixture(scope="module")
def runs(project: Path) -> dict[str, subprocess.CompletedProcess]:
    got = {"plain": pytest_run(project, "plain")}
    for mode in ("blocks", "count", "witness"):
        got[mode] = pytest_run(project, mode, f"--wholetrace={mode}.wt", f"--wholetrace-mode={mode}")
    return got


def test_results_and_assertion_messages_match_a_plain_run(project: Path, runs: dict) -> None:
    plain = outcomes(project / "plain.xml")
    assert [o[1] for o in plain].count("failure") == 3 and len(plain) == 9
    assert any("assert 2.5 == 3" in o[3] for o in plain)                   # rewritten asserts explain
    assert any("Differing items" in o[3] for o in plain)
    assert any("where 1.0 = divide(3, 3)" in o[3] and "where 3 = add(1, 2)" in o[3] for o in plain)
    for mode in ("blocks", "count", "witness"):
        assert runs[mode].returncode == runs["plain"].returncode == 1, runs[mode].stderr
        assert outcomes(project / f"{mode}.xml") == plain, mode
        summary = [ln for ln in runs[mode].stdout.splitlines() if ln.startswith("wholetrace:")]
        assert len(summary) == 1 and summary[0].startswith(f"wholetrace: recorded ") and f"-> {mode}.wt" in summary[0]
        assert "wholetrace" not in runs[mode].stderr


def test_counts_equal_the_blocks_recording(project: Path, runs: dict) -> None:
    want = profiles(project / "blocks.wt")
    names = {q for (_f, q, _l) in want}
    assert {"test_mean_wrong", "test_dict_compare", "account", "numbers", "<module>", "mean", "Account.withdraw"} <= names
    for mode in ("count", "witness"):
        assert_same_counts(want, profiles(project / f"{mode}.wt"), mode)
    by_name = {(Path(f).name, q): p for (f, q, _l), p in want.items()}
    add = by_name[("ops.py", "add")]
    assert add.calls == 2 * 4 + 1 + 1 + 1          # mean twice over 4 numbers, test_add, test_dict_compare, nested
    assert by_name[("ops.py", "divide")].calls == 2 + 3 + 1
    assert by_name[("conftest.py", "account")].calls == 1 and by_name[("conftest.py", "numbers")].calls == 1


def test_record_m_pytest_instruments_the_project(project: Path, runs: dict) -> None:
    run = pytest_run(project, "record", wholetrace=("record", "--mode", "count", "-q", "-o", "record.wt"))
    assert run.returncode == 1, run.stderr
    assert outcomes(project / "record.xml") == outcomes(project / "plain.xml")
    assert "warning" not in run.stdout.lower().split("short test summary")[0]
    got = {k: p for k, p in profiles(project / "record.wt").items() if str(project) in k[0]}
    want = profiles(project / "blocks.wt")
    assert_same_counts(want, got, "record -m pytest")


def test_python_m_wholetrace_is_the_command() -> None:
    run = subprocess.run([sys.executable, "-m", "wholetrace", "--version"], capture_output=True, text=True, env=ENV)
    assert run.returncode == 0 and run.stdout.startswith("wholetrace ")
    run = subprocess.run([sys.executable, "-m", "wholetrace", "info", "/nonexistent.wt"], capture_output=True,
                         text=True, env=ENV)
    assert run.returncode == 2 and run.stderr.startswith("wholetrace: error: cannot open recording")
