"""The test suite, in folders that mirror the package's layers.

``foundations/``, ``records/``, ``tools/``, ``catalog/``, ``execution/``,
``recording/`` (``recording/session/`` for the session log and its stores),
``clr/``, ``projections/`` and ``cli/`` test the subpackage of the same name; the tests at this
level span the layers (the layout's rules, the public surface, the docs, the
benchmarks, the demo, the front door's registry, hostile input end to end).
What several tests share is in ``tests/support/`` (``from tests.support import ...``);
fixtures are in the ``conftest.py`` files.
"""
