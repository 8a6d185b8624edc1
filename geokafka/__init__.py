"""geokafka: run Apache Kafka across data centers.

Replication between clusters on Spark Structured Streaming with exactly-once effect,
exact consumer-offset translation and failover, stretched-cluster planning, and DR drills,
all driven by one topology file.
"""

__version__ = "0.2.0.dev0"  # semantic versioning; CHANGELOG.md's [Unreleased] until 0.2.0
__all__ = ["__version__"]
