"""What an adapter shows the model of a failure: the projections' marker over the model-facing content."""

from __future__ import annotations

from tether_clr import ImagePart, TextPart, ToolExecutionOutcome
from tether_clr.integrations import failure_of, failure_text


def test_a_failure_reads_as_its_code_then_its_message() -> None:
    outcome = ToolExecutionOutcome.failed("c1", "t", "DENIED", "not allowed")
    assert failure_text(outcome) == "Error [DENIED]: not allowed" == outcome.to_openai()["content"]


def test_a_failure_with_a_reason_shows_the_reason_after_the_code_as_the_openai_projection_does() -> None:
    outcome = ToolExecutionOutcome.failed("c1", "t", "ABORTED", "timed out after 0.1 s", "timeout")
    assert failure_text(outcome) == "Error [ABORTED/timeout]: timed out after 0.1 s" == outcome.to_openai()["content"]
    failure = failure_of(outcome)
    assert failure is not None and (failure.code, failure.reason, failure.message) == ("ABORTED", "timeout", "timed out after 0.1 s")


def test_a_content_hook_s_redaction_is_what_the_model_sees_never_the_raw_message() -> None:
    outcome = ToolExecutionOutcome.failed("c1", "t", "TOOL_ERROR", "secret=hunter2").with_content((TextPart("[redacted]"),))
    assert failure_text(outcome) == "Error [TOOL_ERROR]: [redacted]"
    failure = failure_of(outcome)
    assert failure is not None and failure.message == "secret=hunter2" and "hunter2" not in failure.text  # the host keeps the fact


def test_a_failure_whose_content_is_an_image_still_reads_as_a_failure() -> None:
    outcome = ToolExecutionOutcome.failed("c1", "t", "BLOCKED", "x").with_content((ImagePart(b"GIF89a", "image/gif"),))
    assert failure_text(outcome) == "Error [BLOCKED]"
