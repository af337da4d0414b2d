"""Record/replay cassettes, in the manner of pytest-recording.

File format: JSON Lines. The first line is a header ``{"cassette": "pytest-beam", "version": 2,
"settings": {...}}``: the run's settings that shape its requests or its scores (models per role,
tool mode, agent steps, pass score, scorer, judge runs, ...; ``settings.RECORDED_SETTINGS``), so a
replay takes them from the file instead of needing the same flags, and a miss can say which
setting differs. A version 1 header (no settings) still loads. Every other line is one recorded
response::

    {"fp": "<sha256 of the logical request>", "i": 0, "kind": "chat", "role": "judge",
     "model": "m", "body": "<the raw response body, exactly as received>"}

``fp`` is the request fingerprint (model, messages, tools, tool_choice, response_format,
temperature, seed, max_tokens; never the base URL or the API key) and ``i`` the occurrence of
that identical request (the n-th identical request replays the n-th recorded response; once
they are used up, replay repeats the last one). No request body is stored: the cassette holds
nothing of the chat beyond what the responses themselves contain. A body that is not UTF-8 is
stored base64-encoded under ``body_b64``. On load, the first line for a given (fp, i) wins; a
line that is not a recorded response (e.g. left half-written by a run killed mid-write) raises
:class:`CassetteError` naming the file and line, rather than replaying less than was recorded.

Modes:

* ``none`` — replay only; a miss raises :class:`CassetteMiss`; never any network.
* ``once`` — if the file exists, behave as ``none``; otherwise record everything.
* ``new_episodes`` — replay what is recorded, record what is missing.
* ``all`` — record everything, replacing the file's previous content.

Concurrency (xdist): recording appends one line per response under an exclusive
``fcntl.flock`` on the cassette file itself, so several workers can record into one file at
once with no merge step. What *does* need one decision per run is the mode: ``once`` depends on
whether the file existed when the run started, and ``all`` must empty the file exactly once.
So under xdist the controller calls ``mode = Cassette.prepare(path, mode)`` once before workers
start and workers open ``Cassette(path, mode)`` with the returned mode. In a single process,
the constructor does the same by itself.
"""

from __future__ import annotations

import base64
import json
import os
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import TypedDict, cast

from .errors import CassetteError, CassetteMiss
from .wire import JsonObject

MODES = ("none", "once", "new_episodes", "all")
HEADER = {"cassette": "pytest-beam", "version": 2}


class CassetteEntry(TypedDict, total=False):
    """One recorded response, a line of the cassette: its request's fingerprint and occurrence, who
    asked, and the response body exactly as received (as text, or base64 when it is not UTF-8)."""

    fp: str
    i: int
    kind: str
    role: str
    model: str
    body: str
    body_b64: str


class RecordedSettings(TypedDict, total=False):
    """The header's ``settings``: those of a run's settings that shape its requests or its scores
    (``settings.RECORDED_SETTINGS``, ``settings.recorded_settings``). A header written by another
    version may lack some."""

    model: str | None
    extraction_model: str | None
    resolution_model: str | None
    judge_model: str | None
    embeddings: str
    chunk_tokens: int
    max_llm_pairs: int
    agent_steps: int
    tool_mode: str
    scorer: str
    judge_runs: int
    pass_score: float
    judge_check: str


class QuestionSet(TypedDict, total=False):
    """The header's ``questions``: the question set the run asked (``settings.question_set``);
    ``tier`` only when it is not 100K."""

    mode: str
    conversations: str | None
    keep_markers: bool
    tier: str


def header_line(settings: RecordedSettings | None, questions: QuestionSet | None = None) -> str:
    extra = {**({"settings": settings} if settings is not None else {}),
             **({"questions": questions} if questions is not None else {})}
    return json.dumps({**HEADER, **extra}, sort_keys=True)


def _header_of(line: str) -> JsonObject | None:
    try:
        header = json.loads(line)
    except ValueError:
        return None
    return header if isinstance(header, dict) and header.get("cassette") == HEADER["cassette"] else None


