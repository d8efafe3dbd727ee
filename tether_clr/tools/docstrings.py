"""A tool's docstring, split into its description and its parameters' descriptions.

Authors document parameters in a docstring section as often as in type hints,
in one of three styles: Google (``Args:``), NumPy (``Parameters`` over a dashed
line) and Sphinx (``:param name: ...``). The sections are parsed with griffe,
the parser pydantic-ai and the OpenAI Agents SDK use for the same job, so a
docstring reads the same here as there.

Style detection is deterministic: griffe's heuristics (a regular expression per
style, looking for a section header at the start of a line) are tried in the
order Sphinx, Google, NumPy, griffe's own order, chosen because Google and
NumPy headers are plain words that also appear in unstructured prose, while a
``:param x:`` field appears in nothing but Sphinx docstrings. A docstring
matching none of them is parsed as Google, which then finds no section and
keeps the whole text. The same text therefore always gives the same result.

griffe logs a warning for what it cannot parse (a missing type, a malformed
line); those are about documentation rendering, not tools, so every warning
is turned off through the parsers' own options and nothing is logged.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

from griffe import Docstring, DocstringSectionKind, Parser, infer_docstring_style

__all__ = ["DocstringParts", "parse_docstring"]

DocstringStyle = Literal["google", "numpy", "sphinx"]

_STYLE_ORDER = [Parser.sphinx, Parser.google, Parser.numpy]
_FALLBACK_STYLE: DocstringStyle = "google"
_QUIET: dict[str, Any] = {"warnings": False, "warn_unknown_params": False, "warn_missing_types": False}
_PARAMETER_KINDS = frozenset({DocstringSectionKind.parameters, DocstringSectionKind.other_parameters})


@dataclass(frozen=True)
class DocstringParts:
    """What a docstring says about a tool.

    ``description`` is the docstring's text without its sections (the whole
    docstring when it has none); ``parameters`` maps each documented parameter
    name to its description; ``style`` is the style the docstring was read in.
    """

    description: str
    parameters: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    style: DocstringStyle | None = None


def detect_style(text: str) -> DocstringStyle:
    """The style ``text`` is read in: the first of Sphinx, Google, NumPy whose section header it contains, else Google.

    The text is framed by a placeholder line on each side, since griffe's
    patterns look for a header between two line breaks, while ``inspect.getdoc``
    and griffe's own ``Docstring`` strip blank lines at both ends.
    """
    style, _ = infer_docstring_style(
        Docstring(f"_\n{text}\n_"), method="heuristics", style_order=_STYLE_ORDER, default=_FALLBACK_STYLE
    )
    return _FALLBACK_STYLE if style is None else style.value  # type: ignore[return-value]


@functools.lru_cache(maxsize=256)
def parse_docstring(text: str | None) -> DocstringParts:
    """Split ``text`` (an already dedented docstring, as from ``inspect.getdoc``) into description and parameters.

    A docstring without sections is kept exactly as written. Only the text
    sections make the description: parameters, returns, raises, examples and
    the other sections are left out (the schema and the result carry them, or
    they are for human readers). Results are cached per text: a tool's
    constructor and ``from_callable`` both read the same docstring.
    """
    if not text or not text.strip():
        return DocstringParts(description="")
    style = detect_style(text)
    sections = Docstring(text).parse(style, **_QUIET)
    if all(section.kind is DocstringSectionKind.text for section in sections):
        return DocstringParts(description=text.strip(), style=style)
    description = "\n\n".join(str(section.value).strip() for section in sections if section.kind is DocstringSectionKind.text)
    parameters: dict[str, str] = {}
    for section in sections:
        if section.kind in _PARAMETER_KINDS:
            for parameter in section.value:
                name = parameter.name.lstrip("*")
                if parameter.description and name not in parameters:
                    parameters[name] = parameter.description.strip()
    return DocstringParts(description=description.strip(), parameters=MappingProxyType(parameters), style=style)
