"""BEAM's scorer prompts, kept WORD FOR WORD.

Source: GitHub ``mohammadtavakoli78/BEAM``, commit ``b2a3ee8ba12d68f83143dda191097dc3e028ddd3``,
files ``src/prompts.py`` (``unified_llm_judge_base_prompt``, L11547-11617) and
``src/evaluation/compute_metrics.py`` (the binary-classifier messages of ``llm_equivalence``,
L105-133). Copyright (c) the BEAM authors (Mohammad Tavakoli et al.), published under the MIT
licence. See also ``../shared/beam/NOTICE`` and ``../shared/beam/upstream-scorer.md``.

Only the prompt TEXT below is copied; every line of code around it is this project's own.
Do not reformat, re-indent or "fix" the strings (typos such as "exaplanation", trailing spaces
and the odd indentation are part of what the judge model sees). ``tests/scoring/test_prompts.py``
checks them byte for byte against the quoted upstream source.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..llm.wire import WireMessage

__all__ = [
    "JUDGE_PROMPT",
    "BINARY_CLASSIFIER_SYSTEM",
    "binary_classifier_user",
    "binary_classifier_messages",
    "unified_llm_judge_base_prompt",
]

# ---- verbatim: src/prompts.py L11547-11617 @ b2a3ee8 (MIT, BEAM authors) ----------------------
unified_llm_judge_base_prompt = """
You are an expert evaluator tasked with judging whether the LLM's response demonstrates compliance with the specified RUBRIC CRITERION.

## EVALUATION INPUTS
- QUESTION (what the user asked): <question>
- RUBRIC CRITERION (what to check): <rubric_item>
- RESPONSE TO EVALUATE: <llm_response>

## EVALUATION RUBRIC:
The rubric defines a specific requirement, constraint, or expected behavior that the LLM response should demonstrate. 

**IMPORTANT**: Pay careful attention to whether the rubric specifies:
- **Positive requirements** (things the response SHOULD include/do)
- **Negative constraints** (things the response SHOULD NOT include/do, often indicated by "no", "not", "avoid", "absent")

## RESPONSIVENESS REQUIREMENT (anchored to the QUESTION)
A compliant response must be **on-topic with respect to the QUESTION** and attempt to answer it.
- If the response does not address the QUESTION, score **0.0** and stop.
- For negative constraints, both must hold: (a) the response is responsive to the QUESTION, and (b) the prohibited element is absent.

## SEMANTIC TOLERANCE RULES:
Judge by meaning, not exact wording.
- Accept **paraphrases** and **synonyms** that preserve intent.
- **Case/punctuation/whitespace** differences must be ignored.
- **Numbers/currencies/dates** may appear in equivalent forms (e.g., “$68,000”, “68k”, “68,000 USD”, or “sixty-eight thousand dollars”). Treat them as equal when numerically equivalent.
- If the rubric expects a number or duration, prefer **normalized comparison** (extract and compare values) over string matching.

## STYLE NEUTRALITY (prevents style contamination):
Ignore tone, politeness, length, and flourish unless the rubric explicitly requires a format/structure (e.g., “itemized list”, “no citations”, “one sentence”).
- Do **not** penalize hedging, voice, or verbosity if content satisfies the rubric.
- Only evaluate format when the rubric **explicitly** mandates it.

## SCORING SCALE:
- **1.0 (Complete Compliance)**: Fully complies with the rubric criterion.
  - Positive: required element present, accurate, properly executed (allowing semantic equivalents).
  - Negative: prohibited element **absent** AND response is **responsive**.
  
- **0.5 (Partial Compliance)**: Partially complies.
  - Positive: element present but minor inaccuracies/incomplete execution.
  - Negative: generally responsive and mostly avoids the prohibited element but with minor/edge violations.
  
- **0.0 (No Compliance)**: Fails to comply.
  - Positive: required element missing or incorrect.
  - Negative: prohibited element present **or** response is non-responsive/evasive even if the element is absent.

## EVALUATION INSTRUCTIONS:
1. **Understand the Requirement**: Determine if the rubric is asking for something to be present (positive) or absent (negative/constraint).

2. **Parse Compound Statements**: If the rubric contains multiple elements connected by "and" or commas, evaluate whether:
   - **All elements** must be present for full compliance (1.0)
   - **Some elements** present indicates partial compliance (0.5)
   - **No elements** present indicates no compliance (0.0)
   
3. **Check Compliance**: 
   - For positive requirements: Look for the presence and quality of the required element
   - For negative constraints: Look for the absence of the prohibited element

4. **Assign Score**: Based on compliance with the specific rubric criterion according to the scoring scale above.

5. **Provide Reasoning**: Explain whether the rubric criterion was satisfied and justify the score.

## OUTPUT FORMAT:
Return your evaluation in JSON format with two fields:

{
   "score": [your score: 1.0, 0.5, or 0.0],
   "reason": "[detailed explanation of whether the rubric criterion was satisfied and why this justified the assigned score]"
}

NOTE: ONLY output the json object, without any explanation before or after that
"""
# ---- end verbatim -------------------------------------------------------------------------------

#: The per-rubric-item judge prompt. Placeholders: ``<question>``, ``<rubric_item>``,
#: ``<llm_response>`` (upstream only ever fills the last two).
JUDGE_PROMPT: str = unified_llm_judge_base_prompt

# ---- verbatim: the system message content of llm_equivalence, compute_metrics.py @ b2a3ee8 ----
BINARY_CLASSIFIER_SYSTEM: str = """
            You are a binary classifier.
            If the TWO snippets describe the SAME event/fact, reply **YES**
            Otherwise reply **NO**. No extra words.
            DO NOT provide any exaplanation.
        """
# ---- end verbatim -------------------------------------------------------------------------------


def binary_classifier_user(first_paragraph: str, second_paragraph: str) -> str:
    """The user message of upstream's ``llm_equivalence`` (first = rubric event, second = answer line)."""
    # ---- verbatim: the user message content of llm_equivalence, compute_metrics.py @ b2a3ee8 ----
    return f"""First snippet: {first_paragraph} \n
                       Second snippet: {second_paragraph}
                    """
    # ---- end verbatim ---------------------------------------------------------------------------


def binary_classifier_messages(first_paragraph: str, second_paragraph: str) -> list[WireMessage]:
    """``[system, user]`` exactly as upstream builds them for one yes/no equivalence call."""
    return [
        {"role": "system", "content": BINARY_CLASSIFIER_SYSTEM},
        {"role": "user", "content": binary_classifier_user(first_paragraph, second_paragraph)},
    ]
