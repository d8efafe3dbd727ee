"""Semantic versions (https://semver.org, 2.0.0): parsing and precedence.

A catalog keeps several versions of one logical tool and picks "the highest
ACTIVE one", so the order must be the one everybody means by a version number:
numeric cores compare numerically, a pre-release ranks below its release,
pre-release identifiers compare numerically when both are numbers, ASCII-wise
otherwise, numbers below words, and a longer list above its prefix. Build
metadata does not affect precedence (semver section 10); versions that differ
only in build metadata are ordered by their build identifiers (ASCII) so that a
choice between them is still deterministic.

Floor 1: no imports from higher floors.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

__all__ = ["SemVer", "parse_version"]

_NUMBER = r"0|[1-9][0-9]*"
_PRE_ID = r"0|[1-9][0-9]*|[0-9]*[a-zA-Z-][0-9a-zA-Z-]*"
_BUILD_ID = r"[0-9a-zA-Z-]+"
# The grammar of semver.org, ASCII only (Python's \d would accept other digits).
_SEMVER = re.compile(
    rf"(?P<major>{_NUMBER})\.(?P<minor>{_NUMBER})\.(?P<patch>{_NUMBER})"
    rf"(?:-(?P<pre>(?:{_PRE_ID})(?:\.(?:{_PRE_ID}))*))?"
    rf"(?:\+(?P<build>{_BUILD_ID}(?:\.{_BUILD_ID})*))?"
)

_PreKey = tuple[tuple[int, int, str], ...]


def _pre_key(identifiers: tuple[str, ...]) -> tuple[int, _PreKey]:
    # A release (no identifiers) ranks above every pre-release of the same core.
    if not identifiers:
        return (1, ())
    return (0, tuple((0, int(i), "") if i.isdigit() else (1, 0, i) for i in identifiers))


@dataclass(frozen=True, slots=True)
class SemVer:
    """One parsed semantic version; ``str()`` gives back the version text.

    Equality is on every part (build metadata included); ordering is semver
    precedence, ties broken by build metadata. ``precedes``/``same_precedence``
    compare precedence alone.
    """

    major: int
    minor: int
    patch: int
    prerelease: tuple[str, ...] = ()
    build: tuple[str, ...] = ()
    _key: tuple[Any, ...] = field(init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        for name in ("major", "minor", "patch"):
            number = getattr(self, name)
            if type(number) is not int or number < 0:
                raise ValueError(f"{name} must be a non-negative int, got {number!r}")
        # Round-trip through the grammar so a hand-built SemVer obeys it too.
        text = self._text()
        if _SEMVER.fullmatch(text) is None:
            raise ValueError(f"not a semantic version: {text!r}")
        precedence = (self.major, self.minor, self.patch, _pre_key(self.prerelease))
        object.__setattr__(self, "_key", (precedence, self.build))

    @classmethod
    def parse(cls, text: str) -> SemVer:
        """Parse ``MAJOR.MINOR.PATCH[-PRERELEASE][+BUILD]``; anything else is ``ValueError``."""
        if not isinstance(text, str):
            raise TypeError(f"a version must be a str, got {type(text).__name__}")
        match = _SEMVER.fullmatch(text)
        if match is None:
            raise ValueError(f"not a semantic version (MAJOR.MINOR.PATCH[-pre][+build]): {text!r}")
        pre, build = match["pre"], match["build"]
        return cls(
            int(match["major"]),
            int(match["minor"]),
            int(match["patch"]),
            tuple(pre.split(".")) if pre else (),
            tuple(build.split(".")) if build else (),
        )

    def _text(self) -> str:
        text = f"{self.major}.{self.minor}.{self.patch}"
        if self.prerelease:
            text += "-" + ".".join(self.prerelease)
        if self.build:
            text += "+" + ".".join(self.build)
        return text

    def __str__(self) -> str:
        return self._text()

    @property
    def is_prerelease(self) -> bool:
        return bool(self.prerelease)

    @property
    def precedence(self) -> tuple[Any, ...]:
        """The semver precedence key (build metadata excluded)."""
        return self._key[0]  # type: ignore[no-any-return]

    def same_precedence(self, other: SemVer) -> bool:
        return self.precedence == other.precedence

    def precedes(self, other: SemVer) -> bool:
        """Strictly lower precedence than ``other`` (semver section 11)."""
        return self.precedence < other.precedence

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, SemVer):
            return NotImplemented
        return self._key < other._key

    def __le__(self, other: object) -> bool:
        if not isinstance(other, SemVer):
            return NotImplemented
        return self._key <= other._key

    def __gt__(self, other: object) -> bool:
        if not isinstance(other, SemVer):
            return NotImplemented
        return self._key > other._key

    def __ge__(self, other: object) -> bool:
        if not isinstance(other, SemVer):
            return NotImplemented
        return self._key >= other._key


def parse_version(text: str) -> SemVer:
    """:meth:`SemVer.parse`: ``ValueError`` for anything that is not a semantic version."""
    return SemVer.parse(text)
