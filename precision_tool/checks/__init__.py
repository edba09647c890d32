"""Checks on a whole workspace: overflow, fusion, and ``ac``'s orchestration and verdict.

Between :mod:`precision_tool.comparison` and :mod:`precision_tool.reports` in the layering: these modules read
through :mod:`~precision_tool.formats`, :mod:`~precision_tool.alignment`, :mod:`~precision_tool.metrics` and
the comparator, and return frozen records (each with ``to_dict()`` for ``--json``); they never print. The
checks: :mod:`.overflow_records`, :mod:`.nonfinite`, :mod:`.casts`, :mod:`.exception_dumps`,
:mod:`.fusion_summary`, :mod:`.fusion_compare`; ``ac``: :mod:`.autocheck` and :mod:`.run_verdict`; ``bisect``'s
search: :mod:`.bisect_search`. See docs/internals/checks.md#modules.
"""
