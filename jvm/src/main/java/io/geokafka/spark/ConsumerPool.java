package io.geokafka.spark;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The source's consumers, one per partition group of a stream (one run of a query), kept between batches
 * in the JVM that runs the tasks: a consumer whose reader stopped at offset N of a partition starts the
 * next batch there with its fetches in flight and the records it read past N kept, so the group's reads
 * stay a stream rather than a seek, a fetch and a wait per batch. A restarted query, which may follow a
 * re-created topic of the same name, never sees records read by the last one. The idle ones are kept in
 * this JVM's {@link ClientPool} of consumers: at most {@link #CAPACITY}, each closed after {@link #IDLE_MS}
 * idle, a stream's closed when it stops.
 */
final class ConsumerPool {
    private static final Logger LOG = LoggerFactory.getLogger(ConsumerPool.class);
    static final long IDLE_MS = 120_000;
    static final int CAPACITY = 64;

    /** Where a group's reader stopped in one source partition, and what it read past that. */
    static final class Cursor {
        final TopicPartition tp;
        final org.apache.spark.unsafe.types.UTF8String topic;
        /** Records read and not handed out yet, from {@link #at} on, in offset order. */
        List<ConsumerRecord<byte[], byte[]>> records = List.of();
        int at;
        /** The offset the next batch must start at to continue without a seek (-1: seek). */
        long next = -1;
        /** This batch's end (exclusive); {@link GroupRange#OPEN} in real-time mode. */
        long until;
        boolean done;

        Cursor(TopicPartition tp) {
            this.tp = tp;
            this.topic = org.apache.spark.unsafe.types.UTF8String.fromString(tp.topic());
        }

        boolean pending() {
            return at < records.size();
        }

        void drop() {
            records = List.of();
            at = 0;
        }
    }

    /** A pooled consumer of one group and its cursors. */
    static final class Lease {
        final Key key;
        final KafkaConsumer<byte[], byte[]> consumer;
        final Map<TopicPartition, Cursor> cursors = new LinkedHashMap<>();
        /** The partitions the consumer is assigned: those given a range at least once, so each has a position
         * (a partition without one, even paused, fails the next poll: there is no reset policy). */
        final Set<TopicPartition> assigned = new LinkedHashSet<>();

        Lease(Key key, KafkaConsumer<byte[], byte[]> consumer, List<TopicPartition> partitions) {
            this.key = key;
            this.consumer = consumer;
            partitions.forEach(tp -> cursors.put(tp, new Cursor(tp)));
        }
    }

    record Key(String stream, int group) {}

    private static final ClientPool<Key, Lease> IDLE = ClientPool.jvmWide("consumer", CAPACITY, IDLE_MS, ConsumerPool::close);
    private static final AtomicLong OPENED = new AtomicLong();

    private ConsumerPool() {}

    /**
     * The consumer of group {@code group} of {@code stream}, with each partition of {@code ranges} assigned,
     * positioned at its range's start (kept records and fetches kept where it already is there) and resumed,
     * and every other partition it was assigned in an earlier batch paused for this batch.
     */
    static Lease borrow(String stream, int group, Map<String, String> config, List<TopicPartition> partitions,
                        Map<TopicPartition, long[]> ranges) {
        Key key = new Key(stream, group);
        Lease lease = IDLE.take(key);
        if (lease == null) {
            lease = new Lease(key, open(config, group), partitions);
        }
        for (TopicPartition tp : ranges.keySet()) {
            if (!lease.cursors.containsKey(tp)) {
                throw new IllegalStateException("geokafka source: " + tp + " is not in group " + group);
            }
        }
        if (lease.assigned.addAll(ranges.keySet())) {
            lease.consumer.assign(new ArrayList<>(lease.assigned));  // the partitions kept keep their positions
        }
        List<TopicPartition> reading = new ArrayList<>();
        Set<TopicPartition> paused = new HashSet<>(lease.assigned);
        for (Map.Entry<TopicPartition, long[]> e : ranges.entrySet()) {
            Cursor cursor = lease.cursors.get(e.getKey());
            long from = e.getValue()[0];
            if (cursor.next != from) {
                cursor.drop();
                lease.consumer.seek(e.getKey(), from);
                cursor.next = from;
            }
            cursor.until = e.getValue()[1];
            cursor.done = false;
            reading.add(e.getKey());
            paused.remove(e.getKey());
        }
        for (Cursor cursor : lease.cursors.values()) {
            if (!ranges.containsKey(cursor.tp)) {
                cursor.done = true;
            }
        }
        lease.consumer.pause(paused);
        lease.consumer.resume(reading);
        return lease;
    }

    /** Give a healthy consumer back for the next batch. */
    static void giveBack(Lease lease) {
        IDLE.give(lease.key, lease);
    }

    /** Close the idle consumers of one stream (its query stopped). */
    static void closeStream(String stream) {
        IDLE.closeIf(lease -> lease.key.stream().equals(stream));
    }

    static void close(Lease lease) {
        try {
            lease.consumer.close(Duration.ZERO);
        } catch (RuntimeException e) {
            LOG.debug("geokafka source: closing the consumer of group {} failed: {}", lease.key.group(), e.toString());
        }
    }

    /** Idle consumers now in the pool (for tests and the mirror's resource count). */
    static int idle() {
        return IDLE.size();
    }

    private static KafkaConsumer<byte[], byte[]> open(Map<String, String> config, int group) {
        Properties props = new Properties();
        props.putAll(config);
        props.put("enable.auto.commit", "false");
        props.put("auto.offset.reset", "none");  // a position no longer on the source is a gap, reported
        props.putIfAbsent("isolation.level", "read_committed");
        props.putIfAbsent("client.id", "geokafka-source-g" + group + "-" + OPENED.incrementAndGet());
        LOG.debug("geokafka source: opening consumer {} of group {}", props.getProperty("client.id"), group);
        return new KafkaConsumer<>(props, new ByteArrayDeserializer(), new ByteArrayDeserializer());
    }
}
