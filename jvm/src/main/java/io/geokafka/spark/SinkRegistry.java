package io.geokafka.spark;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * What each query's writes did, kept on the driver for the Python runner (read through py4j):
 * {@link #drain} returns the epochs committed since the last call, as JSON.
 */
public final class SinkRegistry {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Map<String, List<Map<String, Object>>> PENDING = new ConcurrentHashMap<>();
    private static final Map<String, Map<String, long[]>> EXPECTED = new ConcurrentHashMap<>();
    private static final java.util.Set<String> STARTED = ConcurrentHashMap.newKeySet();
    private static final Map<String, java.util.concurrent.CompletableFuture<Void>> WARMING = new ConcurrentHashMap<>();

    private SinkRegistry() {}

    static void record(String queryKey, long epochId, List<Map<String, Object>> summaries) {
        Map<String, Object> epoch = new LinkedHashMap<>();
        epoch.put("epoch", epochId);
        epoch.put("partitions", summaries);
        PENDING.computeIfAbsent(queryKey, k -> new ArrayList<>());
        synchronized (PENDING.get(queryKey)) {
            PENDING.get(queryKey).add(epoch);
        }
    }

    /** The epochs of ``queryKey`` committed since the last drain, oldest first, as a JSON list. */
    public static String drain(String queryKey) throws JsonProcessingException {
        List<Map<String, Object>> epochs = PENDING.get(queryKey);
        if (epochs == null) {
            return "[]";
        }
        List<Map<String, Object>> out;
        synchronized (epochs) {
            out = new ArrayList<>(epochs);
            epochs.clear();
        }
        return JSON.writeValueAsString(out);
    }

    /**
     * The next offset (and state-topic hint) the driver expects per source partition of
     * ``queryKey``, shared by every {@link SinkWrite} of the query: Spark builds a new write for
     * each micro-batch, and an expectation kept in one of them was lost with it (every batch then
     * opened a new transactional producer per partition instead of reusing the pooled one).
     */
    static Map<String, long[]> expectations(String queryKey, Map<String, long[]> initial) {
        return EXPECTED.computeIfAbsent(queryKey, k -> new ConcurrentHashMap<>(initial));
    }

    /**
     * Start opening the producers of a query about to start (its sink options as a JSON object), in
     * the background: on a fresh JVM that takes ~2 s, which then overlaps the query's planning and
     * code generation instead of following them. The first epoch waits for it ({@link #awaitWarm}).
     */
    public static void warmAhead(String optionsJson) {
        SinkOptions options = SinkOptions.fromJson(optionsJson);
        WARMING.put(options.queryKey, java.util.concurrent.CompletableFuture.runAsync(() -> ProducerPool.warm(options),
                r -> {
                    Thread t = new Thread(r, "geokafka-warm-" + options.flow);
                    t.setDaemon(true);
                    t.start();
                }));
    }

    /** Wait for ``queryKey``'s {@link #warmAhead} if one was started (a failed open is the task's to report). */
    static void awaitWarm(String queryKey) {
        java.util.concurrent.CompletableFuture<Void> warming = WARMING.remove(queryKey);
        if (warming != null) {
            try {
                warming.join();
            } catch (RuntimeException ignored) {
                // ProducerPool.warm leaves a producer it could not open to the task
            }
        }
    }

    /** True the first time it is asked for ``queryKey``. */
    static boolean firstEpoch(String queryKey) {
        return STARTED.add(queryKey);
    }

    /** Forget a query (it stopped). */
    public static void forget(String queryKey) {
        PENDING.remove(queryKey);
        EXPECTED.remove(queryKey);
        STARTED.remove(queryKey);
        WARMING.remove(queryKey);  // not waited for: what it opens is pooled, a later start's expectations decide reuse
    }

    /**
     * The source's or sink's typed failure in ``error``'s cause chain, as {kind, kafka_code, retriable, message},
     * or null: how the Python driver tells a failure's class without reading its message.
     */
    public static Map<String, Object> typedFailure(Throwable error) {
        for (Throwable t = error; t != null; t = t.getCause()) {
            if (t instanceof GeokafkaException s) {
                Map<String, Object> out = new LinkedHashMap<>();
                out.put("kind", s.kind());
                out.put("kafka_code", s.kafkaCode());
                out.put("retriable", s.retriable());
                out.put("message", s.getMessage());
                return out;
            }
            if (t.getCause() == t) {
                break;
            }
        }
        return null;
    }
}
