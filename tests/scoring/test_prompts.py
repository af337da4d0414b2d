"""The prompts in pytest_beam/scoring/prompts.py are byte-identical to BEAM's, as quoted upstream."""

from __future__ import annotations

import inspect
import re

import pytest

from pytest_beam.scoring import prompts

from .beam_files import beam_file


def _md() -> str:
    return beam_file("upstream-scorer.md").read_text(encoding="utf-8")


def _judge_block(md: str) -> str:
    start = md.index('unified_llm_judge_base_prompt = """\n')
    end = md.index('\n"""\n', start) + len('\n"""')
    return md[start:end]


def _python_block_defining(md: str, name: str) -> str:
    for block in re.findall(r"```python\n(.*?)```", md, re.DOTALL):
        if f"def {name}(" in block:
            return block
    raise AssertionError(f"no python block defines {name} in upstream-scorer.md")


def test_judge_prompt_source_is_byte_identical():
    block = _judge_block(_md())
    source = inspect.getsource(prompts)
    assert block in source
    assert source.encode("utf-8").count(block.encode("utf-8")) == 1


def test_judge_prompt_value_is_identical():
    namespace: dict = {}
    exec(_judge_block(_md()), namespace)
    assert namespace["unified_llm_judge_base_prompt"] == prompts.JUDGE_PROMPT
    for slot in ("<question>", "<rubric_item>", "<llm_response>"):
        assert prompts.JUDGE_PROMPT.count(slot) == 1


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("Alice moved to Paris", "1. She moved to Paris in May"),
        ("", ""),
        ("{braces} and \\ backslash", "  trailing spaces  \r"),
        ("line\nbreak", "ünïcödé – “quotes”"),  # noqa: RUF001  (deliberate non-ASCII input, en dash included)
    ],
)
def test_binary_classifier_messages_match_upstream(first, second):
    block = _python_block_defining(_md(), "llm_equivalence")
    namespace: dict = {}
    exec(block, namespace)
    sent = []

    class Llm:
        def invoke(self, messages):
            sent.append(messages)

            class Out:
                content = "YES"

            return Out()

    assert namespace["llm_equivalence"](first_paragraph=first, second_paragraph=second, llm=Llm()) is True
    assert sent == [prompts.binary_classifier_messages(first, second)]


def test_binary_classifier_source_is_byte_identical():
    block = _python_block_defining(_md(), "llm_equivalence")
    source = inspect.getsource(prompts)
    system = block[block.index('"content": """\n') + len('"content": '): block.index('"""\n    }', ) + 3]
    assert system in source
    user = block[block.index('f"""First snippet'): block.index('"""\n    }\n\n    messages') + 3]
    assert user in source
