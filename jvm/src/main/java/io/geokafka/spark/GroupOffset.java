package io.geokafka.spark;

import java.util.Map;
import java.util.TreeMap;
import org.apache.kafka.common.TopicPartition;
import org.apache.spark.sql.connector.read.streaming.PartitionOffset;

/** Where one partition group's reader stopped in real-time mode: the next offset of each of its partitions
 * (what it handed to Spark, records past a transaction marker counted as read). */
record GroupOffset(Map<String, Map<Integer, Long>> next) implements PartitionOffset {
    private static final long serialVersionUID = 1L;

    static GroupOffset of(Map<TopicPartition, Long> positions) {
        Map<String, Map<Integer, Long>> next = new TreeMap<>();
        positions.forEach((tp, offset) -> next.computeIfAbsent(tp.topic(), t -> new TreeMap<>()).put(tp.partition(), offset));
        return new GroupOffset(next);
    }
}
