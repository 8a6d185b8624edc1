"""The owned registry of state stores: one store per cluster and credentials, keyed without secrets, closed by its
owner alone."""

from __future__ import annotations

import threading

from geokafka.control.connection import ClusterConnection
from geokafka.control.state_store import KafkaStateStore
from geokafka.control.state_stores import StateStores, using

PASSWORD = "s3cret-pa55word"


def conn(name: str = "west", bootstrap: str = "west:9092", user: str = "mirror", password: str = PASSWORD
         ) -> ClusterConnection:
    return ClusterConnection(name, bootstrap, {"security.protocol": "sasl_ssl", "sasl.mechanism": "PLAIN",
                                               "sasl.username": user, "sasl.password": password})


class CountingStore(KafkaStateStore):
    """A Kafka store that counts its closes (it opens no client until it is used)."""

    def __init__(self, connection: ClusterConnection) -> None:
        super().__init__(connection)
        self.closes = 0

    def close(self) -> None:
        self.closes += 1
        super().close()


def test_one_store_per_cluster_and_credentials() -> None:
    with StateStores() as stores:
        west = stores.of(conn())
        assert stores.of(conn()) is west
        assert stores.of(conn(name="west-alias")) is west  # the same cluster and credentials under another name
        assert stores.of(conn(bootstrap="south:9092")) is not west


def test_different_credentials_get_different_stores() -> None:
    with StateStores() as stores:
        assert stores.of(conn(password="one")) is not stores.of(conn(password="two"))
        assert stores.of(conn(user="reader")) is not stores.of(conn())


def test_keys_hold_no_secret() -> None:
    stores = StateStores()
    key = stores.key_of(conn())
    assert key[0] == "west:9092"
    assert PASSWORD not in repr(key) and "mirror" not in key[1]
    stores.of(conn())
    assert PASSWORD not in repr(stores)
    assert StateStores().key_of(conn()) != key  # a digest keyed per registry: nothing to look up across owners


def test_close_closes_each_store_once_and_a_later_of_makes_a_new_one() -> None:
    stores = StateStores(CountingStore)
    west, south = stores.of(conn()), stores.of(conn(bootstrap="south:9092"))
    assert isinstance(west, CountingStore) and isinstance(south, CountingStore)
    stores.close()
    stores.close()
    assert (west.closes, south.closes) == (1, 1)
    again = stores.of(conn())
    assert again is not west
    stores.close()
    assert (west.closes, again.closes) == (1, 1)


def test_a_registry_closing_leaves_another_registrys_stores_alone() -> None:
    mine, theirs = StateStores(CountingStore), StateStores(CountingStore)
    kept = theirs.of(conn())
    closed = mine.of(conn())
    assert kept is not closed
    mine.close()
    assert isinstance(kept, CountingStore) and kept.closes == 0
    theirs.close()
    assert kept.closes == 1


def test_one_store_for_every_thread() -> None:
    stores = StateStores()
    start = threading.Barrier(8)
    got: list[KafkaStateStore] = []

    def ask() -> None:
        start.wait()
        got.append(stores.of(conn()))

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len({id(store) for store in got}) == 1
    stores.close()


def test_using_lends_the_callers_stores_or_owns_some_for_the_block() -> None:
    callers = StateStores(CountingStore)
    with using(callers) as lent:
        assert lent is callers
        store = lent.of(conn())
    assert isinstance(store, CountingStore) and store.closes == 0  # the caller's: left open
    with using(None) as own:
        assert own is not callers
        made = own.of(conn())
    assert made._producer is None and made._consumer is None  # closed at the block's end (nothing was opened)
    callers.close()
