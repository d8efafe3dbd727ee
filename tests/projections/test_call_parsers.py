"""The call readers take what a client hands back, or refuse it: never a silent ``[]``.

``calls_from_openai`` takes a ChatCompletion, a choice, a message, a Response or
its output items; ``calls_from_anthropic`` a Message or its content; each as the
SDK's objects (built with the SDKs' own ``model_validate``) or as dicts. A text
answer or an empty list is ``[]`` (that ends a loop); anything else is a
``TypeError`` naming what to pass, whatever the junk (property-based).
"""

from __future__ import annotations

from typing import Any

import pytest
from anthropic.types import Message
from hypothesis import given, settings
from hypothesis import strategies as st
from openai.types.chat import ChatCompletion
from openai.types.responses import Response

from tests.support.json_strategies import json_values
from tether_clr.projections import calls_from_anthropic, calls_from_openai
from tether_clr.testing import anthropic_reply, openai_chat_reply, openai_responses_reply

CHAT = openai_chat_reply(("call_1", "weather", {"city": "Oslo"}), ("call_2", "add", '{"a": 1'))
RESPONSE = openai_responses_reply(("call_1", "weather", {"city": "Oslo"}), ("call_2", "add", '{"a": 1'), text="and")
MESSAGE = anthropic_reply(("toolu_1", "weather", {"city": "Oslo"}), ("toolu_2", "add", {"a": 1}), text="Let me see.")


def _openai_shapes(chat: dict[str, Any], resp: dict[str, Any]) -> dict[str, Any]:
    """Every shape calls_from_openai takes, as dicts and as the SDK's objects."""
    completion, reply = ChatCompletion.model_validate(chat), Response.model_validate(resp)
    return {
        "completion dict": chat, "completion": completion,
        "choice dict": chat["choices"][0], "choice": completion.choices[0],
        "message dict": chat["choices"][0]["message"], "message": completion.choices[0].message,
        "response dict": resp, "response": reply,
        "output dicts": resp["output"], "output": reply.output,
    }


def _anthropic_shapes(message: dict[str, Any]) -> dict[str, Any]:
    sdk = Message.model_validate(message)
    return {"message dict": message, "message": sdk, "content dicts": message["content"], "content": sdk.content}


@pytest.mark.parametrize("shape", list(_openai_shapes(CHAT, RESPONSE)))
def test_calls_from_openai_reads_every_shape_a_client_hands_back(shape: str) -> None:
    calls = calls_from_openai(_openai_shapes(CHAT, RESPONSE)[shape])
    assert [(c.call_id, c.name, c.arguments) for c in calls] == [
        ("call_1", "weather", '{"city": "Oslo"}'), ("call_2", "add", '{"a": 1')]  # raw text untouched, malformed kept


@pytest.mark.parametrize("shape", list(_openai_shapes(openai_chat_reply(text="Done."), openai_responses_reply(text="Done."))))
def test_a_text_answer_from_openai_is_no_calls(shape: str) -> None:
    assert calls_from_openai(_openai_shapes(openai_chat_reply(text="Done."), openai_responses_reply(text="Done."))[shape]) == []


@pytest.mark.parametrize("shape", list(_anthropic_shapes(MESSAGE)))
def test_calls_from_anthropic_reads_every_shape_a_client_hands_back(shape: str) -> None:
    calls = calls_from_anthropic(_anthropic_shapes(MESSAGE)[shape])
    assert [(c.call_id, c.name, c.arguments) for c in calls] == [("toolu_1", "weather", '{"city":"Oslo"}'), ("toolu_2", "add", '{"a":1}')]


@pytest.mark.parametrize("shape", list(_anthropic_shapes(anthropic_reply(text="Done."))))
def test_a_text_answer_from_anthropic_is_no_calls(shape: str) -> None:
    assert calls_from_anthropic(_anthropic_shapes(anthropic_reply(text="Done."))[shape]) == []


def test_an_empty_list_is_no_calls() -> None:
    assert calls_from_openai([]) == [] and calls_from_anthropic([]) == [] and calls_from_openai(()) == []


@pytest.mark.parametrize("junk", ["a text", b"bytes", 42, 1.5, True, None, {}, {"id": "x"}, {"role": "user", "content": "hi"},
                                  object(), [1, 2], ["text"], {"choices": []}, {"choices": "x"}])
def test_calls_from_openai_refuses_what_it_cannot_read_naming_what_to_pass(junk: Any) -> None:
    with pytest.raises(TypeError, match="calls_from_openai takes a Chat Completions ChatCompletion"):
        calls_from_openai(junk)


@pytest.mark.parametrize("junk", ["a text", 42, None, {}, {"content": "hi"}, object(), [1], {"role": "user", "content": "x"}])
def test_calls_from_anthropic_refuses_what_it_cannot_read_naming_what_to_pass(junk: Any) -> None:
    with pytest.raises(TypeError, match="calls_from_anthropic takes an Anthropic Message"):
        calls_from_anthropic(junk)


@pytest.mark.parametrize("shape", list(_anthropic_shapes(MESSAGE)))
def test_an_anthropic_message_given_to_the_openai_reader_names_the_other_reader(shape: str) -> None:
    with pytest.raises(TypeError, match="use calls_from_anthropic"):
        calls_from_openai(_anthropic_shapes(MESSAGE)[shape])


@pytest.mark.parametrize("shape", ["completion dict", "completion", "response", "response dict", "output dicts", "message dict"])
def test_an_openai_response_given_to_the_anthropic_reader_names_the_other_reader(shape: str) -> None:
    with pytest.raises(TypeError, match="use calls_from_openai"):
        calls_from_anthropic(_openai_shapes(CHAT, RESPONSE)[shape])


junk = json_values | st.builds(object) | st.binary(max_size=4) | st.lists(st.builds(object), max_size=2)


@settings(max_examples=300, deadline=None)
@given(junk)
def test_junk_never_raises_anything_but_type_error(value: Any) -> None:
    for reader in (calls_from_openai, calls_from_anthropic):
        try:
            calls = reader(value)
        except TypeError:
            continue
        assert isinstance(calls, list)


ids = st.text(max_size=6) | st.none() | st.integers()
arguments = st.text(max_size=10) | json_values
chat_calls = st.lists(st.tuples(ids, ids, arguments), max_size=3)


@settings(max_examples=150, deadline=None)
@given(chat_calls, st.text(max_size=5) | st.none())
def test_every_valid_openai_shape_is_read_without_raising(tool_calls: list[tuple[Any, Any, Any]], text: str | None) -> None:
    chat = openai_chat_reply(*tool_calls, text=text) if tool_calls or text is not None else openai_chat_reply(text="")
    chat["choices"][0]["message"]["tool_calls"] = [  # any values in the fields: malformed calls, never an exception
        {"id": i, "type": "function", "function": {"name": n, "arguments": a}} for i, n, a in tool_calls] or None
    resp = openai_responses_reply()
    resp["output"] = [{"type": "function_call", "call_id": i, "name": n, "arguments": a} for i, n, a in tool_calls]
    for value in (chat, chat["choices"][0], chat["choices"][0]["message"], resp, resp["output"]):
        assert len(calls_from_openai(value)) == len(tool_calls)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(ids, ids, json_values), max_size=3))
def test_every_valid_anthropic_shape_is_read_without_raising(tool_uses: list[tuple[Any, Any, Any]]) -> None:
    message = anthropic_reply(text="x")
    message["content"] += [{"type": "tool_use", "id": i, "name": n, "input": v} for i, n, v in tool_uses]
    for value in (message, message["content"]):
        assert len(calls_from_anthropic(value)) == len(tool_uses)
