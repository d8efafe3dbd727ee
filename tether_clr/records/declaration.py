"""What the model is told about one tool: its name, description and parameter schema."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

__all__ = ["ToolSchemaSnapshot"]


class ToolSchemaSnapshot(BaseModel):
    """What the model is told about one tool; a detached copy every time it is read."""

    model_config = ConfigDict(frozen=True)

    name: str
    description: str
    parameters: dict[str, Any]

