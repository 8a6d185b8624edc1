package io.geokafka.spark;

import com.fasterxml.jackson.core.type.TypeReference;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/** What the sink needs, parsed once on the driver from the query's options (named in the contract) and
 * shipped to tasks. */
public final class SinkOptions implements Serializable {
    private static final long serialVersionUID = 3L;

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
    /** Partition key ("topic/partition", {@link Contract#partitionKey}) -> its partition group (one transactional writer per group). */
    final Map<String, Integer> groupOf;
    /** Each group's partition keys, a topic's together, as the driver listed them. */
    private final List<List<String>> partitionsByGroup;
    /** How many groups the flow's partitions are split into. */
    final int groupCount;
    /** The generation of the flow's assignment: part of every transactional id, so a regrouped flow writes
     * under new ids (the driver fenced the previous generation's before the query started). */
    final long generation;
    /** Partition key -> [next source offset known to the driver, state offset to rescan from]. */
    final Map<String, long[]> expected;
    /** The state topic's end when the driver read the state at the query's start (its writers fenced): every
     * progress committed before it is in {@link #expected}, so a read-back never starts before it. */
    final long stateFloor;
    final long commitIntervalMs;
    /** A writer whose reader has caught up (nothing more to read now) commits this long after its previous
     * commit at the earliest, instead of waiting for {@link #commitIntervalMs}: low latency at moderate rates,
     * a transaction per interval on a backlog. */
    final long caughtUpCommitMs;
    /** Target topic -> its max.message.bytes: a larger record is refused before it is sent. */
    final Map<String, Long> maxMessageBytes;
    /** Open every group's producer on the driver before the first batch (local masters: the driver's JVM
     * is the executor's, so the tasks find them in the pool). */
    final boolean warmProducers;
    /** Where tasks on other JVMs post each commit as it happens ({@link CommitReportServer}); empty: nowhere
     * (local masters report in-process). */
    final String reportAddress;
    final String reportToken;

    private SinkOptions(Map<String, String> options) {
        OptionReader in = new OptionReader("geokafka sink", options);
        flow = in.required(name("flow"));
        sourceCluster = in.required(name("source_cluster"));
        targetCluster = in.required(name("target_cluster"));
        queryKey = in.get(name("query_key"), flow);
        targetConfig = in.json(name("target_config"), null, OptionReader.STRINGS);
        producerConfig = in.json(name("producer_config"), "{}", OptionReader.STRINGS);
        topicMap = in.json(name("topic_map"), null, OptionReader.STRINGS);
        List<Map<String, List<Integer>>> groups = in.json(name("groups"), null,
                new TypeReference<List<Map<String, List<Integer>>>>() {});
        groupOf = new HashMap<>();
        partitionsByGroup = new ArrayList<>();
        for (int g = 0; g < groups.size(); g++) {
            int group = g;
            List<String> keys = new ArrayList<>();
            groups.get(g).forEach((topic, parts) -> parts.forEach(p -> keys.add(Contract.partitionKey(topic, p))));
            keys.forEach(key -> groupOf.put(key, group));
            partitionsByGroup.add(List.copyOf(keys));
        }
        groupCount = groups.size();
        generation = in.getLong(name("generation"), 0);
        expected = new HashMap<>();
        in.json(name("expected"), "{}", new TypeReference<Map<String, List<Long>>>() {})
                .forEach((key, known) -> expected.put(key, new long[] {known.get(0), known.get(1),
                        known.size() > 2 ? known.get(2) : -1}));
        stateFloor = in.getLong(name("state_floor"), 0);
        commitIntervalMs = in.getLong(name("commit_interval_ms"), 100);
        caughtUpCommitMs = in.getLong(name("caught_up_commit_ms"), 20);
        maxMessageBytes = in.json(name("max_message_bytes"), "{}", new TypeReference<Map<String, Long>>() {});
        warmProducers = in.getBool(name("warm_producers"), false);
        reportAddress = in.get(name("report_address"), "");
        reportToken = in.get(name("report_token"), "");
    }

