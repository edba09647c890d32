"""Checks on a whole workspace: overflow, fusion, and ``ac``'s orchestration and verdict.

Between :mod:`precision_tool.comparison` and :mod:`precision_tool.reports` in the layering: these modules read
through :mod:`~precision_tool.formats`, :mod:`~precision_tool.alignment`, :mod:`~precision_tool.metrics` and
the comparator, and return frozen records (each with ``to_dict()`` for ``--json``); they never print.

- :mod:`.tensor_summary` -- streamed max/min/mean and inf/NaN/saturation counts of one dump tensor;
- :mod:`.overflow` -- Opdebug records decoded, ordered by timestamp, located by task/stream id, with tensor stats;
- :mod:`.nonfinite` -- without records: the dumps scanned for inf/NaN and fp16 saturation, where they appear;
- :mod:`.casts` -- Cast ops that lose information (float -> int, fp32 -> fp16 beyond range, ...);
- :mod:`.exception_dumps` -- exception dumps (the inputs of an op that raised an AI Core error), listed apart;
- :mod:`.fusion` -- passes that fired and fused ops with the TF ops they replaced (what ``ls -f`` filters);
- :mod:`.fusion_compare` -- fusion-on vs fusion-off run: the fused ops that compute something else, and why
  that rule (the fp16 thresholds are documented there);
- :mod:`.autocheck` and :mod:`.verdict` -- ``ac``: the three sections, then the most likely culprit.
"""
