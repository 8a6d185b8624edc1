package io.geokafka.spark;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The commits each query of this driver made and the driver has not read yet: tasks (or the
 * {@link CommitReportServer} for tasks on other JVMs) {@link #record} them, the Python runner {@link #drain}s
 * them. A query is collected from {@link #register} to {@link #forget}; a commit recorded outside that is
 * dropped (a task still finishing after its query stopped).
 */
final class QueryCommits {
    private final Map<String, List<Map<String, Object>>> pending = new ConcurrentHashMap<>();

    /** Collect the commits of ``queryKey`` from now on. */
    void register(String queryKey) {
        pending.putIfAbsent(queryKey, new ArrayList<>());
    }

    /** True while ``queryKey`` is collected here (a local master's tasks report live). */
    boolean registered(String queryKey) {
        return pending.containsKey(queryKey);
    }

    /** Keep what a batch (or, live, one commit) of ``queryKey`` committed, under the contract's epoch fields. */
    void record(String queryKey, long epochId, List<Map<String, Object>> summaries) {
        Map<String, Object> epoch = new LinkedHashMap<>();
        epoch.put(Contract.text("epoch", "epoch"), epochId);
        epoch.put(Contract.text("epoch", "partitions"), summaries);
        pending.computeIfPresent(queryKey, (key, epochs) -> {
            epochs.add(epoch);  // under the map's lock for this key: never races forget() or drain()
            return epochs;
        });
    }

    /** The commits of ``queryKey`` recorded since the last drain, oldest first. */
    List<Map<String, Object>> drain(String queryKey) {
        List<Map<String, Object>> out = new ArrayList<>();
        pending.computeIfPresent(queryKey, (key, epochs) -> {
            out.addAll(epochs);
            epochs.clear();
            return epochs;
        });
        return out;
    }

    /** Stop collecting ``queryKey`` and drop what was not drained. */
    void forget(String queryKey) {
        pending.remove(queryKey);
    }
}
