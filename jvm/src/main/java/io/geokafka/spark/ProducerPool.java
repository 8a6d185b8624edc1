package io.geokafka.spark;

import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * Transactional producers kept in this JVM between tasks, one per transactional id, with the next
 * source offset they last committed. A task may reuse one only while it is still the owner (its
 * committed next is what the driver expects); anything else starts a new producer, whose
 * {@code initTransactions} fences every older writer of the id.
 */
final class ProducerPool {
    /** What geokafka sets; the flow's producer settings override all but the transactional ones. */
    static final String DEFAULT_COMPRESSION = "none";
    static final Properties DEFAULTS = new Properties();

    static {
        DEFAULTS.put("acks", "all");
        DEFAULTS.put("enable.idempotence", "true");
        // every commit flushes, so records wait for the commit, never for the linger; the linger only
        // batches a partition's records between commits: one producer per partition sends a request
        // per partition, and at 5 ms the senders cost 1.6-1.8x the CPU of 100 ms (measured 2026-11-26)
        DEFAULTS.put("linger.ms", "100");
        DEFAULTS.put("batch.size", "524288");
        // one producer per source partition, all in the heap of the JVM that runs the tasks (the
        // driver's on a local master): 16 MB is ~0.3 s of a single partition at this machine's
        // full speed (~57 MB/s), a commit flushes it every 100 ms, and a full one makes send() wait
        DEFAULTS.put("buffer.memory", "16777216");
        DEFAULTS.put("max.request.size", "1000000000");  // the target topic's max.message.bytes decides
        DEFAULTS.put("transaction.timeout.ms", "30000");
        DEFAULTS.put("delivery.timeout.ms", "120000");
        DEFAULTS.put("compression.type", DEFAULT_COMPRESSION);
        // Client metrics pushed to brokers (KIP-714). kafka-clients 3.9.1 (Spark's connector's) formats
        // a trace message in every loop of every sender thread while trace logging is off (an inverted
        // check, fixed in 4.x): with one producer per partition it took 0.75 s of a mirror's ~35 CPU s per
        // 1,000,000 x 1 KiB (async-profiler, 2026-11-26); off, 0.13 s. The source's consumers turn it
        // off as well (pipeline/query.py); a flow's producer_config can turn it back on.
        DEFAULTS.put("enable.metrics.push", "false");
    }

    record Session(KafkaProducer<byte[], byte[]> producer, long committedNext) {}

    private static final ConcurrentHashMap<String, Session> SESSIONS = new ConcurrentHashMap<>();

    private ProducerPool() {}

    /** The cached session of ``txnId`` if its committed next is ``expectedNext``; removed from the pool either way. */
    static Session take(String txnId, long expectedNext) {
        Session cached = SESSIONS.remove(txnId);
        if (cached == null) {
            return null;
        }
        if (cached.committedNext() == expectedNext) {
            return cached;
        }
        closeQuietly(cached.producer());
        return null;
    }

    /** Keep a producer that just committed up to ``committedNext``. */
    static void give(String txnId, KafkaProducer<byte[], byte[]> producer, long committedNext) {
        Session old = SESSIONS.put(txnId, new Session(producer, committedNext));
        if (old != null && old.producer() != producer) {
            closeQuietly(old.producer());
        }
    }

    /**
     * Open the producers of every expected partition that has none in the pool, side by side, and
     * pool them at their expected offsets: a task would otherwise open each on its partition's
     * first row, one after another (an {@code initTransactions} round trip each). A producer that
     * fails to open is left to the task, which reports the failure in its own words.
     */
    static void warm(SinkOptions options) {
        java.util.List<java.util.concurrent.CompletableFuture<Void>> opening = new java.util.ArrayList<>();
        java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newFixedThreadPool(
                Math.max(1, Math.min(16, options.expected.size())));
        try {
            for (Map.Entry<String, long[]> e : options.expected.entrySet()) {
                String key = e.getKey();
                int slash = key.lastIndexOf('/');
                String txnId = options.transactionalId(key.substring(0, slash), Integer.parseInt(key.substring(slash + 1)));
                long next = e.getValue()[0];
                if (SESSIONS.containsKey(txnId)) {
                    continue;
                }
                opening.add(java.util.concurrent.CompletableFuture.runAsync(() -> {
                    try {
                        give(txnId, open(options, txnId), next);
                    } catch (RuntimeException ignored) {
                        // the task opens it again and fails with the reason
                    }
                }, pool));
            }
            java.util.concurrent.CompletableFuture.allOf(opening.toArray(new java.util.concurrent.CompletableFuture[0])).join();
        } finally {
            pool.shutdown();
        }
    }

    /** A new producer for ``txnId``, transactions initialised: older writers of the id are fenced. */
    static KafkaProducer<byte[], byte[]> open(SinkOptions options, String txnId) {
        Properties props = new Properties();
        props.putAll(DEFAULTS);
        props.putAll(options.targetConfig);
        props.putAll(options.producerConfig);
        props.put("transactional.id", txnId);
        props.put("enable.idempotence", "true");
        props.put("acks", "all");
        KafkaProducer<byte[], byte[]> producer =
                new KafkaProducer<>(props, new ByteArraySerializer(), new ByteArraySerializer());
        try {
            producer.initTransactions();
        } catch (RuntimeException e) {
            closeQuietly(producer);
            throw KafkaErrors.of(e, "initialising the transactional id " + txnId + " on " + options.targetCluster);
        }
        return producer;
    }

    static void closeQuietly(KafkaProducer<byte[], byte[]> producer) {
        try {
            producer.close(java.time.Duration.ZERO);
        } catch (RuntimeException ignored) {
            // a fenced or broken producer: nothing more to do with it
        }
    }
}
