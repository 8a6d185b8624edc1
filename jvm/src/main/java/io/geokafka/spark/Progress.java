package io.geokafka.spark;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Collections;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * The progress record of one source partition in the target's state topic (key and fields from the
 * contract): committed in the same transaction as the records it covers, so committed data and resume
 * position always agree.
 */
final class Progress {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String NEXT = Contract.field("progress", "next");
    private static final String LAST_TIMESTAMP = Contract.field("progress", "last_timestamp");

    private Progress() {}

    static byte[] key(String flow, String topic, int partition) {
        return Contract.progressKey(flow, topic, partition).getBytes(StandardCharsets.UTF_8);
    }

    static byte[] value(long next, long lastTimestamp) {
        return ("{\"" + NEXT + "\": " + next + ", \"" + LAST_TIMESTAMP + "\": " + lastTimestamp + "}")
                .getBytes(StandardCharsets.UTF_8);
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
     * The latest committed ``next`` of each of ``keys`` ("topic/partition" -> progress key) at or after state
     * offset ``fromOffset`` (absent: none): what a retried task reads back, since an earlier attempt may
     * have committed before it died.
     *
     * <p>Read up to the partition's high watermark as it is now, not only to its last stable offset: another
     * group's transaction still open (a writer that stalled, or one slow to commit) holds the stable offset
     * back, possibly below this group's last commit, which a read to the stable offset would then miss (its
     * records were written again: 2,000 duplicates beside a loaded suite). Every earlier writer of this group
     * was fenced before this read, so everything it committed is below the high watermark; the read waits,
     * within its deadline, until the transactions before it ended.
     */
    static Map<String, Long> committedNext(Map<String, String> targetConfig, Map<String, byte[]> keys, long fromOffset) {
        Map<String, String> byKey = new HashMap<>();
        keys.forEach((partition, key) -> byKey.put(new String(key, StandardCharsets.UTF_8), partition));
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
                    String partition = r.key() == null ? null : byKey.get(new String(r.key(), StandardCharsets.UTF_8));
                    if (partition != null && r.value() != null) {
                        latest.put(partition, parseNext(r.value()));
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
