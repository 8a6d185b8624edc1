"""Applications that follow a failover on their own.

:class:`FollowingConsumer` and :class:`FollowingProducer` wrap confluent-kafka's clients: they
read the flow's role from its target's state topic (never from the source) and move to the
active cluster by themselves -- after ``failover``, ``promote`` and ``failback`` -- with the topic
names of the flow's naming; the consumer resumes from the offsets the failover committed for its
group. :func:`where` says the same for applications in other languages (`geokafka where FLOW`,
``/api/flows/<flow>`` of the dashboard). See ``docs/clients.md``.
"""

from geokafka.client.consumer import FollowingConsumer
from geokafka.client.placement import Placement, placement_of
from geokafka.client.producer import FollowingProducer
from geokafka.client.switch import Switch
from geokafka.client.watch import RoleWatcher
from geokafka.client.where import where

__all__ = ["FollowingConsumer", "FollowingProducer", "Placement", "RoleWatcher", "Switch", "placement_of", "where"]
