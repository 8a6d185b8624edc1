package io.geokafka.spark;

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
 * The progress record of one source partition in the target's state topic: committed in the same
 * transaction as the records it covers, so committed data and resume position always agree.
 */
final class Progress {
    static final String STATE_TOPIC = "__geokafka_state";

    private Progress() {}

    static byte[] key(String flow, String topic, int partition) {
        return ("progress/" + flow + "/" + topic + "/" + partition).getBytes(StandardCharsets.UTF_8);
    }

    static byte[] value(long next, long lastTimestamp) {
        return ("{\"next\": " + next + ", \"last_timestamp\": " + lastTimestamp + "}").getBytes(StandardCharsets.UTF_8);
    }

    /**
     * The latest committed ``next`` of ``key`` at or after state offset ``fromOffset`` (-1 if none):
     * what a retried task reads back, since an earlier attempt may have committed before it died.
     */
    static long committedNext(Map<String, String> targetConfig, byte[] key, long fromOffset) {
        Properties props = new Properties();
        props.putAll(targetConfig);
        props.put("isolation.level", "read_committed");
        props.put("enable.auto.commit", "false");
        props.remove("transactional.id");
        TopicPartition tp = new TopicPartition(STATE_TOPIC, 0);
        long latest = -1;
        try (KafkaConsumer<byte[], byte[]> consumer =
                     new KafkaConsumer<>(props, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            consumer.assign(Collections.singletonList(tp));
            long end = consumer.endOffsets(Collections.singletonList(tp), Duration.ofSeconds(30)).get(tp);
            consumer.seek(tp, Math.max(0, fromOffset));
            long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
            while (consumer.position(tp, Duration.ofSeconds(30)) < end) {
                if (System.nanoTime() > deadline) {
                    throw new GeokafkaException(GeokafkaException.Kind.KAFKA, 7, true,
                            "reading " + STATE_TOPIC + " to its end timed out", null);
                }
                ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(500));
                for (ConsumerRecord<byte[], byte[]> r : records) {
                    if (r.value() != null && java.util.Arrays.equals(r.key(), key)) {
                        latest = parseNext(r.value());
                    }
                }
            }
        }
        return latest;
    }

    static long parseNext(byte[] value) {
        String text = new String(value, StandardCharsets.UTF_8);
        int at = text.indexOf("\"next\"");
        int colon = text.indexOf(':', at);
        int i = colon + 1;
        while (i < text.length() && text.charAt(i) == ' ') {
            i++;
        }
        int j = i;
        while (j < text.length() && (Character.isDigit(text.charAt(j)) || text.charAt(j) == '-')) {
            j++;
        }
        return Long.parseLong(text.substring(i, j));
    }

    static Map<String, Object> summary(String topic, int partition, long next, long stateOffset, long[] stats) {
        Map<String, Object> out = new HashMap<>();
        out.put("topic", topic);
        out.put("partition", partition);
        out.put("next_offset", next);
        out.put("state_offset", stateOffset);
        out.put("written", stats[0]);
        out.put("duplicates_skipped", stats[1]);
        out.put("cycle_skipped", stats[2]);
        out.put("filtered", stats[3]);
        out.put("bytes", stats[4]);
        out.put("last_timestamp", stats[5]);
        return out;
    }
}
