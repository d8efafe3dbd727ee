"""Kill switches and version ranges: what they match, how they travel as JSON, and hostile text."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.json_strategies import json_objects
from tether_clr import (
    KillSwitch,
    RequestContext,
    SemVer,
    ToolBinding,
    ToolCandidate,
    ToolMetadata,
    ToolSchemaSnapshot,
    VersionRange,
    assemble_catalog,
    reauthorize,
)

ACME = RequestContext("acme", "alice")


def _v(text: str) -> SemVer:
    return SemVer.parse(text)


@pytest.mark.parametrize(
    ("text", "inside", "outside"),
    [
        ("1.2.0", ["1.2.0", "1.2.0+build"], ["1.2.1", "1.1.9"]),
        ("==1.2.0", ["1.2.0"], ["1.3.0"]),
        (" >= 1.0.0 , < 2.0.0 ", ["1.0.0", "1.9.9", "2.0.0-rc.1"], ["2.0.0", "0.9.0"]),  # pure precedence
        ("!=1.0.0", ["1.0.1"], ["1.0.0"]),
        ("<=1.0.0", ["1.0.0", "1.0.0-alpha"], ["1.0.1"]),
        (">1.0.0", ["1.0.1"], ["1.0.0"]),
    ],
)
def test_a_version_range_holds_exactly_the_versions_all_its_comparators_allow(
    text: str, inside: list[str], outside: list[str]
) -> None:
    found = VersionRange(text)
    assert all(_v(v) in found for v in inside)
    assert not any(_v(v) in found for v in outside)
    assert VersionRange(str(found)) == found  # the normalized text reads back the same


@pytest.mark.parametrize("text", ["", " ", ">=", "1.2", "abc", ">=1.0.0,", "=>1.0.0", ">=1.0.0 <2.0.0", "~1.0.0"])
def test_a_malformed_version_range_is_refused(text: str) -> None:
    with pytest.raises(ValueError):
        VersionRange(text)


@given(st.text(max_size=40))
@settings(max_examples=300, deadline=None)
def test_any_text_is_a_version_range_or_a_value_error(text: str) -> None:
    try:
        found = VersionRange(text)
    except ValueError:
        return
    assert VersionRange(found.text) == found


_VERSIONS = st.builds(lambda a, b, c: f"{a}.{b}.{c}", st.integers(0, 3), st.integers(0, 3), st.integers(0, 3))
_OPS = st.sampled_from(["==", "!=", ">=", "<=", ">", "<"])


@given(st.lists(st.tuples(_OPS, _VERSIONS), min_size=1, max_size=3), _VERSIONS)
@settings(max_examples=300, deadline=None)
def test_membership_is_the_conjunction_of_the_comparators_by_semver_order(
    comparators: list[tuple[str, str]], version: str
) -> None:
    found = VersionRange(",".join(op + v for op, v in comparators))
    key = _v(version).precedence
    expected = all(
        {"==": key == b, "!=": key != b, ">=": key >= b, "<=": key <= b, ">": key > b, "<": key < b}[op]
        for op, b in ((op, _v(v).precedence) for op, v in comparators)
    )
    assert (_v(version) in found) is expected


def test_a_switch_matches_when_every_field_it_gives_matches() -> None:
    switch = KillSwitch("leak", logical_name="refund", versions=">=2.0.0", tenant_id="acme", principal_id="alice")
    assert switch.matches("refund", _v("2.1.0"), ACME)
    assert not switch.matches("refund", _v("1.9.0"), ACME)
    assert not switch.matches("other", _v("2.1.0"), ACME)
    assert not switch.matches("refund", _v("2.1.0"), RequestContext("acme", "bob"))
    assert not switch.matches("refund", _v("2.1.0"), RequestContext("globex", "alice"))
    assert switch.matches("refund", _v("2.1.0"), None)  # no context to compare: fail closed
    assert KillSwitch("stop everything").matches("anything", _v("0.0.1"), ACME)


def test_a_switch_is_checked_when_built_and_travels_as_json() -> None:
    switch = KillSwitch("leak", logical_name="refund", versions="1.0.0")
    assert switch.switch_id.startswith("ks-") and KillSwitch("x").switch_id != KillSwitch("x").switch_id
    assert KillSwitch.from_json(switch.as_json()) == switch
    with pytest.raises(ValueError, match="reason"):
        KillSwitch("")
    with pytest.raises(TypeError):
        KillSwitch("why", versions=1)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        KillSwitch("why", tenant_id="\ud800")


@given(json_objects)
@settings(max_examples=200, deadline=None)
def test_a_switch_read_from_hostile_json_is_a_switch_or_a_type_or_value_error(data: dict[str, object]) -> None:
    try:
        switch = KillSwitch.from_json(data)
    except (TypeError, ValueError):
        return
    assert KillSwitch.from_json(switch.as_json()) == switch


def _candidate(version: str) -> ToolCandidate:
    return ToolCandidate(
        ToolSchemaSnapshot(name="refund", description="Refund.", parameters={"type": "object"}), ToolMetadata(version=version)
    )


def test_a_matching_switch_omits_the_version_when_assembling_and_refuses_it_before_the_body() -> None:
    old, new = _candidate("1.0.0"), _candidate("2.0.0")
    switch = KillSwitch("bad release", logical_name="refund", versions=">=2.0.0")
    selection = assemble_catalog([old, new], ACME, kill_switches=[switch])
    assert [c.version for c in selection.chosen] == ["1.0.0"]
    assert [(o.version, o.reason, o.detail) for o in selection.omitted] == [
        ("2.0.0", "kill_switch", f"kill switch {switch.switch_id}: bad release")
    ]
    assert selection.reusable  # a switch is data: the selection is still a function of the revisions
    binding: ToolBinding = new.binding
    assert reauthorize(binding, new, ACME, frozenset(), kill_switches=[switch]) == "kill_switch"
    assert reauthorize(binding, new, ACME, frozenset()) is None
