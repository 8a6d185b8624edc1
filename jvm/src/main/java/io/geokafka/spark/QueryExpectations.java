package io.geokafka.spark;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The next offset (and state-topic hint) the driver expects per source partition of each query, shared by
 * every {@link SinkWrite} of the query: Spark builds a new write for each micro-batch, and an expectation kept
 * in one of them was lost with it.
 */
final class QueryExpectations {
    private final Map<String, Map<String, long[]>> byQuery = new ConcurrentHashMap<>();

    /** The expectations of ``queryKey`` ("topic/partition" -> [next, state hint]), from ``initial`` the first
     * time it is asked for. */
    Map<String, long[]> of(String queryKey, Map<String, long[]> initial) {
        return byQuery.computeIfAbsent(queryKey, k -> new ConcurrentHashMap<>(initial));
    }

    void forget(String queryKey) {
        byQuery.remove(queryKey);
    }
}
