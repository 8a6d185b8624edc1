package io.geokafka.spark;

import com.fasterxml.jackson.core.type.TypeReference;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.TopicPartition;

/** What geokafka's Kafka source needs, parsed once on the driver from the query's options and shipped
 * to tasks. Option names follow Spark's Kafka source (kafka.*, assign, startingOffsets,
 * maxOffsetsPerTrigger, kafkaConsumer.pollTimeoutMs) and are declared in the contract; {@code groups}
 * splits the assigned partitions into partition groups, one Spark input partition (one task, one
 * consumer) each. A gap in the source always fails the query (there is no failOnDataLoss): the driver
 * decides at the next start whether to skip it, and counts it. */
public final class SourceOptions implements Serializable {
    private static final long serialVersionUID = 2L;
    /** Spark's starting-offset markers. */
    static final long EARLIEST = -2;
    static final long LATEST = -1;

    /** Kafka client settings of the source (the kafka.* options without the prefix). May hold secrets. */
    final Map<String, String> clientConfig;
    /** topic -> partitions, in order. */
    final Map<String, List<Integer>> assign;
    /** The partition groups: each a list of the source partitions one task reads with one consumer. */
    final List<List<TopicPartition>> groups;
    /** topic -> partition -> first offset (or {@link #EARLIEST} / {@link #LATEST}). */
    final Map<String, Map<Integer, Long>> starting;
    /** At most this many records per micro-batch (<= 0: no limit). */
    final long maxOffsetsPerTrigger;
    /** A group that yields nothing for this long while records are due fails its task (a dead source must not hang a batch). */
    final long pollTimeoutMs;
    /** Rows that name chunks of records handed to the task's writer ({@link CommitHandOff#offer},
     * {@link GeokafkaSourceProvider#HANDED}) instead of a row per record. */
    final boolean handOver;

    private SourceOptions(Map<String, String> options) {
        String prefix = Contract.text("source_options", "client_prefix");
        Map<String, String> client = new TreeMap<>();
        for (Map.Entry<String, String> e : options.entrySet()) {
            if (e.getKey().toLowerCase(java.util.Locale.ROOT).startsWith(prefix)) {
                client.put(e.getKey().substring(prefix.length()), e.getValue());
            }
        }
        if (!client.containsKey("bootstrap.servers")) {
            throw new IllegalArgumentException("geokafka source: option '" + prefix + "bootstrap.servers' is required");
        }
        clientConfig = Collections.unmodifiableMap(client);
        OptionReader in = new OptionReader("geokafka source", options);
        assign = in.json(Contract.text("source_options", "assign"), null, new TypeReference<TreeMap<String, List<Integer>>>() {});
        starting = in.json(Contract.text("source_options", "starting_offsets"), "{}",
                new TypeReference<TreeMap<String, Map<Integer, Long>>>() {});
        maxOffsetsPerTrigger = in.getLong(Contract.text("source_options", "max_offsets_per_trigger"), 0);
        pollTimeoutMs = in.getLong(Contract.text("source_options", "poll_timeout_ms"), 120_000);
        handOver = handOver(options);
        List<Map<String, List<Integer>>> given = in.json(Contract.text("source_options", "groups"), "[]",
                new TypeReference<List<Map<String, List<Integer>>>>() {});
        groups = given.isEmpty() ? List.of(allOf(assign)) : given.stream().map(SourceOptions::allOf).toList();
        checkGroups();
    }

    /** Whether {@code options} ask for records handed over (the schema depends on it, before the rest is parsed). */
    static boolean handOver(Map<String, String> options) {
        return new OptionReader("geokafka source", options).getBool(Contract.text("source_options", "hand_over"), false);
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

    /** Every assigned partition, in group order. */
    List<TopicPartition> partitions() {
        List<TopicPartition> out = new ArrayList<>();
        groups.forEach(out::addAll);
        return out;
    }

    private static List<TopicPartition> allOf(Map<String, List<Integer>> byTopic) {
        List<TopicPartition> out = new ArrayList<>();
        byTopic.forEach((topic, parts) -> parts.forEach(p -> out.add(new TopicPartition(topic, p))));
        return List.copyOf(out);
    }

    /** Every assigned partition in exactly one group, and nothing else: two readers of one partition
     * would hand the sink its records twice. */
    private void checkGroups() {
        java.util.Set<TopicPartition> seen = new java.util.HashSet<>();
        for (List<TopicPartition> group : groups) {
            for (TopicPartition tp : group) {
                if (!seen.add(tp)) {
                    throw new IllegalArgumentException("geokafka source: partition " + tp + " is in two groups");
                }
            }
        }
        java.util.Set<TopicPartition> assigned = new java.util.HashSet<>(allOf(assign));
        if (!seen.equals(assigned)) {
            throw new IllegalArgumentException("geokafka source: the groups cover " + seen.size()
                    + " partitions, the assignment " + assigned.size());
        }
    }
}
