"""A scripted model endpoint on 127.0.0.1: answers each POST with the next scripted reply and records what it received.

It stands in for OpenAI's and Anthropic's HTTP APIs, so that an agent loop
written on the real client SDKs runs offline and deterministically (in a test,
in a doc's example): the client talks to it (``base_url=endpoint.url``), and
:func:`openai_chat_reply`, :func:`openai_responses_reply` and
:func:`anthropic_reply` build what the model answers.
It serves from its own thread, independent of the event loop, so asyncio and
trio tests use it alike. It is bounded: it stops when its ``with`` block ends,
and by itself after ``lifetime`` seconds whatever happens.

A reply is a JSON object, or a callable ``(request_body) -> JSON object`` that
may check what the client sent (an ``AssertionError`` it raises is kept in
``failures`` and answered with HTTP 500, so the test sees it).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

__all__ = ["Reply", "ScriptedEndpoint", "anthropic_reply", "openai_chat_reply", "openai_responses_reply"]

Reply = dict[str, Any] | Callable[[dict[str, Any]], dict[str, Any]]


class ScriptedEndpoint:
    """``with ScriptedEndpoint([reply, ...]) as endpoint:``; ``endpoint.url``, ``endpoint.requests`` (path, body)."""

    def __init__(self, replies: Iterable[Reply], *, lifetime: float = 120.0) -> None:
        self._replies = list(replies)
        self._lock = threading.Lock()
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.failures: list[str] = []
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - the http.server hook's name
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                status, answer = endpoint._answer(self.path, body)
                data = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                return None

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._timer = threading.Timer(lifetime, self.close)
        self._timer.daemon = True
        self._closed = False

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def _answer(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        with self._lock:
            self.requests.append((path, body))
            if not self._replies:
                self.failures.append(f"unexpected request {len(self.requests)} to {path}: the script is over")
                return 500, {"error": {"message": "the script is over", "type": "scripted"}}
            reply = self._replies.pop(0)
        try:
            return 200, reply(body) if callable(reply) else reply
        except AssertionError as exc:
            self.failures.append(f"request {len(self.requests)} to {path}: {exc}")
            return 500, {"error": {"message": f"the endpoint's check failed: {exc}", "type": "scripted"}}

    @property
    def finished(self) -> bool:
        """Every scripted reply was asked for."""
        return not self._replies

    def __enter__(self) -> ScriptedEndpoint:
        self._thread.start()
        self._timer.start()
        return self

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._timer.cancel()
        self._server.shutdown()
        self._server.server_close()

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()


def _arguments_text(arguments: Any) -> str:
    """Arguments given as text are sent as they are (malformed JSON included); anything else as its JSON."""
    return arguments if isinstance(arguments, str) else json.dumps(arguments)


def openai_chat_reply(*tool_calls: tuple[str, str, Any], text: str | None = None) -> dict[str, Any]:
    """A Chat Completions response (``chat.completion``): one choice, an assistant message with
    ``(id, name, arguments)`` tool calls, or just ``text``."""
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if tool_calls:
        message["tool_calls"] = [
            {"id": call_id, "type": "function", "function": {"name": name, "arguments": _arguments_text(arguments)}}
            for call_id, name, arguments in tool_calls
        ]
    return {"id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "scripted",
            "choices": [{"index": 0, "finish_reason": "tool_calls" if tool_calls else "stop", "message": message, "logprobs": None}]}


def openai_responses_reply(*function_calls: tuple[str, str, Any], text: str | None = None) -> dict[str, Any]:
    """A Responses API response: ``function_call`` output items ``(call_id, name, arguments)``, then a message with ``text``."""
    output: list[dict[str, Any]] = [
        {"type": "function_call", "id": f"fc_{call_id}", "call_id": call_id, "name": name, "status": "completed",
         "arguments": _arguments_text(arguments)}
        for call_id, name, arguments in function_calls
    ]
    if text is not None:
        output.append({"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
                       "content": [{"type": "output_text", "text": text, "annotations": []}]})
    return {"id": "resp_1", "object": "response", "created_at": 0, "model": "scripted", "status": "completed",
            "output": output, "parallel_tool_calls": True, "tool_choice": "auto", "tools": []}


def anthropic_reply(*tool_uses: tuple[str, str, Mapping[str, Any]], text: str | None = None) -> dict[str, Any]:
    """A Messages API response: an optional text block, then ``tool_use`` blocks ``(id, name, input)``."""
    content: list[dict[str, Any]] = [] if text is None else [{"type": "text", "text": text}]
    content += [{"type": "tool_use", "id": tool_id, "name": name, "input": dict(input_)} for tool_id, name, input_ in tool_uses]
    return {"id": "msg_1", "type": "message", "role": "assistant", "model": "scripted", "content": content,
            "stop_reason": "tool_use" if tool_uses else "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 1}}
