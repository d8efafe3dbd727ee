"""Semantic versions: the grammar of semver.org and its precedence rules."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tether_clr import SemVer, parse_version

SPEC_ORDER = [
    "1.0.0-alpha",
    "1.0.0-alpha.1",
    "1.0.0-alpha.beta",
    "1.0.0-beta",
    "1.0.0-beta.2",
    "1.0.0-beta.11",
    "1.0.0-rc.1",
    "1.0.0",
    "1.0.1",
    "1.1.0",
    "1.10.0",
    "2.0.0",
]


def test_prerelease_precedence_follows_the_semver_spec_example() -> None:
    parsed = [parse_version(v) for v in SPEC_ORDER]
    assert sorted(reversed(parsed)) == parsed
    assert [str(v) for v in parsed] == SPEC_ORDER


def test_numeric_parts_compare_numerically_not_textually() -> None:
    assert parse_version("1.10.0") > parse_version("1.9.0")
    assert parse_version("1.0.0-beta.11") > parse_version("1.0.0-beta.2")


def test_numeric_prerelease_identifiers_rank_below_alphanumeric_ones() -> None:
    assert parse_version("1.0.0-1") < parse_version("1.0.0-a")
    assert parse_version("1.0.0-rc.9") < parse_version("1.0.0-rc.a")


def test_a_release_ranks_above_its_prereleases() -> None:
    assert parse_version("2.0.0-rc.1") < parse_version("2.0.0")
    assert parse_version("2.0.0-rc.1") > parse_version("1.99.99")


def test_build_metadata_does_not_change_precedence() -> None:
    a, b = parse_version("1.0.0+build.1"), parse_version("1.0.0+build.2")
    assert a.same_precedence(b) and not a.precedes(b) and not b.precedes(a)
    assert a != b and a < b  # ties are still broken deterministically
    assert str(a) == "1.0.0+build.1"


@pytest.mark.parametrize(
    "text",
    ["", "1", "1.0", "1.0.0.0", "v1.0.0", "01.0.0", "1.01.0", "1.0.0-01", "1.0.0-", "1.0.0+", "1.0.0-a..b",
     "1.0.0 ", " 1.0.0", "1.0.0\n", "１.0.0", "1.0.0-é", "-1.0.0", "1.0.0+a+b"],
)
def test_invalid_versions_are_refused(text: str) -> None:
    with pytest.raises(ValueError, match="semantic version"):
        parse_version(text)


def test_a_version_must_be_text() -> None:
    with pytest.raises(TypeError):
        parse_version(100)  # type: ignore[arg-type]


def test_hand_built_versions_obey_the_grammar() -> None:
    with pytest.raises(ValueError):
        SemVer(1, 0, 0, ("01",))
    with pytest.raises(ValueError):
        SemVer(-1, 0, 0)
    assert SemVer(1, 2, 3, ("rc", "1")) == parse_version("1.2.3-rc.1")


_ident = st.from_regex(r"\A(0|[1-9][0-9]{0,3}|[a-zA-Z-][0-9a-zA-Z-]{0,4})\Z")
versions = st.builds(
    lambda a, b, c, pre, build: SemVer(a, b, c, tuple(pre), tuple(build)),
    st.integers(0, 30), st.integers(0, 30), st.integers(0, 30),
    st.lists(_ident, max_size=3),
    st.lists(st.from_regex(r"\A[0-9a-zA-Z-]{1,4}\Z"), max_size=2),
)


@given(versions)
def test_versions_round_trip_through_text(version: SemVer) -> None:
    assert parse_version(str(version)) == version


@given(versions, versions, versions)
def test_version_order_is_a_total_order(a: SemVer, b: SemVer, c: SemVer) -> None:
    assert (a < b) + (b < a) + (a == b) == 1
    if a <= b and b <= c:
        assert a <= c
