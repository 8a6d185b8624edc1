package io.geokafka.spark;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.Serializable;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/** What the sink needs, parsed once on the driver from the query's options and shipped to tasks. */
public final class SinkOptions implements Serializable {
    private static final long serialVersionUID = 1L;
    private static final ObjectMapper JSON = new ObjectMapper();

    final String flow;
    final String sourceCluster;
    final String targetCluster;
    final String queryKey;
    /** Kafka client settings of the target (bootstrap, security), in Java client names. */
    final Map<String, String> targetConfig;
    /** Producer settings that override geokafka's defaults. */
    final Map<String, String> producerConfig;
    /** Source topic -> target topic. */
    final Map<String, String> topicMap;
    /** "topic/partition" -> [next source offset known to the driver, state offset to rescan from]. */
    final Map<String, long[]> expected;
    final long commitIntervalMs;
    /** Target topic -> its max.message.bytes: a larger record is refused before it is sent. */
    final Map<String, Long> maxMessageBytes;
    /** Open every partition's producer on the driver before the first epoch (local masters: the
     * driver's JVM is the executor's, so the tasks find them in the pool). */
    final boolean warmProducers;

    private SinkOptions(Map<String, String> options) {
        flow = required(options, "flow");
        sourceCluster = required(options, "source_cluster");
        targetCluster = required(options, "target_cluster");
        queryKey = options.getOrDefault("query_key", flow);
        targetConfig = stringMap(required(options, "target_config"));
        producerConfig = stringMap(options.getOrDefault("producer_config", "{}"));
        topicMap = stringMap(required(options, "topic_map"));
        expected = new HashMap<>();
        for (Map.Entry<String, List<Long>> e : longLists(options.getOrDefault("expected", "{}")).entrySet()) {
            expected.put(e.getKey(), new long[] {e.getValue().get(0), e.getValue().get(1)});
        }
        commitIntervalMs = Long.parseLong(options.getOrDefault("commit_interval_ms", "100"));
        maxMessageBytes = longMap(options.getOrDefault("max_message_bytes", "{}"));
        warmProducers = Boolean.parseBoolean(options.getOrDefault("warm_producers", "false"));
    }

    /** Parse the options map Spark hands to the sink (keys are lower-cased by Spark). */
    public static SinkOptions parse(Map<String, String> options) {
        return new SinkOptions(options);
    }

    /** Parse the same options written as one JSON object of strings (as the driver hands them over py4j). */
    public static SinkOptions fromJson(String json) {
        return parse(stringMap(json));
    }

    /** A copy with other expectations (the driver's view before an epoch). */
    SinkOptions withExpected(Map<String, long[]> next) {
        SinkOptions copy = new SinkOptions(this);
        copy.expected.clear();
        copy.expected.putAll(next);
        return copy;
    }

    private SinkOptions(SinkOptions other) {
        flow = other.flow;
        sourceCluster = other.sourceCluster;
        targetCluster = other.targetCluster;
        queryKey = other.queryKey;
        targetConfig = other.targetConfig;
        producerConfig = other.producerConfig;
        topicMap = other.topicMap;
        expected = new HashMap<>(other.expected);
        commitIntervalMs = other.commitIntervalMs;
        maxMessageBytes = other.maxMessageBytes;
        warmProducers = other.warmProducers;
    }

    /** True when records go out uncompressed, so their size on the wire is known before sending. */
    boolean uncompressed() {
        return "none".equals(producerConfig.getOrDefault("compression.type", ProducerPool.DEFAULT_COMPRESSION));
    }

    /** The fixed transactional id of one source partition of the flow (fencing relies on it). */
    String transactionalId(String topic, int partition) {
        return "geokafka-" + flow + "-" + topic + "-" + partition;
    }

    private static String required(Map<String, String> options, String key) {
        String value = options.get(key);
        if (value == null) {
            throw new IllegalArgumentException("geokafka sink: option '" + key + "' is required");
        }
        return value;
    }

    private static Map<String, String> stringMap(String json) {
        try {
            return JSON.readValue(json, new TypeReference<Map<String, String>>() {});
        } catch (java.io.IOException e) {
            throw new IllegalArgumentException("geokafka sink: not a JSON object of strings: " + e.getMessage(), e);
        }
    }

    private static Map<String, Long> longMap(String json) {
        try {
            return JSON.readValue(json, new TypeReference<Map<String, Long>>() {});
        } catch (java.io.IOException e) {
            throw new IllegalArgumentException("geokafka sink: not a JSON object of numbers: " + e.getMessage(), e);
        }
    }

    private static Map<String, List<Long>> longLists(String json) {
        try {
            return JSON.readValue(json, new TypeReference<Map<String, List<Long>>>() {});
        } catch (java.io.IOException e) {
            throw new IllegalArgumentException("geokafka sink: 'expected' is not a JSON map of [next, hint]: "
                    + e.getMessage(), e);
        }
    }
}
