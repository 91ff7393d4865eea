"""The report's JSON writer is byte for byte ``json.dumps(indent=1)`` (oracle: the standard library)."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from wholetrace.render.counts import dump_json

LEAF = st.none() | st.booleans() | st.integers(-10**20, 10**20) | st.text() | st.floats(allow_nan=False)
DOC = st.recursive(LEAF, lambda inner: st.lists(inner, max_size=4)
                   | st.dictionaries(st.text() | st.integers() | st.booleans(), inner, max_size=4), max_leaves=30)


@settings(max_examples=500, deadline=None)
@given(DOC)
def test_same_text_as_the_standard_library(doc: object) -> None:
    assert dump_json(doc) == json.dumps(doc, indent=1)
