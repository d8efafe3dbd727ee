"""What a successful outcome gives a framework, the same in every adapter: its text and images, and the
deferred tools a search loaded, carried in a tool result's metadata.

* :func:`outcome_parts`: an outcome's model-facing content as :class:`OutcomeParts` (its text parts
  joined by newlines, its images in order), read once (``outcome.content`` is made on each read).
* :data:`METADATA_KEY`, :func:`loaded_metadata` and :func:`loaded_from_metadata`: the one codec for
  "the deferred tools this search result loaded" in a framework's result metadata
  (``{"tether_clr": {"loaded": [names]}}``: pydantic-ai's ``ToolReturn.metadata``, LangChain's
  ``ToolMessage.artifact``), so the next step reads them back from the conversation's history.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from tether_clr.records.content import ImagePart, TextPart
from tether_clr.records.outcomes import ToolExecutionOutcome

__all__ = ["METADATA_KEY", "OutcomeParts", "loaded_from_metadata", "loaded_metadata", "outcome_parts"]

METADATA_KEY = "tether_clr"
"""The key under which the library's facts live in a framework's result metadata."""


@dataclass(frozen=True, slots=True)
class OutcomeParts:
    """``text``: the outcome's text parts joined by newlines; ``images``: its image parts, in order."""

    text: str
    images: tuple[ImagePart, ...] = ()


def outcome_parts(outcome: ToolExecutionOutcome) -> OutcomeParts:
    """The model-facing text and images of ``outcome`` (for a failure, its content without the marker:
    use :func:`~tether_clr.integrations.failure_text` for what the model is shown of a failure)."""
    value_json = outcome.value_json
    if (outcome.explicit_content is None and outcome.failure is None and value_json.startswith('"')
            and "\\" not in value_json):
        # a string value is its own text (what ``content`` shows); a JSON string with no escape is its
        # characters between the quotes (valid text: ToolExecutionOutcome.success made the JSON)
        return OutcomeParts(value_json[1:-1])
    content = outcome.content  # made on each read: read once
    if len(content) == 1 and isinstance(content[0], TextPart):  # the common case: one text part
        return OutcomeParts(content[0].text)
    texts = [part.text for part in content if isinstance(part, TextPart)]
    images = tuple(part for part in content if isinstance(part, ImagePart))
    return OutcomeParts("\n".join(texts), images)


def loaded_metadata(loaded: Sequence[str]) -> dict[str, Any] | None:
    """The metadata that carries ``loaded`` (the deferred tools a search loaded), or None when there are none."""
    return {METADATA_KEY: {"loaded": list(loaded)}} if loaded else None


def loaded_from_metadata(metadata: Iterable[Any]) -> list[str]:
    """The deferred tools named by every :func:`loaded_metadata` among ``metadata`` (other values are skipped)."""
    names: list[str] = []
    for found in metadata:
        if not isinstance(found, dict):
            continue
        ours = found.get(METADATA_KEY)
        if not isinstance(ours, dict):
            continue
        loaded = ours.get("loaded")
        if isinstance(loaded, list):
            names.extend(name for name in loaded if isinstance(name, str))
    return names
