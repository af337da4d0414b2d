"""The judge check's two bars and the words for what the second one counts.

A leaf (no imports of ours), so the settings table and the command line's help can state the
defaults without loading the judge; every text and page that names the bars takes them from here.

Kappa alone is not enough: the empty answers, other questions' references and the event-pair
cases are easy, and they carry the embedded model to kappa 0.71 on the full set, over 0.6, while
it fails 76 of 193 right answers (66 of 183 references, 10 of 10 "I don't know" to abstention
questions). Benchmark answers are mostly near-right, so the share of right answers a judge fails
says whether a low score is the system's; 0.15 sits below that measured share's 95% Wilson
interval (0.39, 0.33-0.46). docs/judge-calibration.md has the measurements.
"""

from __future__ import annotations

DEFAULT_BAR = 0.6
DEFAULT_FAIL_BAR = 0.15

# What the second bar counts, as every output words it.
RIGHT_ANSWERS_FAILED = "right answers failed (references on their own items, 'I don't know' to abstention)"

__all__ = ["DEFAULT_BAR", "DEFAULT_FAIL_BAR", "RIGHT_ANSWERS_FAILED"]
