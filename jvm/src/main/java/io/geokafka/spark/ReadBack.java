package io.geokafka.spark;

import java.util.HashSet;
import java.util.Map;
import java.util.Set;

/**
 * What earlier writers of a partition group committed, as a newly opened writer of its transactional id reads
 * it back (partition key -> next source offset): an attempt that died after some commits of a batch the
 * driver never heard the end of must not have its records written twice.
 */
@FunctionalInterface
interface ReadBack {
    /** The committed next offset of each partition of {@code group} that has one since the query started. */
    Map<String, Long> committed(SinkOptions options, int group);

    /** From the target's state topic, from the earliest state offset the driver gave a partition of the group
     * (never before the state's end at the query's start: everything committed before it is in the driver's
     * expectations, and a partition idle for long has an old hint that would read everything written since). */
    ReadBack STATE_TOPIC = (options, group) -> {
        Set<String> partitions = new HashSet<>(options.partitionsOf(group));
        long from = Long.MAX_VALUE;
        for (String key : partitions) {
            org.apache.kafka.common.TopicPartition tp = Contract.parsePartitionKey(key);
            from = Math.min(from, options.expectedOf(tp.topic(), tp.partition())[1]);
        }
        return Progress.committedNext(options.targetConfig, options.flow, partitions,
                Math.max(from == Long.MAX_VALUE ? 0 : from, options.stateFloor));
    };
}
