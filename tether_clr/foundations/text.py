"""Text that can always be recorded: Unicode validity, and describing exceptions and values.

Every message a failure outcome carries, every id and name a sink writes, must be
valid Unicode, and building one must never raise. A lone surrogate
(``"\\ud800"``) is valid in a Python ``str`` but cannot be written as UTF-8, so
no JSON text, pydantic record or SQLite row can hold it; an exception's
``__str__`` or an object's ``__repr__`` is user code and may raise. The helpers
here are the one place those two facts are handled.
"""

from __future__ import annotations

from typing import Any

__all__ = ["describe_exception", "exception_text", "is_valid_text", "safe_repr", "safe_text", "safe_text_or_value"]


def is_valid_text(text: str) -> bool:
    """True when ``text`` can be written as UTF-8 (it holds no lone surrogate); ``TypeError`` if not a str."""
    if not isinstance(text, str):
        raise TypeError(f"expected text, got {type(text).__name__}")
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def safe_text(text: str) -> str:
    """``text`` with each lone surrogate written as the six characters ``\\udXXX``.

    Valid text is returned as is. This is Python's ``backslashreplace``: readable,
    and distinct surrogates stay distinct.
    """
    if is_valid_text(text):
        return text
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def safe_text_or_value(value: Any) -> Any:
    """:func:`safe_text` for text; anything else unchanged (optional record fields)."""
    if type(value) is str and value.isascii():  # the usual id or name: nothing to escape
        return value
    return safe_text(value) if isinstance(value, str) else value


def _type_name(value: object) -> str:
    try:
        name = type(value).__name__
        return safe_text(name) if isinstance(name, str) else "object"
    except Exception:
        return "object"


def exception_text(exc: BaseException) -> str:
    """``str(exc)`` made recordable; ``""`` when ``__str__`` raises or returns nothing."""
    try:
        text = str(exc)
    except Exception:
        return ""
    return safe_text(text)


def describe_exception(exc: BaseException) -> str:
    """``Type: message``, the form every TOOL_ERROR message takes; never raises.

    An exception whose ``__str__`` raises is described by its type name alone.
    """
    name = _type_name(exc)
    text = exception_text(exc)
    return f"{name}: {text}" if text else name


def safe_repr(value: Any, limit: int = 200) -> str:
    """``repr(value)`` made recordable and cut to ``limit`` characters; ``<Type>`` when repr raises."""
    try:
        text = repr(value)
    except Exception:
        return f"<{_type_name(value)}>"
    text = safe_text(text) if isinstance(text, str) else f"<{_type_name(value)}>"
    return text if len(text) <= limit else text[: limit - 3] + "..."
