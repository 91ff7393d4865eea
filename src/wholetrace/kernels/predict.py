"""Kernels: bidirectional value-predictor codecs (FCM, DFCM, last-n value, last-n stride).

After X. Zhang and R. Gupta, "Whole Execution Traces and Their Applications", ACM
Transactions on Architecture and Code Optimization 2(3), 2005, section 4 (bidirectional
FCM), with the predictors of Y. Sazeides and J. E. Smith (FCM, 1997), B. Goeman, H.
Vandierendonck and K. De Bosschere (differential FCM, HPCA 2001) and M. Burtscher and
N. B. Jeeradit (last-n value and stride, 2003).  Spec: ``shared/specs/wet.md`` section 3.

A segment of ``L`` values is kept as a window ``cx`` of ``c`` raw values at an internal
position ``i`` (``cx = v[i:i+c]``) between two bit stacks (described below):

* F holds ``v[0:i]`` compressed *forward* (``j = 0, 1, ...``), each value predicted from its
  *right* context ``v[j+1:j+1+c]`` with table ``ft``; it is decoded by popping, backward.
* B holds ``v[i+c:L]`` compressed *backward* (``j = L-1, L-2, ...``), each value predicted from
  its *left* context ``v[j-c:j]`` with table ``bt``; it is decoded by popping, forward.

A forward step pops ``v[i+c]`` from B and pushes ``v[i]`` onto F; a backward step mirrors it.
Both cost the same.  Undo rule (the correction of spec section 3.4; the paper's Figure 9
loses data): compressing a miss overwrites a table entry and the record keeps the *evicted*
entry, so decoding reads the value from the table and puts the evicted entry back.  Hence
the invariant: at internal position ``i`` the state (canonical F bits, ``ft``, B bits,
``bt``, ``cx``) is the forward compression of ``v[0:i]`` from an empty ``ft`` and the
backward compression of ``v[L-1:i+c-1:-1]`` from an empty ``bt``, whatever walk led there.

Predictions (``near(d)`` is the ``d``-th nearest context value on the context side):

* FCM    table[hash(near(0..n-1))] is the value; miss payload zigzag(evicted - value)
* DFCM   table[hash(strides near(d) - near(d+1), d < n)] is the stride ``value - near(0)``
* LASTV  hit idx ``d``: value == near(d), ``d < n``; miss payload zigzag(value - near(0))
* LASTS  hit idx ``d``: value - near(0) == near(d) - near(d+1); miss payload relative to d=0

Context sizes: ``c = n`` (FCM, LASTV) or ``n + 1`` (DFCM, LASTS).  A stream is cut into
segments of at most ``K`` values, each with fresh tables and stored *parked* at its middle
(``mid``), so reaching any position of a segment costs at most about ``K/2`` steps.

Bit stacks.  A *bit stack* is a ``uint64`` array read as a string of bits, bit ``p`` at
word ``p >> 6``, bit ``p & 63`` (least significant first), and a height ``top``: the bits ``[0, top)`` are
the records, anything at or above ``top`` is garbage.  Records are pushed and popped at the
top, so every field is written bottom-up and read top-down.  Three records exist:

* ``1`` + idx                  one hit (``idx`` has ``ib`` bits; 0 bits for FCM and DFCM)
* ``01`` + idx + gamma(c-T+1)  a run of ``c >= T`` hits with the same idx
* ``00`` + uint(z)             one miss; ``z`` is the predictor's 64-bit miss payload

read from the top (the first bit named is the highest one).  A maximal run of ``c`` hits
with the same idx is one ``01`` record if ``c >= T`` and ``c`` single records otherwise, so
the bits of a stack depend only on the sequence of predictions it holds (the *canonical*
form).  ``gamma(x)``, ``x >= 1``: ``N`` zeros, then the ``N + 1`` bits of ``x`` (read as one
``2N + 1``-bit field it is ``x`` itself).  ``uint(z)``: ``gamma(L + 1)`` with ``L`` the bit
length of ``z``, then the low ``L - 1`` bits of ``z`` (its leading one is implied).

The top record of a stack is kept *unpacked* in registers (``st[o + KIND/IDX/CNT]``, payload
``pay[pw]``): pushing a hit onto a hit run and popping one off it only changes a counter; a
record is packed (``flush``) when another one is pushed over it and unpacked when the one
above it is popped.  Invariant: a stack with records always has its top record unpacked.

Every read checks ``top`` and every write checks the capacity ``cap`` (bits): on corrupt
bits a kernel returns ``ERR_CORRUPT`` or ``ERR_FULL`` instead of touching memory it must not.

The kernels are in three parts since wave 18 (one concept each): ``predict_bits`` (the bit
stacks), ``predict_codec`` (the predictors, the steps of a segment, encoding and parks) and
``predict_cursor`` (a stored stream's two flat arrays and the cursor).  This module re-exports
every public name of them (callers use ``kernels.predict``).  numba's cache only notices edits
to the file that defines a kernel, and the parts inline each other's helpers and constants, so
every kernel of the three keys its cache on all three files (``_jit.cache_depends``).
"""

from __future__ import annotations

from wholetrace.kernels._jit import cache_depends
from wholetrace.kernels.predict_bits import (CNT, EMPTY, ERR_CORRUPT, ERR_FULL, ERR_RANGE, HIT, IDX,  # noqa: F401
                                             KIND, MAX_RECORD_BITS, MISS, TOP, U64, bitlen, canonical, flush,
                                             flush_slow, get_bits, get_gamma, get_uint, lead_zeros, pop, push,
                                             put_bits, put_gamma, put_uint, unpack, unpack_call, unpack_slow)
from wholetrace.kernels.predict_codec import (DFCM, FCM, G_BBITS, G_BCAP, G_BTCNT, G_BTOFF, G_BWORD,  # noqa: F401
                                              G_CXOFF, G_FBITS, G_FCAP, G_FTCNT, G_FTOFF, G_FWORD, G_LEN, G_MID,
                                              G_START, LASTS, LASTV, LEFT, N_PARAMS, N_SEGCOLS, N_STATE, OB, OF,
                                              P_C, P_FAM, P_IB, P_K, P_M, P_N, P_NSEG, P_RUN, P_SHIFT, RIGHT, S_I,
                                              S_P, S_SEG, compress, ctx_key, decode_segment, encode_segment,
                                              expand, goto, load_park, near, params_of, run, unzigzag, zigzag)
from wholetrace.kernels.predict_cursor import (BI_ENTRIES, BI_SEGS, BI_WORDS, cursor_seek,  # noqa: F401
                                               cursor_state, cursor_walk, decode_run, seek, unflatten, walk,
                                               work_size, work_views)

cache_depends(("wholetrace.kernels.predict_bits", "wholetrace.kernels.predict_codec",
               "wholetrace.kernels.predict_cursor"))
