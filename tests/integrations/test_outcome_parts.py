"""``outcome_parts`` (the text and images every adapter hands its framework) says what ``outcome.content`` says.

Its shortcut for a string value (the characters between the JSON quotes, when there is no escape) must
give the text ``content`` gives, for every kind of value and for failures and explicit content.
"""

from __future__ import annotations

from typing import Any

import pytest

from tether_clr.integrations.content import outcome_parts
from tether_clr.records.content import ImagePart, TextPart
from tether_clr.records.outcomes import ToolExecutionOutcome, ToolFailureCodes

VALUES: list[Any] = ["hi", "", 'say "hi"', "back\\slash", "line\nbreak", "tab\t", "é ü 😀", "\u2028", 5, 1.5, True, None,
                     {"a": 1}, [1, "two"], '"quoted"', "\\u0041"]


@pytest.mark.parametrize("value", VALUES, ids=repr)
def test_the_text_of_a_successful_outcome_is_the_text_its_content_shows(value: Any) -> None:
    outcome = ToolExecutionOutcome.success("c1", "echo", value)
    (part,) = outcome.content
    assert isinstance(part, TextPart)
    assert outcome_parts(outcome).text == part.text
    assert outcome_parts(outcome).images == ()


def test_a_failure_and_explicit_content_are_read_from_content() -> None:
    failed = ToolExecutionOutcome.failed("c1", "echo", ToolFailureCodes.DENIED, "no")
    assert outcome_parts(failed).text == "no"
    image = ImagePart(b"\x89PNG\r\n\x1a\n", "image/png")
    shown = ToolExecutionOutcome.success("c1", "echo", "hidden").with_content((TextPart("a"), image, TextPart("b")))
    assert outcome_parts(shown).text == "a\nb" and outcome_parts(shown).images == (image,)
