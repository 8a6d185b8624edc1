"""``geokafka guard``: automatic, reversible handling of a DC loss in a stretched cluster.

Apache Kafka has no automatic observer promotion; an operator of a 2- or 2.5-DC cluster runs
the planner's steps by hand. The guard watches the cluster (brokers per DC, fencing, ISRs),
tells a DC loss from a broker loss or a flap, and where the plan says writes stop and the step
is safe (the controller quorum lives; the survivors still hold every acknowledged record), it
lowers ``min.insync.replicas`` so ``acks=all`` writes resume; when the DC is back and its
replicas rejoined every ISR, it restores the setting and the preferred leaders. Every action
and its reversal is journaled on the cluster itself.

Layout: ``model`` (what the guard sees and does), ``decide`` (the pure decisions),
``observe`` / ``act`` / ``journal`` (Kafka I/O), ``loop`` (ties them together).
"""
