"""The catalog's governance pieces: lifecycle, metadata, bindings, assembly.

``lifecycle``, ``metadata`` and ``records`` are floor-2 records; ``assembly``
is floor 3 (it decides what is visible and callable; it never runs a call).
This package module imports none of them, so a floor-2 module can import a
record module without pulling in floor 3. Public names are re-exported from
``tether_clr``.
"""