def _first_header(path: str | os.PathLike[str]) -> JsonObject | None:
    try:
        with open(path, encoding="utf-8") as fh:
            first = fh.readline()
        header = json.loads(first)
    except (OSError, ValueError):  # no such file, a folder, not UTF-8, not JSON: replay_problem says
        return None
    return header if isinstance(header, dict) and header.get("cassette") == HEADER["cassette"] else None


def read_settings(path: str | os.PathLike[str]) -> RecordedSettings | None:
    """The settings a cassette was recorded with (its header), None when it does not say (an older
    cassette) or there is no such file; a file that cannot be read is left to :func:`replay_problem`."""
    header = _first_header(path)
    return header["settings"] if header and isinstance(header.get("settings"), dict) else None


def read_questions(path: str | os.PathLike[str]) -> QuestionSet | None:
    """The question set a cassette was recorded on (mode, conversations, markers), None when its
    header does not say."""
    header = _first_header(path)
    return header["questions"] if header and isinstance(header.get("questions"), dict) else None


def _json_why(exc: ValueError) -> str:
    """What json found wrong: a decode error's message (its position is said apart), else the
    error's text (an integer over Python's digit limit is a plain ValueError, with no ``msg``)."""
    return exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)


def replay_problem(path: str | os.PathLike[str]) -> str | None:
    """Why the cassette at ``path`` cannot be replayed, in one line naming it (None: it can). A
    replay of nothing would skip or miss every question, so a run must stop on this instead."""
    path = Path(path)
    where = f"cassette {path}"
    if not path.exists():
        return f"{where} does not exist: nothing recorded to replay (record it with --beam-record-mode=all)"
    if not path.is_file():
        return f"{where} is not a file"
    try:
        text = path.read_bytes().decode("utf-8")
    except OSError as exc:
        return f"{where} cannot be read: {exc.strerror or exc}"
    except UnicodeDecodeError as exc:
        return f"{where} is not UTF-8 text (byte {exc.start}): not a pytest-beam cassette"
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines:
        return f"{where} is empty: nothing recorded to replay (record it with --beam-record-mode=all)"
    try:
        first = json.loads(lines[0])
    except ValueError as exc:
        return f"{where}:1 is not JSON ({_json_why(exc)}): not a pytest-beam cassette"
    if not isinstance(first, dict) or (first.get("cassette") != HEADER["cassette"] and "fp" not in first):
        return f"{where}:1 is not a pytest-beam cassette header or recorded response"
    return None


def _exists(path: Path) -> bool:
    return path.is_file()


