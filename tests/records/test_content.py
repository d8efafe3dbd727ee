"""Content parts: what a model is shown of an outcome, and the defaults."""

from __future__ import annotations

import pytest

from tether_clr import ImagePart, TextPart, ToolExecutionOutcome
from tether_clr.records.content import as_parts, parts_from_json, parts_to_json

PNG = b"\x89PNG\r\n\x1a\n-not-really"


def test_the_default_content_of_a_success_is_a_string_as_itself_and_anything_else_as_canonical_json() -> None:
    assert ToolExecutionOutcome.success("c", "t", "héllo").content == (TextPart("héllo"),)
    assert ToolExecutionOutcome.success("c", "t", {"b": 1, "a": [True, None]}).content == (TextPart('{"a":[true,null],"b":1}'),)
    assert ToolExecutionOutcome.success("c", "t", None).content == (TextPart("null"),)


def test_the_default_content_of_a_failure_is_its_message() -> None:
    assert ToolExecutionOutcome.failed("c", "t", "DENIED", "no, sorry").content == (TextPart("no, sorry"),)


def test_with_content_changes_the_content_only() -> None:
    outcome = ToolExecutionOutcome.failed("c", "t", "TOOL_ERROR", "boom", "why")
    shown = outcome.with_content([TextPart("redacted"), ImagePart(PNG, "image/PNG")])
    assert shown.content == (TextPart("redacted"), ImagePart(PNG, "image/png"))
    assert (shown.call_id, shown.value, shown.failure) == (outcome.call_id, outcome.value, outcome.failure)
    assert outcome.content == (TextPart("boom"),)


@pytest.mark.parametrize("bad", ["text", b"bytes", {"type": "text"}, 3, [TextPart("a"), "b"], None])
def test_anything_but_parts_is_refused_naming_who_returned_it(bad: object) -> None:
    with pytest.raises(TypeError, match="my_hook must return content parts"):
        as_parts(bad, "my_hook")


def test_a_text_part_holds_valid_unicode_and_an_image_part_a_known_image_type() -> None:
    with pytest.raises(ValueError, match="lone surrogate"):
        TextPart("a\ud800")
    with pytest.raises(TypeError):
        TextPart(b"x")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="mime_type"):
        ImagePart(PNG, "application/pdf")
    with pytest.raises(TypeError):
        ImagePart("not bytes", "image/png")  # type: ignore[arg-type]
    assert ImagePart(bytearray(b"ab"), "image/gif").data == b"ab"
    assert ImagePart(b"ab", "image/webp").data_url == "data:image/webp;base64,YWI="


def test_parts_are_recorded_as_json_with_images_as_base64_and_read_back_the_same() -> None:
    parts = (TextPart("caption"), ImagePart(PNG, "image/png"))
    recorded = parts_to_json(parts)
    assert recorded[1] == {"type": "image", "mime_type": "image/png", "data": "iVBORw0KGgotbm90LXJlYWxseQ=="}
    assert parts_from_json(recorded) == parts


@pytest.mark.parametrize("recorded", [{"type": "text"}, [{"type": "audio"}], [{"type": "image", "mime_type": "image/png", "data": "%%"}], [{"type": "text"}]])
def test_recorded_content_that_was_not_written_by_the_log_is_refused(recorded: object) -> None:
    with pytest.raises(ValueError):
        parts_from_json(recorded)
