"""The guard's changes to the cluster: min.insync.replicas of a topic, preferred leader elections."""

from __future__ import annotations

from confluent_kafka import ElectionType, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

from geokafka.control.admin import raise_mapped, silent_logger
from geokafka.control.connection import ClusterConnection
from geokafka.guard.model import Action, ClusterView


class ClusterActor:
    """Applies :class:`Action` s to one cluster."""

    def __init__(self, conn: ClusterConnection, timeout_s: float = 15.0) -> None:
        self.conn = conn
        self.timeout_s = timeout_s

    def _admin(self) -> AdminClient:
        # A new client per action: one kept from before the DC loss still counts the lost DC's
        # brokers among its candidates and waited on one of them (15 s time-outs, twice,
        # in a drill); a new one learns the live brokers from whichever bootstrap broker answers.
        return AdminClient(self.conn.librdkafka(logger=silent_logger()))

    def apply(self, action: Action, view: ClusterView) -> None:
        """Make the change; raises a geokafka error naming it when the cluster refuses or does not answer."""
        what = f"{action.kind} on {action.topic}"
        admin = self._admin()
        try:
            if action.kind in ("lower-min-isr", "restore-min-isr"):
                resource = ConfigResource(ResourceType.TOPIC, action.topic, incremental_configs=[
                    ConfigEntry("min.insync.replicas", str(action.value), incremental_operation=AlterConfigOpType.SET)])
                for future in admin.incremental_alter_configs([resource], request_timeout=self.timeout_s).values():
                    future.result(timeout=self.timeout_s)
            elif action.kind == "elect-preferred-leaders":
                partitions = [TopicPartition(p.topic, p.partition) for p in view.topic(action.topic)
                              if p.replicas and p.leader != p.replicas[0]]
                if partitions:
                    # no timeout keywords: confluent-kafka 2.16.1's elect_leaders raises SystemError
                    # ("more argument specifiers than keyword list entries") for any of them
                    admin.elect_leaders(ElectionType.PREFERRED, partitions).result(timeout=self.timeout_s)
        except (KafkaException, TimeoutError) as exc:
            raise_mapped(self.conn, what, exc)
        finally:
            # Destroyed here, in this thread: a client kept alive by the traceback's frames would be
            # freed by a later garbage collection, which may run on a librdkafka thread (a future's
            # callback), where destroying a client aborts the process.
            del admin
