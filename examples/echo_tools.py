"""The smallest tool module: a list of plain callables (``--tools examples.echo_tools:TOOLS``)."""

from __future__ import annotations


def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


def shout(text: str) -> str:
    """Return the text in capitals."""
    return text.upper()


TOOLS = [echo, shout]
