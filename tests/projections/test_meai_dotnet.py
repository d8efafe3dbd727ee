"""The MEAI projections read by the real Microsoft.Extensions.AI (10.0.1) on the hosted runtime (Mono and CoreCLR)."""

from __future__ import annotations

import json
from typing import Any

from tests.support.projection_tools import CONTEXT, trip_registry
from tether_clr import ImagePart, TextPart, ToolExecutionOutcome
from tether_clr.projections import to_meai_declarations


def _meai_json() -> tuple[Any, Any]:
    """The System.Text.Json that MEAI itself binds to, and MEAI's options: on CoreCLR the runtime's own
    System.Text.Json (8.0) is another assembly than MEAI's (10.0), so ``from System.Text.Json import``
    would hand MEAI elements of the wrong type."""
    from Microsoft.Extensions.AI import AIJsonUtilities  # type: ignore[import-not-found]

    options = AIJsonUtilities.DefaultOptions
    return options.GetType().Assembly, options


def _parse(text: str) -> Any:
    from tether_clr.clr.bridge import bridge

    bridge()  # the Tether.Bridge assembly is loaded: its namespace can be imported
    from Tether.Bridge import SystemTextJson  # type: ignore[import-not-found]

    return SystemTextJson.For(_meai_json()[0]).Parse(text)


def _deserialize(text: str, target: Any) -> Any:
    from System import String, Type  # type: ignore[import-not-found]

    assembly, options = _meai_json()
    serializer = assembly.GetType("System.Text.Json.JsonSerializer")
    method = serializer.GetMethod("Deserialize", [String, Type, options.GetType()])
    return method.Invoke(None, [text, target, options])


def test_meai_declarations_are_what_aifunctionfactory_create_declaration_takes(meai: dict[str, Any]) -> None:
    from Microsoft.Extensions.AI import AIFunctionFactory  # type: ignore[import-not-found]

    for declared in to_meai_declarations(trip_registry().assemble(CONTEXT)):
        schema = _parse(json.dumps(declared["jsonSchema"]))
        made = AIFunctionFactory.CreateDeclaration(declared["name"], declared["description"], schema, None)
        assert (made.Name, made.Description) == (declared["name"], declared["description"])
        assert json.loads(made.JsonSchema.GetRawText()) == declared["jsonSchema"]


def test_function_result_content_json_is_read_by_meai_as_its_content(meai: dict[str, Any]) -> None:
    import clr  # type: ignore[import-not-found]
    from Microsoft.Extensions.AI import AIContent, DataContent, FunctionResultContent, TextContent  # type: ignore[import-not-found]

    content_type = clr.GetClrType(AIContent)
    image = ImagePart(b"\x89PNG\r\n\x1a\nxyz", "image/png")
    outcome = ToolExecutionOutcome.success("c1", "chart", {"points": 3}).with_content((TextPart("a chart"), image))
    text, data = (_deserialize(json.dumps(item), content_type) for item in outcome.to_function_result().result)
    assert isinstance(text, TextContent) and text.Text == "a chart"
    assert isinstance(data, DataContent) and data.MediaType == "image/png" and bytes(data.Data.ToArray()) == image.data
    whole = _deserialize(outcome.to_function_result().to_json(), content_type)
    assert isinstance(whole, FunctionResultContent) and whole.CallId == "c1"
