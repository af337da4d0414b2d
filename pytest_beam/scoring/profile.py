"""What a scoring profile is: the rules that turn a judge's verdicts into a question's score.

A profile fixes every choice that moves a score -- whether the judge prompt's ``<question>`` slot
is filled, what a judge's 0.5 counts for, how event ordering is scored -- so two records scored
under different profiles are not comparable, and the profile is recorded with every run. Each
profile is an object that carries its rules (``beam_profiles.py``: ``default`` and ``upstream``;
``omnimemeval.py``); the code that scores never branches on a profile's name.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from functools import partial
from typing import ClassVar

from ..data.records import ProbingQuestion
from .judge import JudgeModel, require_rubric
from .profile_names import ProfileName
from .repeats import judge_repeatedly
from .scores import ItemScore, QuestionScore

__all__ = ["ScoringProfile"]

EVENT_ORDERING = "event_ordering"


class ScoringProfile(ABC):
    """One way of scoring BEAM. Subclasses say what they are (the class variables, printed in
    records and reports) and how they judge a rubric item and an event-ordering answer."""

    name: ClassVar[ProfileName]
    question_in_prompt: ClassVar[bool]
    half_credit: ClassVar[str]
    event_ordering: ClassVar[str]
    matches: ClassVar[str]

    def score(self, question: ProbingQuestion, answer: str, judge: JudgeModel, judge_runs: int = 1) -> QuestionScore:
        """Score ``answer``: event_ordering by the profile's event metric, every other ability
        item by item against the rubric; every judge call has ``role="judge"``; ``judge_runs`` N > 1
        repeats every judge decision (each repeat its own cached call) and keeps the mean."""
        if judge_runs < 1:
            raise ValueError(f"judge runs {judge_runs} must be at least 1")
        if question.ability == EVENT_ORDERING:
            return self.score_events(question, answer, judge, judge_runs)
        return self.score_rubric(question, answer, judge, judge_runs)

    def score_rubric(self, question: ProbingQuestion, answer: str, judge: JudgeModel,
                     judge_runs: int = 1) -> QuestionScore:
        """One judge call per rubric item (per run); the question scores the mean of its items."""
        require_rubric(question)
        items: list[ItemScore] = []
        flags: set[str] = set()
        calls = 0
        for rubric_item in question.rubric:
            item, item_flags, item_calls = judge_repeatedly(
                partial(self.judge_item, question.question, rubric_item, answer, judge), judge_runs)
            items.append(item)
            flags |= item_flags
            calls += item_calls
        return QuestionScore(question_id=question.id, ability=question.ability, mode=self.name,
                             score=sum(i.score for i in items) / len(items), items=items, flags=sorted(flags),
                             judge_calls=calls)

    @abstractmethod
    def fill_prompt(self, question: str, rubric_item: str, answer: str) -> str:
        """BEAM's judge prompt for one rubric item, its slots filled as this profile fills them."""

    @abstractmethod
    def judge_item(self, question: str, rubric_item: str, answer: str, judge: JudgeModel,
                   repeat: int = 0) -> tuple[ItemScore, set[str], int]:
        """One rubric item judged once: the item, the flags it raises and the judge calls it took."""

    @abstractmethod
    def score_events(self, question: ProbingQuestion, answer: str, judge: JudgeModel,
                     judge_runs: int = 1) -> QuestionScore:
        """An event_ordering answer against the rubric's ordered events."""
