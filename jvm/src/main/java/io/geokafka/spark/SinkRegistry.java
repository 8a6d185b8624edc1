package io.geokafka.spark;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.List;
import java.util.Map;

/**
 * The driver's entry point from Python (py4j: {@code geokafka/pipeline/query.py}), and the owner of this JVM's
 * one instance of each registry its methods reach: {@link #COMMITS} (what each query committed),
 * {@link #WRITERS} (whether its writers run), {@link #EXPECTATIONS} (the positions its batches start from),
 * {@link #WARMUP} (its producers opened ahead). Each method only hands over to the one that has the job; the
 * typed failure of a cause chain, source or sink, is {@link TypedFailure}'s.
 */
public final class SinkRegistry {
    private static final ObjectMapper JSON = new ObjectMapper();
    static final QueryCommits COMMITS = new QueryCommits();
    static final QueryWriters WRITERS = new QueryWriters();
    static final QueryExpectations EXPECTATIONS = new QueryExpectations();
    static final ProducerWarmup WARMUP = new ProducerWarmup(ProducerPool.JVM);

    private SinkRegistry() {}

    /** A query of this driver is about to start: its commits are collected from now on. */
    public static void register(String queryKey) {
        COMMITS.register(queryKey);
    }

    /** How many task writers of ``queryKey`` started in this JVM so far (local masters; 0 elsewhere). */
    public static int writers(String queryKey) {
        return WRITERS.count(queryKey);
    }

    /**
     * Listen for the commit reports of tasks on other JVMs (cluster masters), on ``bindHost``; returns the
     * address tasks post to (``advertisedHost:port``) and the token they must show, as a JSON object.
     */
    public static String listen(String bindHost, String advertisedHost) throws java.io.IOException {
        CommitReportServer server = CommitReportServer.start(bindHost, advertisedHost);
        return JSON.writeValueAsString(Map.of("address", server.address, "token", server.token));
    }

    /** The commits of ``queryKey`` reported since the last drain, oldest first, as a JSON list. */
    public static String drain(String queryKey) throws JsonProcessingException {
        return JSON.writeValueAsString(COMMITS.drain(queryKey));
    }

    /** Start opening the producers of a query about to start (its sink options as a JSON object) in the
     * background; its first batch waits for them. */
    public static void warmAhead(String optionsJson) {
        WARMUP.start(SinkOptions.fromJson(optionsJson));
    }

    /** Forget a query (it stopped) and close the producers its tasks pooled in this JVM. */
    public static void forget(String queryKey) {
        COMMITS.forget(queryKey);
        EXPECTATIONS.forget(queryKey);
        WRITERS.forget(queryKey);
        WARMUP.forget(queryKey);
    }

    /** The typed failure of the source or sink in ``error``'s cause chain as the contract's failure fields, or
     * null ({@link TypedFailure#of}). */
    public static Map<String, Object> typedFailure(Throwable error) {
        return TypedFailure.of(error);
    }

    /** True when ``queryKey`` was registered in this JVM (a local master's tasks report live). */
    static boolean registered(String queryKey) {
        return COMMITS.registered(queryKey);
    }

    /** Keep what a batch (or, live, one commit) of ``queryKey`` committed; dropped once the query is forgotten. */
    static void record(String queryKey, long epochId, List<Map<String, Object>> summaries) {
        COMMITS.record(queryKey, epochId, summaries);
    }
}
