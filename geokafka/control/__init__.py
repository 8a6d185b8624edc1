"""The control plane: connections, admin calls, naming, topic selection, the state store, offsets and syncs.

Everything here talks to Kafka through confluent-kafka's clients; nothing starts Spark.
"""
