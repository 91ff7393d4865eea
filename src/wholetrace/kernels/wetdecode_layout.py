"""Codes and table columns of the WET decoding kernel: operations, location kinds, events, tables, counters."""

# Split from ``kernels.wetdecode`` (wave 18), whose header describes the pass, its tables and its
# buffers; ``kernels.wetdecode`` re-exports every public name and keys the numba cache of all
# its parts on all of them (``_jit.cache_depends``).

from __future__ import annotations

# access-log operations and location kinds (the same numbers as wet/decode.py); NS: an entry of
# a class namespace as the class statement ends (``kernels/wetdeps.py``)
USE, DEF, WUSE, WDEF, NS = 0, 1, 2, 3, 4
LOCAL, GLOBAL, ATTR, ELEM, WHOLE, RET = 0, 1, 2, 3, 4, 5
STMT, RESUME = 0, 1
OBJ = 8
# name modes of a use/def entry
M_LOCAL, M_CLOSURE, M_GLOBAL = 0, 1, 2
# slot kinds and ops
K_DEF, K_OBJ, K_KEY = 0, 1, 2
OP_READ, OP_WRITE, OP_RW, OP_DEL, OP_READBACK, OP_BIND = 0, 1, 2, 3, 4, 5
# effects of a method of a built-in mutable type
E_UNKNOWN, E_DEF, E_USE = 0, 1, 2
# events
LEAVE, EXC, ENTER_BASE = -1, -2, 8
ENTRY = 0
# function table columns
F_SBASE, F_BBASE, F_NBLOCKS, F_ENTRYB, F_GEN, F_CLASS, F_MODULE, F_KNOWN = range(8)
# block table columns: statements [bs0, bs1) of bs_stmt, predicates [cd0, cd1) of cd_pred
B_BS0, B_BS1, B_CD0, B_CD1, B_DYN = range(5)
# statement table columns: [u0,u1) uses, [d0,d1) defs, [k0,k1) kills in the name-entry table
S_BLOCK, S_POS, S_AUG, S_RETURN, S_SUSP, S_UNKNOWN, S_U0, S_U1, S_D0, S_D1, S_K0, S_K1 = range(12)
# slot table columns: [n0, n1) names in the name-entry table
SL_FID, SL_SID, SL_KIND, SL_OP, SL_RET, SL_SUB, SL_WHAT, SL_N0, SL_N1 = range(9)
# activation columns
A_FRAME, A_AR, A_ENTRY, A_FID, A_BLOCK, A_BS0, A_BSN, A_NXT, A_CUR, A_CURSID, A_SUBS, A_SUBOP, \
    A_EXC, A_FIRST, A_B0, A_I0, A_P0, A_C0 = range(18)
N_ACOLS = 18
# frame columns
FR_ENTRY, FR_SUSP, FR_BELOW = range(3)
# counters
C_INST, C_ACC, C_CALLS, C_LOCS, C_KEYS, C_UNKNOWN, C_FRAMES, C_ACTS, C_BINDS, C_IMPL, C_PREC, C_CLS, \
    C_PM, C_IM, C_S, C_I, C_R, C_DEPTH = range(18)
N_COUNTERS = 18
# status
OK, BAD_FUNCTION, BAD_BLOCK, BAD_STATEMENT, NEED_ROOM = 0, 1, 2, 3, 4
