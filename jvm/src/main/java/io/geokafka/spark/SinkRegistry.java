package io.geokafka.spark;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;

/**
 * What each query's writes did, kept on the driver for the Python runner (read through py4j): the driver
 * {@link #register}s a query before it starts, {@link #drain} returns the commits reported since the last
 * call, as JSON, and {@link #forget} ends it (and closes its pooled producers). On a local master the tasks
 * run in the driver's JVM and report every commit at once; elsewhere the driver learns them at the end of
 * each batch.
 */
public final class SinkRegistry {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Map<String, List<Map<String, Object>>> PENDING = new ConcurrentHashMap<>();
    private static final Map<String, Map<String, long[]>> EXPECTED = new ConcurrentHashMap<>();
    private static final java.util.Set<String> STARTED = ConcurrentHashMap.newKeySet();
    private static final Map<String, CompletableFuture<Void>> WARMING = new ConcurrentHashMap<>();
    private static final Map<String, java.util.concurrent.atomic.AtomicInteger> WRITERS = new ConcurrentHashMap<>();

    private SinkRegistry() {}

    /** A query of this driver is about to start: its commits are collected from now on. */
    public static void register(String queryKey) {
        PENDING.putIfAbsent(queryKey, new ArrayList<>());
    }

    /** A task writer of ``queryKey`` started in this JVM (its producer is open: the query writes). */
    static void writing(String queryKey) {
        WRITERS.computeIfAbsent(queryKey, k -> new java.util.concurrent.atomic.AtomicInteger()).incrementAndGet();
    }

    /** How many task writers of ``queryKey`` started in this JVM so far (local masters; 0 elsewhere). */
    public static int writers(String queryKey) {
        java.util.concurrent.atomic.AtomicInteger count = WRITERS.get(queryKey);
        return count == null ? 0 : count.get();
    }

    /**
     * Listen for the commit reports of tasks on other JVMs (cluster masters), on ``bindHost``; returns the
     * address tasks post to (``advertisedHost:port``) and the token they must show, as a JSON object.
     */
    public static String listen(String bindHost, String advertisedHost) throws java.io.IOException {
        CommitReportServer server = CommitReportServer.start(bindHost, advertisedHost);
        return JSON.writeValueAsString(Map.of("address", server.address, "token", server.token));
    }

    /** True when ``queryKey`` was registered in this JVM (a local master's tasks report live). */
    static boolean registered(String queryKey) {
        return PENDING.containsKey(queryKey);
    }

    /** Keep what a batch (or, live, one commit) of ``queryKey`` committed; dropped once the query is forgotten. */
    static void record(String queryKey, long epochId, List<Map<String, Object>> summaries) {
        Map<String, Object> epoch = new LinkedHashMap<>();
        epoch.put(Contract.text("epoch", "epoch"), epochId);
        epoch.put(Contract.text("epoch", "partitions"), summaries);
        PENDING.computeIfPresent(queryKey, (key, epochs) -> {
            epochs.add(epoch);  // under the map's lock for this key: never races forget() or drain()
            return epochs;
        });
    }

    /** The commits of ``queryKey`` reported since the last drain, oldest first, as a JSON list. */
    public static String drain(String queryKey) throws JsonProcessingException {
        List<Map<String, Object>> out = new ArrayList<>();
        PENDING.computeIfPresent(queryKey, (key, epochs) -> {
            out.addAll(epochs);
            epochs.clear();
            return epochs;
        });
        return JSON.writeValueAsString(out);
    }

    /**
     * The next offset (and state-topic hint) the driver expects per source partition of ``queryKey``,
     * shared by every {@link SinkWrite} of the query: Spark builds a new write for each micro-batch, and an
     * expectation kept in one of them was lost with it.
     */
    static Map<String, long[]> expectations(String queryKey, Map<String, long[]> initial) {
        return EXPECTED.computeIfAbsent(queryKey, k -> new ConcurrentHashMap<>(initial));
    }

    /**
     * Start opening the producers of a query about to start (its sink options as a JSON object), in the
     * background: on a fresh JVM that takes a second or two, which then overlaps the query's planning and
     * code generation instead of following them. The first batch waits for it ({@link #awaitWarm}).
     */
    public static void warmAhead(String optionsJson) {
        SinkOptions options = SinkOptions.fromJson(optionsJson);
        WARMING.put(options.queryKey, CompletableFuture.runAsync(() -> ProducerPool.warm(options), r -> {
            Thread t = new Thread(r, "geokafka-warm-" + options.flow);
            t.setDaemon(true);
            t.start();
        }));
    }

    /** Wait for ``queryKey``'s {@link #warmAhead} if one was started (a failed open is the task's to report). */
    static void awaitWarm(String queryKey) {
        CompletableFuture<Void> warming = WARMING.remove(queryKey);
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

    /** Forget a query (it stopped) and close the producers its tasks pooled in this JVM: the next start
     * fences their ids anyway. */
    public static void forget(String queryKey) {
        PENDING.remove(queryKey);
        EXPECTED.remove(queryKey);
        STARTED.remove(queryKey);
        WRITERS.remove(queryKey);
        CompletableFuture<Void> warming = WARMING.remove(queryKey);
        if (warming != null) {
            warming.whenComplete((done, error) -> ProducerPool.closeQuery(queryKey));
        }
        ProducerPool.closeQuery(queryKey);
    }

    /**
     * The source's or sink's typed failure in ``error``'s cause chain, as the contract's failure fields
     * {kind, kafka_code, retriable, message}, or null: how the Python driver tells a failure's class without
     * reading its message. A JVM error (out of memory, ...) anywhere in the chain comes first: nothing in
     * that JVM can be trusted any more.
     */
    public static Map<String, Object> typedFailure(Throwable error) {
        for (Throwable t = error; t != null; t = t.getCause()) {
            if (t instanceof VirtualMachineError vm) {
                return failure("JVM_FATAL", -1, false, vm.getClass().getName() + ": " + vm.getMessage());
            }
            if (t.getCause() == t) {
                break;
            }
        }
        for (Throwable t = error; t != null; t = t.getCause()) {
            if (t instanceof GeokafkaException s) {
                return failure(s.kind(), s.kafkaCode(), s.retriable(), s.getMessage());
            }
            if (t.getCause() == t) {
                break;
            }
        }
        return null;
    }

    private static Map<String, Object> failure(String kind, int code, boolean retriable, String message) {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put(Contract.field("failure", "kind"), kind);
        out.put(Contract.field("failure", "kafka_code"), code);
        out.put(Contract.field("failure", "retriable"), retriable);
        out.put(Contract.field("failure", "message"), message);
        return out;
    }
}
