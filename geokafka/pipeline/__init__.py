"""The data plane: a flow's Spark Structured Streaming query, composed and driven from PySpark.

The per-record work runs in the JVM sink (``format("geokafka")``, ``jvm/``); Python plans
where each partition resumes, starts and watches the query, and records the flow's state.
"""
