"""The projections are typed with the SDKs' own parameter types: agent loops written against the real
``openai`` and ``anthropic`` clients pass ``mypy --strict`` with no cast and no ignore.

A Chat Completions loop, a Responses loop and an Anthropic loop are written to
files in a temporary folder and checked by ``python -m mypy --strict`` with the
checkout on ``MYPYPATH`` (its modules read as an installed package's: their
own errors silenced, their types used). A fourth file hands Anthropic tools to
OpenAI: mypy must refuse it, which shows the types are the SDKs', not ``Any``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

CHECKOUT = Path(__file__).resolve().parents[2]

CHAT_LOOP = '''
from __future__ import annotations

from openai import AsyncOpenAI
from openai.types.chat import ChatCompletionMessageParam

from tether_clr import BatchOutcomes, RequestContext, ToolRegistry
from tether_clr.projections import calls_from_openai, chat_tool_messages, openai_allowed_tools, to_openai_tools


async def chat_loop(client: AsyncOpenAI, registry: ToolRegistry) -> str | None:
    assembly = registry.assemble(RequestContext("acme", "alice"))
    tools = to_openai_tools(assembly)
    choice = openai_allowed_tools(assembly.names, mode="required")
    messages: list[ChatCompletionMessageParam] = [{"role": "user", "content": "Weather in Oslo?"}]
    while True:
        completion = await client.chat.completions.create(model="m", messages=messages, tools=tools, tool_choice=choice)
        calls = calls_from_openai(completion)
        if not calls:
            return completion.choices[0].message.content
        outcomes = await registry.execute_batch(calls, assembly)
        assert isinstance(outcomes, BatchOutcomes)
        message = completion.choices[0].message
        messages.append({"role": "assistant", "content": message.content, "tool_calls": [
            {"id": c.id, "type": "function", "function": {"name": c.function.name, "arguments": c.function.arguments}}
            for c in message.tool_calls or [] if c.type == "function"]})
        messages += chat_tool_messages(outcomes)
'''

RESPONSES_LOOP = '''
from __future__ import annotations

from openai import AsyncOpenAI
from openai.types.responses import ResponseInputItemParam

from tether_clr import BatchOutcomes, RequestContext, ToolRegistry
from tether_clr.projections import calls_from_openai, openai_allowed_tools, responses_input_items, to_openai_tools


async def responses_loop(client: AsyncOpenAI, registry: ToolRegistry) -> str:
    assembly = registry.assemble(RequestContext("acme", "alice"))
    tools = to_openai_tools(assembly, api="responses", strict=True)
    choice = openai_allowed_tools(assembly.names, api="responses")
    items: list[ResponseInputItemParam] = [{"role": "user", "content": "Weather in Oslo?"}]
    while True:
        reply = await client.responses.create(model="m", input=items, tools=tools, tool_choice=choice)
        calls = calls_from_openai(reply)
        if not calls:
            return reply.output_text
        outcomes = await registry.execute_batch(calls, assembly)
        assert isinstance(outcomes, BatchOutcomes)
        items += responses_input_items(outcomes)
'''

ANTHROPIC_LOOP = '''
from __future__ import annotations

from anthropic import AsyncAnthropic
from anthropic.types import MessageParam

from tether_clr import BatchOutcomes, RequestContext, ToolRegistry
from tether_clr.projections import calls_from_anthropic, to_anthropic_tools, tool_results_message


async def anthropic_loop(client: AsyncAnthropic, registry: ToolRegistry) -> str:
    assembly = registry.assemble(RequestContext("acme", "alice"))
    tools = to_anthropic_tools(assembly, strict=True)
    messages: list[MessageParam] = [{"role": "user", "content": "Weather in Oslo?"}]
    while True:
        reply = await client.messages.create(model="m", max_tokens=512, messages=messages, tools=tools)
        calls = calls_from_anthropic(reply)
        if not calls:
            return "".join(block.text for block in reply.content if block.type == "text")
        outcomes = await registry.execute_batch(calls, assembly)
        assert isinstance(outcomes, BatchOutcomes)
        messages += [{"role": "assistant", "content": reply.content}, tool_results_message(outcomes)]
'''

CROSSED = '''
from __future__ import annotations

from openai import AsyncOpenAI

from tether_clr import ToolAssembly
from tether_clr.projections import to_anthropic_tools


async def crossed(client: AsyncOpenAI, assembly: ToolAssembly) -> None:
    await client.chat.completions.create(model="m", messages=[], tools=to_anthropic_tools(assembly))
'''

MYPY_INI = "[mypy]\nstrict = True\n\n[mypy-tether_clr.*]\nfollow_imports = silent\n"


@pytest.mark.timeout(240)
def test_loops_on_the_real_clients_pass_mypy_strict_and_crossed_types_do_not(tmp_path: Path) -> None:
    files = {"chat_loop.py": CHAT_LOOP, "responses_loop.py": RESPONSES_LOOP, "anthropic_loop.py": ANTHROPIC_LOOP, "crossed.py": CROSSED}
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    (tmp_path / "mypy.ini").write_text(MYPY_INI)
    env = {**os.environ, "MYPYPATH": str(CHECKOUT)}
    env.pop("PYTHONPATH", None)
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", "mypy.ini", "--cache-dir", str(tmp_path / ".cache"), *files],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=220, check=False,
    )
    errors = [line for line in result.stdout.splitlines() if ": error:" in line]
    assert errors and all(line.startswith("crossed.py:") for line in errors), result.stdout + result.stderr
    assert any('"tools"' in line and "create" in line for line in errors), result.stdout
