"""The commands' side of :class:`~precision_tool.alignment.workspace_lookup.WorkspaceLookup`: one per workspace
and run for a shell session (:func:`lookup_for`), and the graph lookup's notes added to a command's report."""
from __future__ import annotations

import os
from typing import Sequence

from precision_tool.alignment.workspace_lookup import WorkspaceLookup
from precision_tool.commands.command_registry import Context


def without_graph(report, notes: Sequence[str]):
    """``report`` -- made from the dumps alone because no Build graph could be used -- with the graph lookup's
    ``notes``; when some of them name a Build graph entry that could not be read (a FIFO, a dangling link ...:
    with no graph found, every note is one), the listing may lack what that graph holds, so the report exits 2
    and its status names the first. Returns ``report``."""
    from precision_tool.errors import EXIT_UNUSABLE_INPUT

    if not notes:
        return with_graph_notes(report, notes)
    report.exit_code = max(report.exit_code, EXIT_UNUSABLE_INPUT)
    report.status = f"made from the dump files alone: the Build graph could not be read ({notes[0]})"
    if notes[1:]:
        report.add_text(*notes[1:])
    report.data["graph_notes"] = list(notes)
    return report


def with_graph_notes(report, notes: Sequence[str]):
    """``report`` with a graph lookup's notes (:attr:`WorkspaceLookup.graph_notes`) as its last text block and
    in its data as ``graph_notes`` (a list, empty when there are none); returns ``report``."""
    if notes:
        report.add_text(*notes)
    report.data["graph_notes"] = list(notes)
    return report


def lookup_for(ctx: Context, run: int = 0) -> WorkspaceLookup:
    """The :class:`WorkspaceLookup` of run ``run`` for this context, reading its dumps at ``ctx.selection``; its
    caches are kept in ``ctx.session.lookups``: one per workspace and run for a whole shell session."""
    lookups = ctx.session.lookups
    key = (os.path.abspath(ctx.data_dir), run)
    if key not in lookups:
        lookups[key] = WorkspaceLookup(ctx.data_dir, run)
    return lookups[key].reading(ctx.selection)
