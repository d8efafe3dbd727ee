"""MEAI projections: AIFunctionDeclaration JSON, and FunctionResultContent consistent with the content."""

from __future__ import annotations

from tests.support.projection_tools import CONTEXT, trip_registry
from tether_clr import ImagePart, TextPart, ToolExecutionOutcome
from tether_clr.projections import to_meai_declarations


def test_meai_declarations_are_name_description_and_json_schema_in_assembly_order() -> None:
    assembly = trip_registry().assemble(CONTEXT)
    declarations = to_meai_declarations(assembly)
    assert declarations == [{"name": d.name, "description": d.description, "jsonSchema": d.parameters} for d in assembly.definitions]
    declarations[0]["jsonSchema"].clear()
    assert to_meai_declarations(assembly)[0]["jsonSchema"]


def test_function_result_content_keeps_the_value_when_the_content_is_the_default() -> None:
    outcome = ToolExecutionOutcome.success("c1", "t", {"a": 1})
    assert outcome.to_function_result().to_json() == '{"$type":"functionResult","callId":"c1","result":{"a":1}}'
    same = outcome.with_content(outcome.content)
    assert same.to_function_result() == outcome.to_function_result()
    failed = ToolExecutionOutcome.failed("c2", "t", "DENIED", "no")
    assert failed.to_function_result().result == {"message": "no"}


def test_function_result_content_carries_other_content_as_ai_content_json() -> None:
    image = ImagePart(b"GIF89a", "image/gif")
    outcome = ToolExecutionOutcome.success("c1", "t", {"a": 1}).with_content((TextPart("redacted"), image))
    assert outcome.to_function_result().result == [
        {"$type": "text", "text": "redacted"},
        {"$type": "data", "uri": image.data_url, "mediaType": "image/gif"},
    ]
