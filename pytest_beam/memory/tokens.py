"""Offline token counting for chunking and estimates.

`tiktoken` downloads its encodings on first use, which fails offline. The `cl100k_base`
vocabulary (OpenAI's, MIT, as tiktoken publishes it) ships beside this module and is checked
against the sha256 tiktoken itself pins for it before it is read; the encoding is built from it
directly, so no tiktoken plugin (code in the ``tiktoken_ext`` namespace) is looked up or run.
Token counts for *cost* come from the endpoint's `usage`; these counts only size chunks and
estimates, so a different model's tokenizer being a little off is fine.

`tiktoken` is imported lazily, on the first count.
"""

from __future__ import annotations

import threading
from itertools import pairwise
from pathlib import Path

ENCODING_NAME = "cl100k_base_offline"  # the name chunk records and estimates have always carried
VOCABULARY_PATH = Path(__file__).with_name("cl100k_base.tiktoken")
VOCABULARY_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"
#: cl100k_base's pre-tokenizer pattern and special tokens (tiktoken's definition of the encoding).
_PATTERN = (r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
            r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s""")
_SPECIAL_TOKENS = {"<|endoftext|>": 100257, "<|fim_prefix|>": 100258, "<|fim_middle|>": 100259,
                   "<|fim_suffix|>": 100260, "<|endofprompt|>": 100276}
_lock = threading.Lock()
_encoding = None


class TokenizerUnavailable(RuntimeError):
    """`tiktoken` is not installed."""


def load_encoding(path: Path = VOCABULARY_PATH, sha256: str = VOCABULARY_SHA256):  # -> tiktoken.Encoding
    """The cl100k encoding from the vocabulary at ``path``, refused (``PinnedFileMismatch``
    naming the file) unless its sha256 is ``sha256``."""
    from .pinned import verified

    try:
        import tiktoken
        from tiktoken.load import load_tiktoken_bpe
    except ImportError as exc:
        raise TokenizerUnavailable(f"offline token counting needs `tiktoken`: {exc}") from None
    ranks = load_tiktoken_bpe(str(verified(path, sha256)), expected_hash=sha256)
    return tiktoken.Encoding(ENCODING_NAME, pat_str=_PATTERN, mergeable_ranks=ranks,
                             special_tokens=_SPECIAL_TOKENS)


def _get_encoding():
    global _encoding
    if _encoding is None:
        with _lock:
            if _encoding is None:
                _encoding = load_encoding()
    return _encoding


def count_tokens(text: str) -> int:
    if not text:
        return 0
    return len(_get_encoding().encode(text, disallowed_special=()))


def split_by_tokens(text: str, max_tokens: int, first_tokens: int | None = None) -> list[str]:
    """Cut `text` into consecutive pieces of at most about `max_tokens` tokens (the first piece
    at most `first_tokens`, if given).

    Cuts fall on whitespace where one lies in the last fifth of a window, so words stay whole;
    joining the pieces gives back the text exactly.
    """
    if max_tokens < 1 or (first_tokens is not None and first_tokens < 1):
        raise ValueError("token limits must be at least 1")
    encoding = _get_encoding()
    tokens = encoding.encode(text, disallowed_special=())
    if len(tokens) <= (first_tokens or max_tokens):
        return [text]
    _, offsets = encoding.decode_with_offsets(tokens)
    cuts: list[int] = []
    start_token = 0
    start_char = 0
    window = first_tokens or max_tokens
    while len(tokens) - start_token > window:
        end_token = start_token + window
        cut = offsets[end_token]
        floor = offsets[start_token + max(1, (window * 4) // 5)]
        space = max(text.rfind(" ", floor, cut), text.rfind("\n", floor, cut))
        if space > start_char:
            cut = space + 1
        if cut <= start_char:  # a window inside one multi-byte character: take it whole
            cut = offsets[end_token] if offsets[end_token] > start_char else len(text)
        cuts.append(cut)
        start_char = cut
        # first token that starts at or after the cut
        while start_token < len(tokens) and offsets[start_token] < cut:
            start_token += 1
        window = max_tokens
    bounds = [0, *cuts, len(text)]
    return [text[a:b] for a, b in pairwise(bounds) if b > a]
