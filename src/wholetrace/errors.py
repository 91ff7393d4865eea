"""The one exception hierarchy of wholetrace; every message is one line for the user."""

#: Longest message shown to a user (the CLI cuts longer ones in the middle).
MAX_MESSAGE = 200


def short_message(exc: BaseException | str, limit: int = MAX_MESSAGE) -> str:
    """``str(exc)`` as one line of at most ``limit`` characters (control characters escaped,
    the middle of a long message elided), whatever the exception quotes."""
    text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in str(exc))
    if len(text) <= limit:
        return text
    head = (limit - 5) * 2 // 3
    return text[:head] + " ... " + text[len(text) - (limit - 5 - head):]


class WholetraceError(Exception):
    """Base of every error wholetrace reports to a user (exit status 2 from the CLI)."""

    exit_code = 2


class UsageError(WholetraceError):
    """The command line or an argument is wrong."""


class StoreError(WholetraceError):
    """A .wt file cannot be opened or read (missing, truncated, corrupt, foreign, newer)."""


class InstrumentError(WholetraceError):
    """Source code could not be analysed or instrumented."""


class GrammarError(WholetraceError):
    """A grammar is malformed or its encoding cannot be decoded."""


class InternalError(WholetraceError):
    """An invariant of wholetrace itself does not hold (a bug: please report it)."""

    exit_code = 3


class StreamError(WholetraceError):
    """A compressed stream (``wholetrace.streams``) is malformed, truncated or corrupt."""
