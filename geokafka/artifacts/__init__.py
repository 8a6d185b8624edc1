"""Pinned jars from Maven Central (Kafka, Spark's Kafka connector, MirrorMaker 2) and the sink module build."""
