package io.geokafka.spark;

import com.fasterxml.jackson.core.type.TypeReference;
import java.io.Serializable;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/** What the sink needs, parsed once on the driver from the query's options and shipped to tasks. */
public final class SinkOptions implements Serializable {
    private static final long serialVersionUID = 1L;

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
        OptionReader in = new OptionReader("geokafka sink", options);
        flow = in.required("flow");
        sourceCluster = in.required("source_cluster");
        targetCluster = in.required("target_cluster");
        queryKey = in.get("query_key", flow);
        targetConfig = in.json("target_config", null, OptionReader.STRINGS);
        producerConfig = in.json("producer_config", "{}", OptionReader.STRINGS);
        topicMap = in.json("topic_map", null, OptionReader.STRINGS);
        expected = new HashMap<>();
        in.json("expected", "{}", new TypeReference<Map<String, List<Long>>>() {})
                .forEach((key, nextAndHint) -> expected.put(key, new long[] {nextAndHint.get(0), nextAndHint.get(1)}));
        commitIntervalMs = in.getLong("commit_interval_ms", 100);
        maxMessageBytes = in.json("max_message_bytes", "{}", new TypeReference<Map<String, Long>>() {});
        warmProducers = Boolean.parseBoolean(in.get("warm_producers", "false"));
    }

    /** Parse the options map Spark hands to the sink (keys are lower-cased by Spark). */
    public static SinkOptions parse(Map<String, String> options) {
        return new SinkOptions(options);
    }

    /** Parse the same options written as one JSON object of strings (as the driver hands them over py4j). */
    public static SinkOptions fromJson(String json) {
        return parse(OptionReader.object("geokafka sink", json));
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
}
