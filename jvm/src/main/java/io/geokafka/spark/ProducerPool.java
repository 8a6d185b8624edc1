package io.geokafka.spark;

import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Transactional producers kept between tasks, one per transactional id (one per partition group of a flow's
 * generation), with the next source offset of each partition they last committed. A task may reuse one only
 * while it is still the owner (every position it committed is what the driver expects); anything else starts
 * a new producer, whose {@code initTransactions} fences every older writer of the id. The idle ones are kept
 * in a {@link ClientPool}; {@link #JVM} is this JVM's (at most {@link #CAPACITY}, each closed after
 * {@link #IDLE_MS} idle, a query's closed when it stops).
 */
final class ProducerPool {
    private static final Logger LOG = LoggerFactory.getLogger(ProducerPool.class);
    static final long IDLE_MS = 120_000;
    static final int CAPACITY = 64;
    /** The driver always names the flow's compression; this is the contract's default, for the sink's own tests. */
    static final String DEFAULT_COMPRESSION = Contract.text("writer_compression");
    /** What geokafka sets; the flow's producer settings override all but the transactional ones. */
    static final Properties DEFAULTS = new Properties();

    static {
        DEFAULTS.put("acks", "all");
        DEFAULTS.put("enable.idempotence", "true");
        // every commit flushes, so a record waits for its commit, never for the linger; the linger only
        // batches records between commits
        DEFAULTS.put("linger.ms", "5");
        DEFAULTS.put("batch.size", "524288");
        // kafka-clients 3.9.1 has no transactions V2: a transaction's first send after a commit is refused
        // (CONCURRENT_TRANSACTIONS) while the markers are written and retried after this back-off (Kafka's 100 ms,
        // capped at 20 for that error); retries of other errors still grow to retry.backoff.max.ms
        DEFAULTS.put("retry.backoff.ms", "5");
        // one producer per partition group: 64 MB is ~1 s of this machine's full speed, and a commit flushes
        // it every 100 ms (or up to 2 s on a backlog); a full buffer makes send() wait
        DEFAULTS.put("buffer.memory", "67108864");
        DEFAULTS.put("max.request.size", "1000000000");  // the target topic's max.message.bytes decides
        DEFAULTS.put("transaction.timeout.ms", "30000");
        DEFAULTS.put("delivery.timeout.ms", "120000");
        DEFAULTS.put("compression.type", DEFAULT_COMPRESSION);
        // Client metrics pushed to brokers (KIP-714). kafka-clients 3.9.1 (Spark's connector's) formats
        // a trace message in every loop of every sender thread while trace logging is off (an inverted
        // check, fixed in 4.x). The source's consumers turn it off as well (pipeline/query.py); a flow's
        // producer_config can turn it back on.
        DEFAULTS.put("enable.metrics.push", "false");
    }

    /** A pooled producer: the query whose task released it, the positions it committed, and how many commits it
     * made (which slot of the packed progress record its next commit writes). */
    record Session(Producer<byte[], byte[]> producer, String queryKey, Map<String, Long> committed, long commits) {}

    /** How a new transactional producer is opened (transactions initialised, older writers fenced). */
    interface Opener {
        Producer<byte[], byte[]> open(SinkOptions options, String txnId);
    }

    /** This JVM's producers, opened for real. */
    static final ProducerPool JVM = new ProducerPool(
            ClientPool.jvmWide("producer", CAPACITY, IDLE_MS, session -> closeQuietly(session.producer())),
            ProducerPool::openTransactional);

    private final ClientPool<String, Session> sessions;
    private final Opener opener;

    /** Producers kept in {@code sessions} and opened by {@code opener}. */
    ProducerPool(ClientPool<String, Session> sessions, Opener opener) {
        this.sessions = sessions;
        this.opener = opener;
    }

    /** The pooled session of ``txnId`` if every position it committed is what ``options`` expects; removed
     * from the pool either way. */
    Session take(String txnId, SinkOptions options) {
        Session cached = sessions.take(txnId);
        if (cached == null) {
            return null;
        }
        if (!stillOwner(cached.committed(), options.expected)) {
            closeQuietly(cached.producer());
            return null;
        }
        return cached;
    }

    /** True when every position a pooled producer committed is what the driver expects: nobody else
     * committed for its partitions since (a retried task elsewhere, a restart). */
    static boolean stillOwner(Map<String, Long> committed, Map<String, long[]> expected) {
        for (Map.Entry<String, Long> e : committed.entrySet()) {
            long[] driver = expected.get(e.getKey());
            if (driver == null || driver[0] != e.getValue()) {
                return false;
            }
        }
        return true;
    }

    /** Keep a producer that just committed ``committed`` (partition -> next), after ``commits`` commits. */
    void give(String txnId, String queryKey, Producer<byte[], byte[]> producer, Map<String, Long> committed,
              long commits) {
        sessions.give(txnId, new Session(producer, queryKey, Map.copyOf(committed), commits));
    }

    /** A new producer for ``txnId``: older writers of the id are fenced. */
    Producer<byte[], byte[]> open(SinkOptions options, String txnId) {
        return opener.open(options, txnId);
    }

    /** Open the producers of every group of ``options`` that has none in the pool, side by side, and pool them
     * at their expected positions: a task would otherwise open its group's on its first row. A producer that
     * fails to open is left to the task, which reports the failure in its own words. */
    void warm(SinkOptions options) {
        ExecutorService pool = Executors.newFixedThreadPool(Math.max(1, Math.min(8, options.groupCount)));
        try {
            List<CompletableFuture<Void>> opening = new ArrayList<>();
            for (int g = 0; g < options.groupCount; g++) {
                String txnId = options.transactionalId(g);
                if (sessions.has(txnId)) {
                    continue;
                }
                Map<String, Long> committed = new LinkedHashMap<>();
                int group = g;
                for (String key : options.partitionsOf(group)) {
                    long[] expected = options.expected.get(key);
                    if (expected != null && expected[0] >= 0) {
                        committed.put(key, expected[0]);
                    }
                }
                opening.add(CompletableFuture.runAsync(() -> {
                    try {
                        Producer<byte[], byte[]> producer = open(options, txnId);
                        learnTopics(producer, options.targetTopicsOf(group));
                        give(txnId, options.queryKey, producer, committed, 0);
                    } catch (RuntimeException e) {
                        LOG.debug("geokafka sink: warming {} failed, the task opens it: {}", txnId, e.toString());
                    }
                }, pool));
            }
            CompletableFuture.allOf(opening.toArray(new CompletableFuture[0])).join();
        } finally {
            pool.shutdown();
        }
    }

    /** Threads that ask for topic metadata, shared by every producer this JVM opens. */
    static final int METADATA_THREADS = 16;
    /** How long {@link #learnTopics} waits at most; what is not known by then a send asks for itself. */
    static final long METADATA_WAIT_MS = 15_000;
    /** The JVM's metadata askers: at most {@link #METADATA_THREADS}, gone after 10 s without work, so the
     * threads a start adds stay few whatever the groups and topics. */
    private static final ThreadPoolExecutor METADATA = metadataPool();

    private static ThreadPoolExecutor metadataPool() {
        ThreadPoolExecutor pool = new ThreadPoolExecutor(METADATA_THREADS, METADATA_THREADS, 10, TimeUnit.SECONDS,
                new LinkedBlockingQueue<>(), r -> {
                    Thread t = new Thread(r, "geokafka-topic-metadata");
                    t.setDaemon(true);
                    return t;
                });
        pool.allowCoreThreadTimeOut(true);
        return pool;
    }

    /**
     * Learn the partitions of ``topics`` side by side before the first send. A producer's first send to a topic
     * waits for the topic's metadata, and its metadata requests are {@code retry.backoff.ms} apart, so a writer
     * that meets its topics one send after another waits about that long for each: 9.8 s for the 100 topics of a
     * group before its first commit. Asked together, the topics share requests. A topic that cannot be learnt is
     * left to the send, which reports it in its own words.
     */
    static void learnTopics(Producer<byte[], byte[]> producer, Collection<String> topics) {
        if (topics.size() < 2) {
            return;
        }
        List<Future<?>> asked = new ArrayList<>();
        topics.forEach(topic -> asked.add(METADATA.submit(() -> producer.partitionsFor(topic))));
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(METADATA_WAIT_MS);
        for (Future<?> answer : asked) {
            try {
                answer.get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
            } catch (ExecutionException e) {
                LOG.debug("geokafka sink: no metadata ahead of the first send: {}", e.getCause().toString());
            } catch (TimeoutException e) {
                asked.forEach(f -> f.cancel(false));  // not started yet: the sends ask for themselves
                return;
            } catch (InterruptedException e) {
                asked.forEach(f -> f.cancel(false));
                Thread.currentThread().interrupt();
                return;
            }
        }
    }

    /** Close the pooled producers a query's tasks released (the query stopped). */
    void closeQuery(String queryKey) {
        sessions.closeIf(session -> session.queryKey().equals(queryKey));
    }

    /** Producers now pooled (for tests and the mirror's resource count). */
    int pooled() {
        return sessions.size();
    }

    /** A new Kafka producer for ``txnId``, transactions initialised: older writers of the id are fenced. */
    static KafkaProducer<byte[], byte[]> openTransactional(SinkOptions options, String txnId) {
        Properties props = new Properties();
        props.putAll(DEFAULTS);
        props.putAll(options.targetConfig);
        props.putAll(options.producerConfig);
        props.put("batch.size", Integer.toString(options.batchSize(Integer.parseInt(props.getProperty("batch.size")))));
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

    /** Close a producer now, whatever state it is in. */
    static void closeQuietly(Producer<byte[], byte[]> producer) {
        try {
            producer.close(java.time.Duration.ZERO);
        } catch (RuntimeException e) {
            LOG.debug("geokafka sink: closing a producer failed: {}", e.toString());  // fenced or broken: nothing more to do
        }
    }
}
