package io.geokafka.spark;

import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Opening a starting query's producers ahead of its first batch, in the background: on a fresh JVM that takes a
 * second or two, which then overlaps the query's planning and code generation instead of following them. The
 * first batch waits for it ({@link #await}); a stopped query's producers are closed ({@link #forget}).
 */
final class ProducerWarmup {
    private final ProducerPool producers;
    private final Map<String, CompletableFuture<Void>> warming = new ConcurrentHashMap<>();
    private final Set<String> started = ConcurrentHashMap.newKeySet();

    /** Warm-ups that open and keep their producers in ``producers``. */
    ProducerWarmup(ProducerPool producers) {
        this.producers = producers;
    }

    /** Start opening the producers of ``options``' query on a thread of its own. */
    void start(SinkOptions options) {
        warming.put(options.queryKey, CompletableFuture.runAsync(() -> producers.warm(options), r -> {
            Thread t = new Thread(r, "geokafka-warm-" + options.flow);
            t.setDaemon(true);
            t.start();
        }));
    }

    /** Wait for ``queryKey``'s warm-up if one was started (a failed open is the task's to report). */
    void await(String queryKey) {
        CompletableFuture<Void> running = warming.remove(queryKey);
        if (running != null) {
            try {
                running.join();
            } catch (RuntimeException ignored) {
                // ProducerPool.warm leaves a producer it could not open to the task
            }
        }
    }

    /** True the first time it is asked for ``queryKey``: its first batch, which waits for the warm-up. */
    boolean firstEpoch(String queryKey) {
        return started.add(queryKey);
    }

    /** The query stopped: close the producers its tasks pooled here (the next start fences their ids anyway),
     * and those a warm-up still running opens once it ends. */
    void forget(String queryKey) {
        started.remove(queryKey);
        CompletableFuture<Void> running = warming.remove(queryKey);
        if (running != null) {
            running.whenComplete((done, error) -> producers.closeQuery(queryKey));
        }
        producers.closeQuery(queryKey);
    }
}
