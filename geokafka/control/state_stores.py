"""An owned registry of state stores: one :class:`~geokafka.control.state_store.KafkaStateStore` per cluster and
credentials, made when first asked for and closed together by the registry's owner.

A mirror holds one for its run (every flow of a target shares that target's store and its incremental reads); a
command holds one for its life. Nothing is shared between owners: closing one registry never touches a store of
another, as MirrorMaker 2's connectors each own their ``OffsetSyncStore`` and close it with their other
``BackgroundResources``. The key is the bootstrap and a keyed digest of the security settings (a random key per
registry): it names no secret, in a repr, a log line or a heap dump.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import TracebackType

from geokafka.control.connection import ClusterConnection
from geokafka.control.state_store import KafkaStateStore

StoreKey = tuple[str, str]
"""(bootstrap, digest of the security settings)."""


class StateStores:
    """The state stores one owner uses, one per cluster and credentials; a context manager that closes them.

    Thread-safe: a mirror's flows ask for their stores from their own threads.
    """

    def __init__(self, make: Callable[[ClusterConnection], KafkaStateStore] = KafkaStateStore) -> None:
        self._make = make
        self._salt = os.urandom(16)
        self._stores: dict[StoreKey, KafkaStateStore] = {}
        self._lock = threading.Lock()

    def __enter__(self) -> StateStores:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"StateStores({', '.join(sorted(store.name for store in self._stores.values()))})"

    def key_of(self, conn: ClusterConnection) -> StoreKey:
        """The key of ``conn``'s store: its bootstrap and a digest of its security settings (no secret)."""
        settings = repr(sorted(conn.security.items())).encode()
        return conn.bootstrap, hmac.new(self._salt, settings, hashlib.sha256).hexdigest()

    def of(self, conn: ClusterConnection) -> KafkaStateStore:
        """The state store of the cluster ``conn`` reaches with ``conn``'s credentials, made on first use."""
        key = self.key_of(conn)
        with self._lock:
            store = self._stores.get(key)
            if store is None:
                store = self._stores[key] = self._make(conn)
            return store

    def close(self) -> None:
        """Close every store made here, once, and forget them (a later :meth:`of` makes a new one, for the next
        close)."""
        with self._lock:
            stores = list(self._stores.values())
            self._stores.clear()
        for store in stores:
            store.close()


@contextmanager
def using(stores: StateStores | None) -> Iterator[StateStores]:
    """The caller's stores (left open: they are the caller's), or stores of the block's own, closed at its end: how a
    command or library call that may be handed its owner's stores gets them."""
    if stores is not None:
        yield stores
        return
    with StateStores() as own:
        yield own
