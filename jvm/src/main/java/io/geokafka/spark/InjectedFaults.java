package io.geokafka.spark;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.spark.SparkEnv;

/**
 * Failures a test asks for through the application's Spark configuration, to prove what a real failure would
 * do (never set otherwise): {@value #FAIL_AFTER_COMMITS} = N fails a task's first attempt right after its
 * group's N-th commit, once per flow and group in each JVM, as an executor lost mid-batch would leave it
 * (committed transactions the driver never heard of).
 */
final class InjectedFaults {
    static final String FAIL_AFTER_COMMITS = "spark.geokafka.test.failAfterCommits";
    private static final Set<String> FAILED = ConcurrentHashMap.newKeySet();

    private InjectedFaults() {}

    /** The configured N, 0 when none (or outside Spark). */
    static int failAfterCommits() {
        SparkEnv env = SparkEnv.get();
        return env == null ? 0 : env.conf().getInt(FAIL_AFTER_COMMITS, 0);
    }

    /** Throw when ``commits`` reached ``failAfter`` (> 0) on a first attempt, once per flow and group here. */
    static void afterCommit(int failAfter, int commits, boolean firstAttempt, String flow, int group) {
        if (failAfter > 0 && commits >= failAfter && firstAttempt && FAILED.add(flow + "#" + group)) {
            throw new GeokafkaException(GeokafkaException.Kind.KAFKA, -1, true, "test hook " + FAIL_AFTER_COMMITS
                    + ": failing this attempt of group " + group + " of flow " + flow + " after " + commits + " commits",
                    null);
        }
    }
}
