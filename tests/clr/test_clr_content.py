"""A .NET tool that answers with Microsoft.Extensions.AI content (text and images) becomes content parts,
on Mono and CoreCLR, with the real assemblies; a Python tool may answer with parts too."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tether_clr import ImagePart, PythonFunction, TextPart, ToolRegistry
from tests.support import call, run_batch

pytestmark = pytest.mark.anyio

PIXEL = bytes([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 1, 2, 3])


def _registry(meai: dict[str, Any], *names: str) -> ToolRegistry:
    from tether_clr.clr import discover_functions

    registry = ToolRegistry()
    for function in discover_functions(meai["assembly"]):
        if function.name in names:
            registry.register(function)
    return registry


async def test_an_aifunction_answering_with_text_and_image_content_has_those_parts_as_its_content(meai: dict[str, Any]) -> None:
    registry = _registry(meai, "Caption", "Snapshot", "Photo")
    caption, snapshot, photo = await run_batch(
        registry, call("1", "Caption", {"text": "x"}), call("2", "Snapshot", {"label": "cat"}), call("3", "Photo", {"name": "n"})
    )
    assert caption.content == (TextPart("caption: x"),)
    assert snapshot.content == (TextPart("snapshot of cat"), ImagePart(PIXEL, "image/png"))
    assert photo.content == (ImagePart(PIXEL, "image/png"),)
    assert snapshot.value == [{"type": "text", "text": "snapshot of cat"},
                              {"type": "image", "mime_type": "image/png", "data": "iVBORw0KGgoBAgM="}]


async def test_content_that_is_not_text_or_an_image_stays_the_tools_json_value(meai: dict[str, Any]) -> None:
    registry = _registry(meai, "Brochure", "Multiply")
    brochure, product = await run_batch(registry, call("1", "Brochure", {"name": "n"}), call("2", "Multiply", {"a": 6, "b": 7}))
    assert brochure.explicit_content is None and brochure.value["$type"] == "data"
    assert brochure.value["uri"].startswith("data:application/pdf;base64,")
    assert (product.value, product.content) == (42, (TextPart("42"),))


async def test_the_function_result_handed_back_to_dotnet_carries_the_content(meai: dict[str, Any]) -> None:
    from tether_clr.clr import to_clr_function_result

    registry = _registry(meai, "Snapshot")
    (snapshot,) = await run_batch(registry, call("1", "Snapshot", {"label": "cat"}))
    result = to_clr_function_result(snapshot)
    assert json.loads(str(result.Result.GetRawText())) == [
        {"$type": "text", "text": "snapshot of cat"},
        {"$type": "data", "uri": "data:image/png;base64,iVBORw0KGgoBAgM=", "mediaType": "image/png"},
    ]


async def test_a_python_tool_answering_with_parts_has_them_as_its_content() -> None:
    registry = ToolRegistry()
    registry.register(PythonFunction.from_callable(lambda: [TextPart("a chart"), ImagePart(PIXEL, "image/png")], name="chart"))
    registry.register(PythonFunction.from_callable(lambda: TextPart("just text"), name="note"))
    registry.register(PythonFunction.from_callable(lambda: [], name="empty"))
    chart, note, empty = await run_batch(registry, call("1", "chart"), call("2", "note"), call("3", "empty"))
    assert chart.content == (TextPart("a chart"), ImagePart(PIXEL, "image/png"))
    assert note.value == [{"type": "text", "text": "just text"}] and note.content == (TextPart("just text"),)
    assert (empty.value, empty.explicit_content) == ([], None)  # an empty list is a plain value


async def test_a_result_mixing_parts_and_data_is_a_plain_json_value() -> None:
    registry = ToolRegistry()
    registry.register(PythonFunction.from_callable(lambda: [TextPart("a"), 1], name="mixed"))
    (mixed,) = await run_batch(registry, call("1", "mixed"))
    assert mixed.explicit_content is None and mixed.value == [{"text": "a", "type": "text"}, 1]
