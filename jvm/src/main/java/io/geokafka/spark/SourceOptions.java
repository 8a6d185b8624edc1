package io.geokafka.spark;

import com.fasterxml.jackson.core.type.TypeReference;
import java.io.Serializable;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.kafka.common.IsolationLevel;

/** What geokafka's Kafka source needs, parsed once on the driver from the query's options and shipped
 * to tasks. Option names follow Spark's Kafka source (kafka.*, assign, startingOffsets,
 * maxOffsetsPerTrigger, kafkaConsumer.pollTimeoutMs). A gap in the source always fails the query (there is
 * no failOnDataLoss): the driver decides at the next start whether to skip it, and counts it. */
public final class SourceOptions implements Serializable {
    private static final long serialVersionUID = 1L;
    /** Spark's starting-offset markers. */
    static final long EARLIEST = -2;
    static final long LATEST = -1;

    /** Kafka client settings of the source (the kafka.* options without the prefix). May hold secrets. */
    final Map<String, String> clientConfig;
    /** topic -> partitions, in order. */
    final Map<String, List<Integer>> assign;
    /** topic -> partition -> first offset (or {@link #EARLIEST} / {@link #LATEST}). */
    final Map<String, Map<Integer, Long>> starting;
    /** At most this many records per micro-batch (<= 0: no limit). */
    final long maxOffsetsPerTrigger;
    /** A partition that yields nothing for this long fails its task (a dead source must not hang a batch). */
    final long pollTimeoutMs;

    private SourceOptions(Map<String, String> options) {
        Map<String, String> client = new TreeMap<>();
        for (Map.Entry<String, String> e : options.entrySet()) {
            if (e.getKey().toLowerCase(java.util.Locale.ROOT).startsWith("kafka.")) {
                client.put(e.getKey().substring("kafka.".length()), e.getValue());
            }
        }
        if (!client.containsKey("bootstrap.servers")) {
            throw new IllegalArgumentException("geokafka source: option 'kafka.bootstrap.servers' is required");
        }
        clientConfig = Collections.unmodifiableMap(client);
        OptionReader in = new OptionReader("geokafka source", options);
        assign = in.json("assign", null, new TypeReference<TreeMap<String, List<Integer>>>() {});
        starting = in.json("startingOffsets", "{}", new TypeReference<TreeMap<String, Map<Integer, Long>>>() {});
        maxOffsetsPerTrigger = in.getLong("maxOffsetsPerTrigger", 0);
        pollTimeoutMs = in.getLong("kafkaConsumer.pollTimeoutMs", 120_000);
    }

    /** Parse the options map Spark hands to the source. */
    public static SourceOptions parse(Map<String, String> options) {
        return new SourceOptions(options);
    }

    /** The isolation level of the source's reads and offset lookups (read_committed unless told otherwise). */
    IsolationLevel isolation() {
        String level = clientConfig.getOrDefault("isolation.level", "read_committed");
        return "read_uncommitted".equals(level) ? IsolationLevel.READ_UNCOMMITTED : IsolationLevel.READ_COMMITTED;
    }
}
