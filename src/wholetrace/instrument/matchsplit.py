"""The ``match`` statement's probes: a split before each case test that starts a block (a mixin of ``rewrite._FunctionRewriter``)."""

from __future__ import annotations

import ast

from wholetrace.instrument.emit import MATCH, VARS, artificial, ast_call, ast_const, ast_name, locate, rt

TYPE_CHECKING = False   # typing is not imported at start-up (docs/design.md, "Start-up of record, wave 10")
if TYPE_CHECKING:   # pragma: no cover
    from wholetrace.instrument.cfg import CFG, Stmt
    from wholetrace.instrument.emit import Emitter


class MatchRewriter:
    """``match``: probes before the case tests that start blocks (``_FunctionRewriter``'s)."""

    if TYPE_CHECKING:   # pragma: no cover - the rewriter's own
        cfg: CFG
        em: Emitter

        def probe_for(self, st: Stmt | None, like: ast.AST) -> list[ast.stmt]: ...
        def starts_block(self, st: Stmt | None) -> bool: ...
        def expr(self, e: ast.expr) -> ast.expr: ...
        def arm(self, st: Stmt | None, arm: str, body: list[ast.stmt], like: ast.AST) -> list[ast.stmt]: ...
        def body(self, stmts: list[ast.stmt]) -> list[ast.stmt]: ...
        def site_values(self, kind: str, sid: int, arm: str = "") -> list[int]: ...
        def block_values(self, b: int) -> list[int]: ...

    def _match(self, s: ast.Match) -> list[ast.stmt]:
        m = self.cfg.stmt_at(s, "match")
        pre = self.probe_for(m, s)
        s.subject = self.expr(s.subject)
        groups: list[list[ast.match_case]] = [[]]
        heads: list[Stmt | None] = [None]
        tails: list[list[int]] = [[]]       # probes of the false edge that leads to each group
        last_false: list[int] = []
        user_cases = list(s.cases)
        for case in s.cases:
            st = self.cfg.stmt_at(case, "case")
            if self.starts_block(st):
                groups.append([])
                heads.append(st)
                tails.append(last_false)
            if case.guard is not None:
                case.guard = self.expr(case.guard)
            case.body = self.arm(st, "body", self.body(case.body), case.pattern)
            groups[-1].append(case)
            last_false = self.site_values("arm", st.id, "next") if st is not None else []
        if last_false:  # the last case can fail: its false edge leads past the match
            groups[-1].append(self._wildcard(self.em.stmts(last_false, None), groups[-1][-1]))
        if len(groups) == 1:
            s.cases = groups[0]
            return pre + [s]
        if self.cfg.kind == "class":
            s.cases = self._guarded_groups(groups, heads, tails)
            return pre + [s]
        # Split before every case test that starts a block: ``case _:`` + probe + nested match
        # on the saved subject, so the probe runs before that pattern is tried.
        tmp = f"{MATCH}{m.id if m else 0}"
        if self.em.in_class:   # before the groups are copied into the nested matches
            self._drop_subject(tmp, user_cases, groups[-1])
        nested: list[ast.stmt] = []
        for cases, head, into in zip(reversed(groups[1:]), reversed(heads[1:]), reversed(tails[1:])):
            assert head is not None
            cases = cases + ([self._wildcard(nested, cases[-1])] if nested else [])
            node = ast.copy_location(ast.Match(artificial(ast_name(tmp)), cases), cases[0].pattern)
            like = cases[0].pattern
            nested = self.em.stmts(into, like) + self.em.stmts(self.block_values(head.block), like) + [node]
        s.cases = groups[0] + [self._wildcard(nested, groups[0][-1] if groups[0] else s.cases[0])]
        s.subject = ast.copy_location(ast.NamedExpr(locate(ast_name(tmp, True), s.subject), s.subject), s.subject)
        return pre + [s]

    def _guarded_groups(self, groups: list[list[ast.match_case]], heads: list[Stmt | None],
                        tails: list[list[int]]) -> list[ast.match_case]:
        """A class body's ``match`` stays one statement: the subject stays on the stack, where
        the namespace (an ``Enum``'s, a ``__prepare__`` mapping) cannot see it (a saved name
        made ``EnumType`` raise ``KeyError: 'wt.m1'``: explore23 HIGH-4).  The probes before a
        group run in the guard of a wildcard case that never matches (probes are false):
        ``case _ if probe or False: pass``, at the position of the group's first pattern."""
        out = list(groups[0])
        for cases, head, into in zip(groups[1:], heads[1:], tails[1:]):
            assert head is not None
            probes = [self.em.append(v) for v in into + self.block_values(head.block)]
            if probes:
                guard = locate(ast.BoolOp(ast.Or(), probes + [ast_const(False)]), cases[0].pattern)
                never = locate(ast.MatchAs(None, None), cases[0].pattern)
                out.append(ast.match_case(never, guard, [artificial(ast.Pass())]))  # type: ignore[arg-type]
            out.extend(cases)
        return out

    @staticmethod
    def _drop_subject(tmp: str, user_cases: list[ast.match_case], innermost: list[ast.match_case]) -> None:
        """Module and class namespaces are the program's: the saved subject goes as soon as a
        case matches, or no case did (not when a guard raises)."""
        def drop() -> ast.stmt:
            call = ast.Call(ast.Attribute(ast_call(rt(VARS)), "pop", ast.Load()), [ast_const(tmp), ast_const(None)], [])
            return artificial(ast.Expr(call))  # type: ignore[return-value]

        for case in user_cases:
            case.body.insert(0, drop())
        last = innermost[-1]
        if last in user_cases and not (isinstance(last.pattern, ast.MatchAs) and last.pattern.pattern is None
                                       and last.guard is None):
            innermost.append(ast.match_case(artificial(ast.MatchAs(None, None)), None, [drop()]))  # type: ignore[arg-type]
        elif last not in user_cases:
            last.body.insert(0, drop())

    @staticmethod
    def _wildcard(body: list[ast.stmt], like: ast.match_case) -> ast.match_case:
        pat = locate(ast.MatchAs(None, None), like.pattern if isinstance(like, ast.match_case) else like)
        return ast.match_case(pat, None, body)  # type: ignore[arg-type]
