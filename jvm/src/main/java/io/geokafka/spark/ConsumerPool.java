package io.geokafka.spark;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * The source's consumers, one per source partition, kept between micro-batches in the JVM that runs the
 * tasks: a consumer that ends a batch at offset N starts the next one there with its fetches already in
 * flight (and the records it read past N kept), so a partition's reads stay a stream rather than a
 * seek, a fetch and a wait per batch. Consumers belong to one stream (one run of a query): a restarted
 * query, which may follow a re-created topic of the same name, never sees records read by the last one.
 * Consumers idle for {@link #IDLE_MS} are closed, and a stream's when it stops (in its driver's JVM).
 */
final class ConsumerPool {
    static final long IDLE_MS = 120_000;

    /** A pooled consumer of one partition, and where its reader stopped. */
    static final class Lease {
        final String stream;
        final TopicPartition tp;
        final KafkaConsumer<byte[], byte[]> consumer;
        /** Records read past the last range's end, in order, from {@link #kept}'s index {@link #keptAt}. */
        List<ConsumerRecord<byte[], byte[]>> kept = List.of();
        int keptAt;
        /** The offset the next range must start at to continue without a seek (-1: seek). */
        long next = -1;
        long idleSince;

        Lease(String stream, TopicPartition tp, KafkaConsumer<byte[], byte[]> consumer) {
            this.stream = stream;
            this.tp = tp;
            this.consumer = consumer;
        }
    }

    private record Key(String stream, TopicPartition tp) {}

    /** At most one idle consumer per stream and partition: a query reads a partition in one task at a time. */
    private static final Map<Key, Lease> IDLE = new java.util.HashMap<>();
    private static final java.util.concurrent.atomic.AtomicLong OPENED = new java.util.concurrent.atomic.AtomicLong();

    private ConsumerPool() {}

    /** A consumer of {@code tp} for stream {@code stream}, positioned to read from {@code from}. */
    static Lease borrow(String stream, Map<String, String> config, TopicPartition tp, long from) {
        Lease lease;
        List<Lease> expired = new ArrayList<>();
        synchronized (IDLE) {
            long now = System.currentTimeMillis();
            IDLE.values().removeIf(idle -> now - idle.idleSince > IDLE_MS && expired.add(idle));
            lease = IDLE.remove(new Key(stream, tp));
        }
        expired.forEach(ConsumerPool::close);
        if (lease == null) {
            lease = new Lease(stream, tp, open(config, tp));
        }
        if (lease.next != from) {
            lease.kept = List.of();
            lease.keptAt = 0;
            lease.consumer.seek(tp, from);
        }
        return lease;
    }

    /** Give a healthy consumer back for the next batch. */
    static void giveBack(Lease lease) {
        lease.idleSince = System.currentTimeMillis();
        Lease displaced;
        synchronized (IDLE) {
            displaced = IDLE.put(new Key(lease.stream, lease.tp), lease);
        }
        if (displaced != null) {
            close(displaced);
        }
    }

    /** Close the idle consumers of one stream (its query stopped). */
    static void closeIdle(String stream) {
        List<Lease> closing = new ArrayList<>();
        synchronized (IDLE) {
            IDLE.values().removeIf(idle -> idle.stream.equals(stream) && closing.add(idle));
        }
        closing.forEach(ConsumerPool::close);
    }

    static void close(Lease lease) {
        try {
            lease.consumer.close(Duration.ZERO);
        } catch (RuntimeException e) {
            // an interrupted task or a dead cluster: the consumer is gone either way
        }
    }

    private static KafkaConsumer<byte[], byte[]> open(Map<String, String> config, TopicPartition tp) {
        Properties props = new Properties();
        props.putAll(config);
        props.put("enable.auto.commit", "false");
        props.put("auto.offset.reset", "none");  // a position no longer on the source is a gap, reported
        props.putIfAbsent("isolation.level", "read_committed");
        props.putIfAbsent("client.id", "geokafka-source-" + tp + "-" + OPENED.incrementAndGet());
        KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props, new ByteArrayDeserializer(),
                new ByteArrayDeserializer());
        consumer.assign(List.of(tp));
        return consumer;
    }
}
