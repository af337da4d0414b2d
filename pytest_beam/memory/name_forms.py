"""How an entity's name is normalised: one normaliser for writing ``norm_name`` and looking it up.

Extraction and resolution store ``norm_name`` with :func:`normalise_name` (accents, case,
punctuation, a leading "the", people's titles, companies' legal suffixes); the agent's tools
look a name up with :func:`lookup_forms` built on the same function, so "the Louvre" finds the
node written as "Louvre".
"""

from __future__ import annotations

import re
import unicodedata

from .graph_schema import ENTITY_TYPES

_TITLES = {"dr", "mr", "mrs", "ms", "miss", "mx", "prof", "professor", "sir", "dame", "madam", "doctor"}
_ORG_SUFFIXES = {"inc", "ltd", "llc", "corp", "corporation", "co", "gmbh", "plc", "sa", "ag"}
_NON_WORD = re.compile(r"[^\w\s]+")


def normalise_name(name: str, entity_type: str) -> str:
    """The form two names of one ``entity_type`` share when they name the same thing."""
    text = unicodedata.normalize("NFKD", name or "")
    text = "".join(c for c in text if not unicodedata.combining(c)).lower()
    words = _NON_WORD.sub(" ", text).split()
    if words and words[0] == "the" and len(words) > 1:
        words = words[1:]
    if entity_type == "Person":
        while len(words) > 1 and words[0] in _TITLES:
            words = words[1:]
    if entity_type == "Organization":
        while len(words) > 1 and words[-1] in _ORG_SUFFIXES:
            words = words[:-1]
    return " ".join(words)


def lookup_forms(name: str) -> list[str]:
    """Every ``norm_name`` a node called ``name`` may carry (the agent does not say its type);
    the first is the type-neutral form, used for partial matches."""
    neutral = normalise_name(name, "Topic")
    forms = {normalise_name(name, entity_type) for entity_type in ENTITY_TYPES} - {neutral}
    return [neutral, *sorted(forms)]
