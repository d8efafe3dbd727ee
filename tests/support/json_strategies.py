"""Hypothesis strategies for arbitrary JSON values (shared by the property-based tests)."""

from __future__ import annotations

from hypothesis import strategies as st

SAFE_INT = 2**53 - 1
json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(-SAFE_INT, SAFE_INT)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8)
)
json_values = st.recursive(
    json_scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4),
    max_leaves=25,
)
json_objects = st.dictionaries(st.text(max_size=6), json_values, max_size=5)
