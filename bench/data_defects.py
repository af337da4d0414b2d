"""The survey of BEAM's known defects on every tier a copy holds, with numbers.

Runaway messages (generation loops and character runs, each repaired under a pinned hash), the
generator's plan markers by shape, and the hits of the mechanical rubric checks with what became
of each (a known_bad_rubric flag with its reason, or read and found sound). The rules and the
tables are pytest_beam.data.survey's; this prints them.

    .venv/bin/python bench/data_defects.py [--data ../shared/beam] [--tiers 100K,500K,1M]
    .venv/bin/python bench/data_defects.py --smoke [--cache DIR]   (1M only: its 9 chats)
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from smoke_options import add_smoke_options, smoke_defaults, use_cache  # noqa: E402

from pytest_beam.data.repairs import repairs  # noqa: E402
from pytest_beam.data.sets import known_bad_rubrics  # noqa: E402
from pytest_beam.data.survey import REVIEWED_AND_SOUND, markers, rubric_findings, runaways  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=os.environ.get("BEAM_DATA") or str(ROOT.parent / "shared" / "beam"))
    parser.add_argument("--tiers", default="100K,500K,1M")
    add_smoke_options(parser)
    args = parser.parse_args()
    smoke_defaults(parser, args, tiers="1M")
    use_cache(args)
    root = Path(args.data).resolve()
    tiers = [t.strip() for t in args.tiers.split(",") if t.strip()]
    started = time.monotonic()

    print("== runaway messages (pytest_beam/data/defects.py; each repaired, pytest_beam/data/repairs.tsv)")
    print(f"{'tier':<6}{'conv':>5}{'msg':>6}  {'kind':<16}{'chars':>9}{'runaway':>9}{'repeats':>9}  repair")
    table = repairs()
    totals: dict[str, list[int]] = {}
    for tier in tiers:
        for r in runaways(root, tier):
            repair = table.get((tier, r.conversation, r.message))
            what = f"{repair.kind}, {repair.removed:,} cut" if repair else "NOT HANDLED"
            print(f"{tier:<6}{r.conversation:>5}{r.message:>6}  {r.kind:<16}{r.characters:>9,}"
                  f"{r.runaway_characters:>9,}{r.repeats:>9,}  {what}")
            row = totals.setdefault(tier, [0, 0, 0])
            row[0] += 1
            row[1] += r.characters
            row[2] += repair.removed if repair else 0
    for tier, (count, chars, cut) in totals.items():
        print(f"{tier}: {count} runaway messages, {chars:,} characters, {cut:,} cut ({cut / chars:.1%})")
    extra = [key for key, r in table.items() if r.kind == "leaked_turn" and key[0] in tiers]
    for tier, conv, msg in extra:
        print(f"{tier} conv {conv} message {msg}: a leaked user turn in an assistant reply "
              f"({table[(tier, conv, msg)].removed} characters of generator words removed)")

    print("\n== plan markers by shape (pytest_beam/data/markers.py), raw chats")
    for tier in tiers:
        survey = markers(root, tier)
        roles = ", ".join(f"{n:,} {role}" for role, n in sorted(survey.by_role.items()))
        print(f"{tier}: {sum(survey.shapes.values()):,} ({roles})")
        for shape, n in survey.shapes.most_common():
            conv, msg = survey.examples[shape]
            print(f"    {n:>7,}  {shape:<24} e.g. conversation {conv}, message {msg}")

    print("\n== rubric checks (pytest_beam/data/survey.py), each hit read against the chat")
    known = known_bad_rubrics()
    for tier in tiers:
        findings = rubric_findings(root, tier)
        flagged = sum(f.question_id in known for f in findings)
        print(f"{tier}: {len(findings)} hits, {flagged} flagged known_bad_rubric, "
              f"{sum(f.question_id in REVIEWED_AND_SOUND for f in findings)} read and sound")
        for f in findings:
            verdict = ("flagged" if f.question_id in known else
                       "sound: " + REVIEWED_AND_SOUND[f.question_id] if f.question_id in REVIEWED_AND_SOUND
                       else "NOT REVIEWED")
            print(f"    {f.check:<12}{f.question_id:<36}{f.detail}\n{'':16}-> {verdict}")
    print(f"\n({time.monotonic() - started:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
