"""10M's plans joined into one conversation, as BEAM's own code joins them.

10M's conversations are stored upstream as ten plans, ``chats/10M/<n>/plan-<k>/chat.json``, each
a chat in the usual layout whose message ids start at 0, beside the joined
``chats/10M/<n>/chat.json`` that BEAM's own code reads (``src/beam/download_dataset.py``,
``combine_10m_chats``: a list ``[{"plan-1": sessions}, {"plan-2": sessions}, ...]`` in plan order,
each plan's ids moved up by the previous plan's last id + 1, so ids run 0..N-1 across the
conversation, the ids the probing questions' ``source_chat_ids`` cite; ``answer_probing_questions``
walks plans, then sessions, in that order). The joined file is read when it is there
(:mod:`pytest_beam.data.local_copy`); otherwise the plan folders are joined the same way here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from . import pins
from .data_error import BeamDataError
from .sources import RawItem, upstream_sessions
from .tiers import tier as tier_of


def joined_plan_sessions(joined: Any, path: Path) -> list[list[RawItem]]:
    """10M's joined chat.json as BEAM's code walks it: ``[{"plan-1": sessions}, ...]``, plans in list order."""
    if not isinstance(joined, list) or not all(isinstance(p, dict) and len(p) == 1 for p in joined):
        raise BeamDataError(f"{path}: not 10M's joined layout, a list of {{\"plan-<k>\": sessions}}")
    return [session for plan in joined for session in upstream_sessions(next(iter(plan.values())), path)]


def join_plans(plans: list[list[list[RawItem]]]) -> list[list[RawItem]]:
    """The plans' sessions as one conversation, each plan's ids moved up by the previous plan's last id
    + 1 (``combine_10m_chats`` upstream; the plans' own files count from 0), without changing them."""
    joined: list[list[RawItem]] = []
    offset = 0
    for number, sessions in enumerate(plans):
        moved = [[{**m, "id": int(m["id"]) + offset} if "id" in m else dict(m) for m in s] for s in sessions]
        joined.extend(moved)
        last = [m["id"] for s in moved for m in s if "id" in m]
        if number + 1 < len(plans) and last:
            offset = int(last[-1]) + 1
    return joined


def plan_numbers(root: Path, tier: str, conversation: str, pinned: dict[str, pins.FilePin]) -> list[int]:
    """The plans a 10M conversation has: those the pins list for it (a missing one is an error, never a
    shorter conversation), else the folders present."""
    spec = tier_of(tier)
    prefix = f"chats/{tier}/{conversation}/plan-"
    listed = sorted(int(p[len(prefix):].split("/")[0]) for p in pinned
                    if p.startswith(prefix) and p.endswith("/chat.json"))
    if listed:
        return listed
    folder = root / f"chats/{tier}/{conversation}"
    found = sorted(int(d.name[5:]) for d in folder.glob("plan-*") if d.name[5:].isdigit())
    return [k for k in found if (root / spec.plan_path(conversation, k)).is_file()]