class Cassette:
    """``settings``: this run's recorded settings (``settings.recorded_settings``), written into the
    header when recording and compared with the file's on a miss."""

    def __init__(self, path: str | os.PathLike[str], mode: str = "none", settings: RecordedSettings | None = None,
                 questions: QuestionSet | None = None) -> None:
        if mode not in MODES:
            raise ValueError(f"unknown record mode {mode!r}; expected one of {', '.join(MODES)}")
        self.path = Path(path)
        self.requested_mode = mode
        self.settings = settings
        self.questions = questions
        self.mode = self._resolve(self.path, mode, truncate=True, settings=settings, questions=questions)
        self.recorded_settings = read_settings(self.path)
        self.recorded_questions = read_questions(self.path)
        self._lock = threading.Lock()
        self._recorded: dict[str, dict[int, CassetteEntry]] = {}
        self._uses: dict[str, int] = {}
        self.replayed = 0
        self.recorded = 0
        if self.mode in ("none", "new_episodes"):
            self._load()

    # -- mode handling -----------------------------------------------------------------------
    @staticmethod
    def _resolve(path: Path, mode: str, *, truncate: bool, settings: RecordedSettings | None = None,
                 questions: QuestionSet | None = None) -> str:
        if mode == "once":
            return "none" if _exists(path) else "new_episodes"
        if mode == "all":
            if truncate:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(header_line(settings, questions) + "\n", encoding="utf-8")
            return "new_episodes"
        return mode

    @classmethod
    def prepare(cls, path: str | os.PathLike[str], mode: str, settings: RecordedSettings | None = None,
                questions: QuestionSet | None = None) -> str:
        """Decide a run's effective mode once (controller side) and return it for the workers.

        ``once`` becomes ``none`` (file exists) or ``new_episodes`` (it does not); ``all``
        empties the file and becomes ``new_episodes``; the others are returned unchanged.
        """
        if mode not in MODES:
            raise ValueError(f"unknown record mode {mode!r}; expected one of {', '.join(MODES)}")
        return cls._resolve(Path(path), mode, truncate=True, settings=settings, questions=questions)

    @staticmethod
    def refresh_header(path: str | os.PathLike[str], settings: RecordedSettings,
                       questions: QuestionSet | None = None) -> bool:
        """Rewrite the header of a cassette that holds no response yet with ``settings``: the
        session settles some settings after ``prepare`` (the embedded model's name and tool mode),
        and a replay must find the ones the requests were made with. True when rewritten."""
        path = Path(path)
        if not path.is_file():
            return False
        lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        if len(lines) > 1 or (lines and _header_of(lines[0]) is None):
            return False  # responses recorded (or not our header): the file stays as it was
        path.write_text(header_line(settings, questions) + "\n", encoding="utf-8")
        return True

    @property
    def allows_network(self) -> bool:
        return self.mode != "none"

    @property
    def records(self) -> bool:
        return self.mode != "none"

    # -- storage -----------------------------------------------------------------------------
    def _load(self) -> None:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return
        except UnicodeDecodeError as exc:
            raise self._broken(_line_of(self.path, exc.start), "not UTF-8 text: not a pytest-beam cassette") from None
        for number, line in enumerate(text.splitlines(), start=1):
            line = line.strip()
            if not line:
                continue
            entry = self._entry(line, number)
            if entry is not None:
                self._recorded.setdefault(entry["fp"], {}).setdefault(int(entry["i"]), entry)

    def _entry(self, line: str, number: int) -> CassetteEntry | None:
        """The recorded response on one line, None for the header; :class:`CassetteError` otherwise."""
        try:
            entry = json.loads(line)
        except ValueError as exc:
            raise self._broken(number, f"not JSON ({_json_why(exc)}); a run killed while recording leaves "
                                       "such a line: delete it, or record the cassette again") from None
        if not isinstance(entry, dict):
            raise self._broken(number, "not a JSON object")
        if "fp" not in entry and entry.get("cassette") == HEADER["cassette"]:
            return None
        if not isinstance(entry.get("fp"), str):
            raise self._broken(number, "no request fingerprint 'fp'")
        if isinstance(entry.get("i"), bool) or not isinstance(entry.get("i", 0), int):
            raise self._broken(number, f"occurrence 'i' is not an integer: {entry.get('i')!r}")
        if not isinstance(entry.get("body"), str) and not isinstance(entry.get("body_b64"), str):
            raise self._broken(number, "no response 'body' (or 'body_b64')")
        entry.setdefault("i", 0)
        return cast("CassetteEntry", entry)  # its keys checked above

    def _broken(self, number: int, why: str) -> CassetteError:
        return CassetteError(f"cassette {self.path}:{number}: {why}", path=str(self.path), line=number, why=why)

    @staticmethod
    def _body_of(entry: CassetteEntry) -> bytes:
        if "body_b64" in entry:
            return base64.b64decode(entry["body_b64"])
        return entry["body"].encode("utf-8")

    # -- API used by the client -----------------------------------------------------------------
    def lookup(self, fp: str) -> tuple[int, bytes | None]:
        """Take the next occurrence of request ``fp``: ``(occurrence, body or None for a miss)``.

        Every call counts as one occurrence of the request. In ``none`` mode a request used
        more often than recorded gets the last recorded response again. Pass the occurrence
        back to :meth:`record` after a miss.
        """
        with self._lock:
            index = self._uses.get(fp, 0)
            self._uses[fp] = index + 1
            responses = self._recorded.get(fp)
            if not responses:
                return index, None
            entry = responses.get(index)
            if entry is None:
                if self.mode != "none":
                    return index, None
                entry = responses[max(responses)]
            self.replayed += 1
            return index, self._body_of(entry)

    def record(self, fp: str, index: int, body: bytes, *, role: str, model: str, kind: str = "chat") -> None:
        """Append the response for occurrence ``index`` of request ``fp`` (after a miss)."""
        if self.mode == "none":
            raise RuntimeError("cassette is in replay-only mode 'none'")
        entry: CassetteEntry = {"fp": fp, "i": int(index), "kind": kind, "role": role, "model": model}
        try:
            entry["body"] = body.decode("utf-8")
        except UnicodeDecodeError:
            entry["body_b64"] = base64.b64encode(body).decode("ascii")
        with self._lock:
            self._recorded.setdefault(fp, {}).setdefault(int(index), entry)
            self.recorded += 1
            self._append_line(json.dumps(entry, ensure_ascii=False, sort_keys=True))

    def _append_line(self, line: str) -> None:
        # Not pytest_beam.files.file_lock: that locks a sibling ``.lock`` file, which would be left
        # beside a cassette that is committed to a repository. Locking the cassette itself needs no
        # second file, and readers never lock.
        import fcntl

        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a", encoding="utf-8") as f:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX)
            try:
                if f.seek(0, os.SEEK_END) == 0:
                    f.write(header_line(self.settings, self.questions) + "\n")
                f.write(line + "\n")
                f.flush()
            finally:
                fcntl.flock(f.fileno(), fcntl.LOCK_UN)

    def miss(self, *, fp: str, role: str, model: str) -> CassetteMiss:
        return CassetteMiss(
            f"No recorded response in cassette {self.path} for a {role} request (model {model}, "
            f"fingerprint {fp[:12]}) and record mode is 'none' (no network). {self.why_missed()} Record it "
            f"with --beam-record-mode=new_episodes against a model endpoint.",
            cassette=str(self.path), role=role, model=model, fingerprint=fp,
        )

    def why_missed(self) -> str:
        """Which setting differs between the recording and this run, or that none does."""
        other_set = _differences(self.recorded_questions, self.questions, "; ")
        if other_set:
            return (f"The cassette was recorded on a different question set: {other_set}; its requests "
                    "are those of its own questions: replay it on the set it was recorded on.")
        recorded, current = self.recorded_settings, self.settings
        if recorded is None:
            return ("The cassette does not say which settings it was recorded with (an older cassette): "
                    "give the flags it was recorded with, or record it again.")
        if current is None:
            return "The cassette was recorded with " + _listed(recorded) + "."
        differ = _differences(recorded, current, "; ")
        if differ:
            return ("Settings differ from the recording: " + differ
                    + " (a flag given on the command line overrides the cassette's setting).")
        return ("This run's settings match the recording's, so the request itself changed: a prompt or "
                "the code that builds requests differs from the version that recorded the cassette.")

    def __len__(self) -> int:
        return sum(len(v) for v in self._recorded.values())

    def __repr__(self) -> str:
        return f"Cassette({str(self.path)!r}, mode={self.requested_mode!r})"


def _differences(recorded: Mapping[str, object] | None, current: Mapping[str, object] | None, sep: str) -> str:
    """What differs between two headers' dicts, as flags ('' when either is unknown or none does)."""
    if recorded is None or current is None:
        return ""
    return sep.join(f"{_flag(n)} was {recorded.get(n)!r} when recorded, {current.get(n)!r} in this run"
                    for n in sorted(set(recorded) | set(current)) if recorded.get(n) != current.get(n))


def _line_of(path: Path, offset: int) -> int:
    """The 1-based line of byte ``offset`` in the file at ``path``."""
    return path.read_bytes()[:offset].count(b"\n") + 1


def _flag(name: str) -> str:
    return "--beam-" + name.replace("_", "-")


def _listed(settings: Mapping[str, object]) -> str:
    return ", ".join(f"{_flag(k)}={v}" for k, v in sorted(settings.items()) if v is not None)
