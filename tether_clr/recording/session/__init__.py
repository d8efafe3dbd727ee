"""The session log: an append-only event log per session, its stores, crash repair and resuming.

``SqliteSessionStore(path)`` is the embedded default; ``PostgresSessionStore(dsn)``
lets several processes or hosts share one log. ``store.sink(session, turn, step)``
is the batch sink of one step; ``await store.repair(session)`` closes what a crash
left open; :func:`~tether_clr.recording.session.resume.resume_step` continues a
suspended step through any store's public protocol
(:mod:`tether_clr.recording.session.protocol`). The public names are exported
from ``tether_clr``; see docs/session-log.md.
"""
