package io.geokafka.spark;

import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.kafka.common.TopicPartition;
import org.apache.spark.sql.connector.read.InputPartition;

/** One partition group's share of a batch: per source partition, offsets [from, until); until is
 * {@link #OPEN} in real-time mode, where the task reads until its batch's time is up. */
record GroupRange(int group, String[] topics, int[] partitions, long[] from, long[] until) implements InputPartition {
    private static final long serialVersionUID = 1L;
    static final long OPEN = Long.MAX_VALUE;

    /** The range of ``group`` from ``starts`` to ``ends`` (null ends: open). */
    static GroupRange of(int group, Map<TopicPartition, Long> starts, Map<TopicPartition, Long> ends) {
        int n = starts.size();
        String[] topics = new String[n];
        int[] partitions = new int[n];
        long[] from = new long[n];
        long[] until = new long[n];
        int i = 0;
        for (Map.Entry<TopicPartition, Long> e : starts.entrySet()) {
            topics[i] = e.getKey().topic();
            partitions[i] = e.getKey().partition();
            from[i] = e.getValue();
            until[i] = ends == null ? OPEN : ends.get(e.getKey());
            i++;
        }
        return new GroupRange(group, topics, partitions, from, until);
    }

    /** Partition -> [from, until), in order. */
    Map<TopicPartition, long[]> ranges() {
        Map<TopicPartition, long[]> out = new LinkedHashMap<>();
        for (int i = 0; i < topics.length; i++) {
            out.put(new TopicPartition(topics[i], partitions[i]), new long[] {from[i], until[i]});
        }
        return out;
    }

    boolean open() {
        for (long u : until) {
            if (u != OPEN) {
                return false;
            }
        }
        return true;
    }
}
