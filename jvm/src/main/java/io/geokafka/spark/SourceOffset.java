package io.geokafka.spark;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.Map;
import java.util.TreeMap;
import org.apache.spark.sql.connector.read.streaming.Offset;

/** A position of the source: topic -> partition -> next offset, written as Spark's Kafka source
 * writes its own ({"orders":{"0":42,"1":17}}). */
final class SourceOffset extends Offset {
    private static final ObjectMapper JSON = new ObjectMapper();
    final Map<String, Map<Integer, Long>> offsets;

    SourceOffset(Map<String, Map<Integer, Long>> offsets) {
        Map<String, Map<Integer, Long>> copy = new TreeMap<>();
        offsets.forEach((topic, parts) -> copy.put(topic, new TreeMap<>(parts)));
        this.offsets = copy;
    }

    /** The position of each partition given. */
    static SourceOffset of(Map<org.apache.kafka.common.TopicPartition, Long> next) {
        Map<String, Map<Integer, Long>> offsets = new TreeMap<>();
        next.forEach((tp, offset) -> offsets.computeIfAbsent(tp.topic(), t -> new TreeMap<>()).put(tp.partition(), offset));
        return new SourceOffset(offsets);
    }

    static SourceOffset fromJson(String json) {
        try {
            return new SourceOffset(JSON.readValue(json, new TypeReference<TreeMap<String, Map<Integer, Long>>>() {}));
        } catch (java.io.IOException e) {
            throw new IllegalArgumentException("geokafka source: not an offset: " + json, e);
        }
    }

    /** The next offset of one partition, or -1 when this position does not have it. */
    long of(String topic, int partition) {
        Map<Integer, Long> parts = offsets.get(topic);
        Long next = parts == null ? null : parts.get(partition);
        return next == null ? -1 : next;
    }

    @Override
    public String json() {
        try {
            return JSON.writeValueAsString(offsets);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }
}
