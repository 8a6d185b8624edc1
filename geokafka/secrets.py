"""Secrets: read from where the topology points (env var or file), and kept out of text.

The bottom layer: every other package reads secrets through here, so :func:`redact` knows
every value this process has seen.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Protocol

from geokafka.errors import AuthError

REDACTED = "******"
_MIN_REDACTED = 4  # shorter secrets are not searched for: they would shred ordinary words
_seen_secrets: set[str] = set()


class SecretSource(Protocol):
    """Where a secret lives: an environment variable or a file (the topology's ``SecretRef``)."""

    @property
    def env(self) -> str | None: ...

    @property
    def file(self) -> Path | None: ...


def read_secret(ref: SecretSource | None, where: str) -> str:
    """The secret value behind ``ref``; errors name the reference, never the value.

    Every value read is remembered (in memory) so that :func:`redact` can remove it from
    text that came from elsewhere (a Java stack trace, a broker's message).
    """
    if ref is None:
        raise AuthError(f"{where}: no secret configured")
    if ref.env is not None:
        value = os.environ.get(ref.env)
        if value is None:
            raise AuthError(f"{where}: environment variable {ref.env} is not set")
    else:
        assert ref.file is not None
        try:
            value = ref.file.read_text(encoding="utf-8").rstrip("\n")
        except OSError as exc:
            raise AuthError(f"{where}: cannot read secret file {ref.file}: {exc.strerror}") from None
    remember_secret(value)
    return value


def remember_secret(value: str) -> None:
    """Have :func:`redact` hide ``value`` (and its JAAS-escaped form) from now on."""
    for form in (value, jaas_quote(value)):
        if len(form) >= _MIN_REDACTED:
            _seen_secrets.add(form)


def redact(text: str) -> str:
    """``text`` with every secret this process has read replaced by ``******``.

    The last line of defence for text geokafka did not write itself (Spark and Kafka
    errors) before it is printed or stored; geokafka's own messages never hold secrets.
    """
    for secret in sorted(_seen_secrets, key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, REDACTED)
    return text


def jaas_quote(value: str) -> str:
    """Escape a value for a double-quoted JAAS option (the parser unescapes backslashes too)."""
    return value.replace("\\", "\\\\").replace('"', '\\"')
