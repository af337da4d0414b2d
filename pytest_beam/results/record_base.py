"""What every model of a run record shares: lenient reading of a record file, and the fields only a run carries.

Readers of a record file ignore fields they do not know, so a record written by a newer version
still loads. Within a run the same models carry a few fields the file does not hold (a question's
phase times, an ingest's calls): they travel to the controller in the run's JSON
(:data:`IN_RUN`) and are left out of the record file.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, SerializationInfo, SerializerFunctionWrapHandler, model_serializer

__all__ = ["IN_RUN", "RECORD_FILE_CONTEXT", "RecordModel", "WithRunOnlyFields"]

#: Validation context for a record read from a file: a question's keys this version does not
#: know (a newer version wrote them) are dropped, not refused.
RECORD_FILE_CONTEXT = {"record_file": True}
#: Serialization context of a model on its way to the controller: with its run-only fields.
IN_RUN = {"in_run": True}


class RecordModel(BaseModel):
    # Records written by a newer version may carry fields this one does not know: ignore them.
    model_config = ConfigDict(extra="ignore")


class WithRunOnlyFields(RecordModel):
    """A record model some of whose fields the run needs on its way to the record (``RUN_ONLY``)
    and the record file does not hold."""

    RUN_ONLY: ClassVar[frozenset[str]] = frozenset()
    OMIT_NONE: ClassVar[bool] = False  # leave out the fields that are None

    @model_serializer(mode="wrap")
    def _without_run_only(self, handler: SerializerFunctionWrapHandler, info: SerializationInfo) -> Any:
        """The record (file, page, report) leaves the run-only fields out; the run's JSON keeps them."""
        data = handler(self)
        if not isinstance(data, dict):
            return data
        if not (info.context or {}).get("in_run"):
            for name in self.RUN_ONLY:
                data.pop(name, None)
        return {k: v for k, v in data.items() if v is not None} if self.OMIT_NONE else data
