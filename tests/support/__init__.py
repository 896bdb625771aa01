"""Test support shared by the test directories: one copy of the harness, not one per feature.

Importable as ``support`` because pytest puts ``tests/`` on ``sys.path`` when it loads
``tests/conftest.py`` (the default ``prepend`` import mode; ``tests/`` has no
``__init__.py``). Feature-specific parts stay in each directory's ``helpers.py`` as
subclasses of what is here.
"""
