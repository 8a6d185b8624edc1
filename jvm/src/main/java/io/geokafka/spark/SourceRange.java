package io.geokafka.spark;

import org.apache.spark.sql.connector.read.InputPartition;

/** One source partition's records of one micro-batch: offsets [from, until). */
record SourceRange(String topic, int partition, long from, long until) implements InputPartition {
    private static final long serialVersionUID = 1L;
}
