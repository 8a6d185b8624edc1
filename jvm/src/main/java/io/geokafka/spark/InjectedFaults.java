package io.geokafka.spark;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.spark.SparkEnv;

/**
 * Failures a test asks for through the application's Spark configuration, to prove what a real failure would
 * do (never set otherwise): {@value #FAIL_AFTER_COMMITS} = N fails a task's first attempt right after its
 * group's N-th commit, once per flow and group in each JVM, as an executor lost mid-batch would leave it
 * (committed transactions the driver never heard of). {@value #STALL_MS} = M holds the failing task M ms
 * first, as a lost executor holds its task until Spark notices: past a real-time batch's end, its retry
 * reads nothing and the batch ends where it started for that group.
 */
final class InjectedFaults {
    static final String FAIL_AFTER_COMMITS = "spark.geokafka.test.failAfterCommits";
    static final String STALL_MS = "spark.geokafka.test.failStallMs";
    private static final Set<String> FAILED = ConcurrentHashMap.newKeySet();

    private InjectedFaults() {}

    /** The configured value of ``key`` ({@link #FAIL_AFTER_COMMITS}, {@link #STALL_MS}), 0 when none (or
     * outside Spark). */
    static int conf(String key) {
        SparkEnv env = SparkEnv.get();
        return env == null ? 0 : env.conf().getInt(key, 0);
    }

    /** Throw when ``commits`` reached ``failAfter`` (> 0) on a first attempt, once per flow and group here, after
     * holding the task ``stallMs``. */
    static void afterCommit(int failAfter, int stallMs, int commits, boolean firstAttempt, String flow, int group) {
        if (failAfter > 0 && commits >= failAfter && firstAttempt && FAILED.add(flow + "#" + group)) {
            try {
                Thread.sleep(stallMs);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            throw new GeokafkaException(GeokafkaException.Kind.KAFKA, KafkaCodes.NONE, true, "test hook " + FAIL_AFTER_COMMITS
                    + ": failing this attempt of group " + group + " of flow " + flow + " after " + commits + " commits",
                    null);
        }
    }
}
