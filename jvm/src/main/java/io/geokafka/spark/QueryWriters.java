package io.geokafka.spark;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/** How many task writers of each query started in this JVM: on a local master, whether a query writes yet. */
final class QueryWriters {
    private final Map<String, AtomicInteger> started = new ConcurrentHashMap<>();

    /** A task writer of ``queryKey`` started here (its producer is open: the query writes). */
    void started(String queryKey) {
        started.computeIfAbsent(queryKey, k -> new AtomicInteger()).incrementAndGet();
    }

    /** How many task writers of ``queryKey`` started here so far. */
    int count(String queryKey) {
        AtomicInteger count = started.get(queryKey);
        return count == null ? 0 : count.get();
    }

    void forget(String queryKey) {
        started.remove(queryKey);
    }
}
