package io.geokafka.spark;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Collections;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.function.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * Progress in the target's state topic (keys and fields from the contract), committed in the same transaction
 * as the records it covers, so committed data and resume position always agree. The sink writes packed
 * records (a group's partitions in one record, {@link #packed}); a progress record of one partition
 * ({@link #key}, {@link #value}) is what earlier versions wrote and what the driver still writes outside a
 * query. A partition's position is its last mention in the topic's order, in either form.
 */
final class Progress {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String NEXT = Contract.field("progress", "next");
    private static final String LAST_TIMESTAMP = Contract.field("progress", "last_timestamp");
    private static final String TOPICS = Contract.field("packed_progress", "topics");

    /** One partition's position in a packed record. */
    record Entry(String topic, int partition, long next, long lastTimestamp) {}

    private Progress() {}

    static byte[] key(String flow, String topic, int partition) {
        return Contract.progressKey(flow, topic, partition).getBytes(StandardCharsets.UTF_8);
    }

    static byte[] value(long next, long lastTimestamp) {
        return ("{\"" + NEXT + "\": " + next + ", \"" + LAST_TIMESTAMP + "\": " + lastTimestamp + "}")
                .getBytes(StandardCharsets.UTF_8);
    }

    /** A packed progress value: ``entries`` as {"topics": {topic: [partition, next, last_timestamp, ...]}}, in
     * their order, a topic's entries together where they come together. */
    static byte[] packed(List<Entry> entries) {
        Map<String, StringBuilder> byTopic = new LinkedHashMap<>();
        for (Entry e : entries) {
            StringBuilder out = byTopic.get(e.topic());
            if (out == null) {
                out = new StringBuilder();
                byTopic.put(e.topic(), out);
            } else {
                out.append(',');
            }
            out.append(e.partition()).append(',').append(e.next()).append(',').append(e.lastTimestamp());
        }
        StringBuilder value = new StringBuilder(16 + 24 * entries.size()).append("{\"").append(TOPICS).append("\":{");
        String separator = "";
        for (Map.Entry<String, StringBuilder> t : byTopic.entrySet()) {
            value.append(separator).append(quoted(t.getKey())).append(":[").append(t.getValue()).append(']');
            separator = ",";
        }
        return value.append("}}").toString().getBytes(StandardCharsets.UTF_8);
    }

    /** Each entry of a packed progress value, in order. */
    static void forEachPacked(byte[] value, Consumer<Entry> each) {
        try {
            JsonNode topics = JSON.readTree(value).get(TOPICS);
            for (Iterator<Map.Entry<String, JsonNode>> it = topics.fields(); it.hasNext(); ) {
                Map.Entry<String, JsonNode> t = it.next();
                JsonNode numbers = t.getValue();
                if (!numbers.isArray() || numbers.size() % 3 != 0) {
                    throw new IllegalStateException("not a packed progress value: " + new String(value, StandardCharsets.UTF_8));
                }
                for (int i = 0; i < numbers.size(); i += 3) {
                    each.accept(new Entry(t.getKey(), numbers.get(i).asInt(), numbers.get(i + 1).asLong(),
                            numbers.get(i + 2).asLong()));
                }
            }
        } catch (IOException | NullPointerException e) {
            throw new IllegalStateException("not a packed progress value: " + new String(value, StandardCharsets.UTF_8), e);
        }
    }

    private static String quoted(String text) {
        try {
            return JSON.writeValueAsString(text);
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    /** The ``next`` of a progress value. */
    static long parseNext(byte[] value) {
        try {
            JsonNode node = JSON.readTree(value);
            return node.get(NEXT).asLong();
        } catch (IOException | NullPointerException e) {
            throw new IllegalStateException("not a progress value: " + new String(value, StandardCharsets.UTF_8), e);
        }
    }

    /**
     * The latest committed ``next`` of each of ``partitions`` ("topic/partition") of ``flow`` at or after state
     * offset ``fromOffset`` (absent: none), from its progress records and the flow's packed ones, the last
     * mention winning: what a retried task reads back, since an earlier attempt may have committed before it
     * died.
     *
     * <p>Read up to the partition's high watermark as it is now, not only to its last stable offset: another
     * group's transaction still open (a writer that stalled, or one slow to commit) holds the stable offset
     * back, possibly below this group's last commit, which a read to the stable offset would then miss (its
     * records were written again: 2,000 duplicates beside a loaded suite). Every earlier writer of this group
     * was fenced before this read, so everything it committed is below the high watermark; the read waits,
     * within its deadline, until the transactions before it ended.
     */
    static Map<String, Long> committedNext(Map<String, String> targetConfig, String flow, Set<String> partitions,
                                           long fromOffset) {
        Map<String, String> byKey = new HashMap<>();
        for (String partition : partitions) {
            TopicPartition tp = Contract.parsePartitionKey(partition);
            byKey.put(Contract.progressKey(flow, tp.topic(), tp.partition()), partition);
        }
        String packedPrefix = Contract.packedProgressPrefix(flow);
        Properties props = new Properties();
        props.putAll(targetConfig);
        props.put("isolation.level", "read_committed");
        props.put("enable.auto.commit", "false");
        props.remove("transactional.id");
        TopicPartition tp = new TopicPartition(Contract.STATE_TOPIC, 0);
        Map<String, Long> latest = new HashMap<>();
        try (KafkaConsumer<byte[], byte[]> consumer =
                     new KafkaConsumer<>(props, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            consumer.assign(Collections.singletonList(tp));
            long end = highWatermark(props, tp);
            consumer.seek(tp, Math.max(0, fromOffset));
            long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
            while (consumer.position(tp, Duration.ofSeconds(30)) < end) {
                if (System.nanoTime() > deadline) {
                    throw new GeokafkaException(GeokafkaException.Kind.KAFKA, KafkaCodes.REQUEST_TIMED_OUT, true,
                            "reading " + Contract.STATE_TOPIC + " to its end timed out", null);
                }
                ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(500));
                for (ConsumerRecord<byte[], byte[]> r : records) {
                    if (r.key() == null || r.value() == null) {
                        continue;
                    }
                    String key = new String(r.key(), StandardCharsets.UTF_8);
                    String partition = byKey.get(key);
                    if (partition != null) {
                        latest.put(partition, parseNext(r.value()));
                    } else if (key.startsWith(packedPrefix)) {
                        forEachPacked(r.value(), e -> {
                            String mentioned = Contract.partitionKey(e.topic(), e.partition());
                            if (partitions.contains(mentioned)) {
                                latest.put(mentioned, e.next());
                            }
                        });
                    }
                }
            }
        }
        return latest;
    }

    /** The end of ``tp`` as a read_uncommitted reader sees it: every record written, open transactions' too. */
    private static long highWatermark(Properties props, TopicPartition tp) {
        Properties uncommitted = new Properties();
        uncommitted.putAll(props);
        uncommitted.put("isolation.level", "read_uncommitted");
        try (KafkaConsumer<byte[], byte[]> consumer =
                     new KafkaConsumer<>(uncommitted, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            return consumer.endOffsets(Collections.singletonList(tp), Duration.ofSeconds(30)).get(tp);
        }
    }
}
