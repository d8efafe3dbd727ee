"""tether_clr.testing: the test kit (``pip install 'tether_clr[testing]'``); see docs/testing.md.

The helpers here need no pytest: probe tools (:class:`ProbeTool`), a recording
sink (:class:`RecordingSink`), scripted approvals (:class:`ScriptedApprovals`), a
scripted model endpoint for the OpenAI and Anthropic clients (:class:`ScriptedEndpoint`),
:func:`replay` of a ``tether-clr run`` script, the assertions (each raising
``AssertionError`` with the log in its message), and test session stores. The
pytest fixtures (``tether_registry``, ``session_store``, ``recording_sink``,
``scripted_approvals``) are in :mod:`tether_clr.testing.plugin`, which pytest
loads through the ``pytest11`` entry point; importing ``tether_clr`` loads none
of this. :mod:`tether_clr.testing.parity` (``assert_parity``) compares C# tools
under tether_clr with Microsoft.Extensions.AI's own ``FunctionInvokingChatClient``;
it is a submodule of its own because it loads .NET.

An adapter (floor 7): it drives the public API and the command line's runner
(``replay`` runs scripts through the code ``tether-clr run`` runs); nothing
below imports it.
"""

from __future__ import annotations

from tether_clr.foundations.exports import rehome
from tether_clr.testing.approvals import ANSWER_WORDS, ApprovalQuestion, ScriptedApprovals
from tether_clr.testing.assertions import (
    assert_body_not_run,
    assert_log_sound,
    assert_model_order,
    assert_outcomes,
    events,
)
from tether_clr.testing.endpoint import (
    Reply,
    ScriptedEndpoint,
    anthropic_reply,
    openai_chat_reply,
    openai_responses_reply,
)
from tether_clr.testing.harness import KitRegistry, tool_call
from tether_clr.testing.probes import ProbeCall, ProbeTool
from tether_clr.testing.rendering import render_log
from tether_clr.testing.replay import Replay, replay
from tether_clr.testing.sinks import RecordingSink, SinkRecord
from tether_clr.testing.stores import open_session_store, store_location

__all__ = [
    "ANSWER_WORDS",
    "ApprovalQuestion",
    "KitRegistry",
    "ProbeCall",
    "ProbeTool",
    "RecordingSink",
    "Replay",
    "Reply",
    "ScriptedApprovals",
    "ScriptedEndpoint",
    "SinkRecord",
    "anthropic_reply",
    "assert_body_not_run",
    "assert_log_sound",
    "assert_model_order",
    "assert_outcomes",
    "events",
    "open_session_store",
    "openai_chat_reply",
    "openai_responses_reply",
    "render_log",
    "replay",
    "store_location",
    "tool_call",
]

rehome(globals(), __name__)
