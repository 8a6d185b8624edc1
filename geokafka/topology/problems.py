"""One problem of a topology file, as ``geokafka validate`` lists it and as errors show it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a topology file: ``where`` (file[:line]), the key path, what."""

    where: str
    key: str
    what: str

    def __str__(self) -> str:
        return f"{self.where}: {self.key}: {self.what}" if self.key else f"{self.where}: {self.what}"

    def to_dict(self) -> dict[str, str]:
        """JSON shape (``geokafka --json validate``)."""
        return {"where": self.where, "key": self.key, "what": self.what}
