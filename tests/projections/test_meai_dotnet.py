"""The MEAI projections read by the real Microsoft.Extensions.AI (10.0.1) on the hosted runtime (Mono and CoreCLR)."""

from __future__ import annotations

import json
from typing import Any

from tests.support.projection_tools import CONTEXT, trip_registry
from tether_clr import ImagePart, TextPart, ToolExecutionOutcome
from tether_clr.projections import to_meai_declarations


def test_meai_declarations_are_what_aifunctionfactory_create_declaration_takes(meai: dict[str, Any]) -> None:
    from Microsoft.Extensions.AI import AIFunctionFactory  # type: ignore[import-not-found]
    from System.Text.Json import JsonDocument  # type: ignore[import-not-found]

    for declared in to_meai_declarations(trip_registry().assemble(CONTEXT)):
        schema = JsonDocument.Parse(json.dumps(declared["jsonSchema"])).RootElement
        made = AIFunctionFactory.CreateDeclaration(declared["name"], declared["description"], schema, None)
        assert (made.Name, made.Description) == (declared["name"], declared["description"])
        assert json.loads(made.JsonSchema.GetRawText()) == declared["jsonSchema"]


def test_function_result_content_json_is_read_by_meai_as_its_content(meai: dict[str, Any]) -> None:
    import clr  # type: ignore[import-not-found]
    from Microsoft.Extensions.AI import AIContent, AIJsonUtilities, DataContent, FunctionResultContent, TextContent  # type: ignore[import-not-found]
    from System.Text.Json import JsonSerializer  # type: ignore[import-not-found]

    content_type, options = clr.GetClrType(AIContent), AIJsonUtilities.DefaultOptions
    image = ImagePart(b"\x89PNG\r\n\x1a\nxyz", "image/png")
    outcome = ToolExecutionOutcome.success("c1", "chart", {"points": 3}).with_content((TextPart("a chart"), image))
    text, data = (JsonSerializer.Deserialize(json.dumps(item), content_type, options) for item in outcome.to_function_result().result)
    assert isinstance(text, TextContent) and text.Text == "a chart"
    assert isinstance(data, DataContent) and data.MediaType == "image/png" and bytes(data.Data.ToArray()) == image.data
    whole = JsonSerializer.Deserialize(outcome.to_function_result().to_json(), content_type, options)
    assert isinstance(whole, FunctionResultContent) and whole.CallId == "c1"