    private static String name(String role) {
        return Contract.text("sink_options", role);
    }

    /** Parse the options map Spark hands to the sink (keys are lower-cased by Spark). */
    public static SinkOptions parse(Map<String, String> options) {
        return new SinkOptions(options);
    }

    /** Parse the same options written as one JSON object of strings (as the driver hands them over py4j). */
    public static SinkOptions fromJson(String json) {
        return parse(OptionReader.object("geokafka sink", json));
    }

    /** A copy with other expectations (the driver's view before a batch). */
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
        groupOf = other.groupOf;
        partitionsByGroup = other.partitionsByGroup;
        groupCount = other.groupCount;
        generation = other.generation;
        expected = new HashMap<>(other.expected);
        stateFloor = other.stateFloor;
        commitIntervalMs = other.commitIntervalMs;
        caughtUpCommitMs = other.caughtUpCommitMs;
        maxMessageBytes = other.maxMessageBytes;
        warmProducers = other.warmProducers;
        reportAddress = other.reportAddress;
        reportToken = other.reportToken;
    }

    /** True when records go out uncompressed, so their size on the wire is known before sending. */
    boolean uncompressed() {
        return "none".equals(producerConfig.getOrDefault("compression.type", ProducerPool.DEFAULT_COMPRESSION));
    }

    /** The writer's batch.size when its batches are compressed and a target topic takes less than ``batchSize``
     * bytes a batch: that topic's max.message.bytes (the smallest of the flow's). A batch the broker refuses as too
     * large is split into batches of batch.size by the producer, as if uncompressed, and sent again: with
     * batch.size at most the limit, only a record too large on its own is refused, and that is an error naming
     * it, never a split that repeats until the transaction times out. Uncompressed records are checked one by one
     * before sending instead (``PartitionWrites.maxBytes``). */
    int batchSize(int batchSize) {
        if (uncompressed()) {
            return batchSize;
        }
        long smallest = batchSize;
        for (long limit : maxMessageBytes.values()) {
            smallest = Math.min(smallest, limit);
        }
        return (int) Math.max(1, smallest);
    }

    private static final long[] UNKNOWN = {-1, 0, -1};

    /** The last timestamp of what {@link #expectedOf} says (-1: unknown). */
    static long lastTimestampOf(long[] known) {
        return known.length > 2 ? known[2] : -1;
    }

    /** The partition group of a source partition (a row of a partition no group holds is a planning error). */
    int groupOf(String topic, int partition) {
        Integer group = groupOf.get(Contract.partitionKey(topic, partition));
        if (group == null) {
            throw new GeokafkaException(GeokafkaException.Kind.KAFKA, KafkaCodes.NONE, false,
                    "flow " + flow + ": source partition " + topic + "/" + partition + " is in no partition group", null);
        }
        return group;
    }

    /** The partition keys of ``group``, a topic's together. */
    List<String> partitionsOf(int group) {
        return partitionsByGroup.get(group);
    }

    /** The topics a writer of ``group`` writes: its partitions' target topics and the state topic. */
    java.util.SortedSet<String> targetTopicsOf(int group) {
        java.util.SortedSet<String> topics = new java.util.TreeSet<>();
        for (String key : partitionsOf(group)) {
            String target = topicMap.get(Contract.parsePartitionKey(key).topic());
            if (target != null) {
                topics.add(target);
            }
        }
        topics.add(Contract.STATE_TOPIC);
        return topics;
    }

    /** The transactional id of one group of this generation (fencing relies on it). */
    String transactionalId(int group) {
        return Contract.groupTransactionalId(flow, generation, group);
    }

    /** What the driver expects of a partition: [next, state hint, last timestamp], [-1, 0, -1] when it knows none. */
    long[] expectedOf(String topic, int partition) {
        return expected.getOrDefault(Contract.partitionKey(topic, partition), UNKNOWN);
    }
}
