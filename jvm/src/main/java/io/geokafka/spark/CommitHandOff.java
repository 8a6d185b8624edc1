package io.geokafka.spark;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;
import java.util.function.LongSupplier;
import org.apache.spark.TaskContext;
import org.apache.spark.util.TaskCompletionListener;

/**
 * The link between one task's reader and its writer, passed to both: while the reader waits for records it
 * lets the writer commit what it has written (a transaction per commit interval even when no more records
 * come), and learns how long it may wait before the writer wants to be asked again. Spark builds the reader
 * and the writer of a task apart; each factory asks {@link #ofTask} for the task's one.
 */
final class CommitHandOff {
    private static final Map<Long, CommitHandOff> BY_TASK = new ConcurrentHashMap<>();

    private volatile LongSupplier writer;

    /** A hand-off nobody else holds (outside a Spark task). */
    CommitHandOff() {}

    /** The hand-off of the running task, the same for its reader and its writer, dropped when the task
     * completes; outside a task (no {@link TaskContext}), one of its own. */
    static CommitHandOff ofTask(TaskContext task) {
        return task == null ? new CommitHandOff()
                : of(task.taskAttemptId(), done -> task.addTaskCompletionListener((TaskCompletionListener) ctx -> done.run()));
    }

    /** The hand-off of task attempt {@code attempt}; the first caller registers, through {@code whenDone}, what
     * drops it once the task is done. */
    static CommitHandOff of(long attempt, Consumer<Runnable> whenDone) {
        CommitHandOff created = new CommitHandOff();
        CommitHandOff existing = BY_TASK.putIfAbsent(attempt, created);
        if (existing != null) {
            return existing;
        }
        whenDone.accept(() -> BY_TASK.remove(attempt, created));
        return created;
    }

    /** Hand-offs of tasks still running in this JVM (for tests). */
    static int live() {
        return BY_TASK.size();
    }

    /** The writer: called while the reader waits; returns ms until it is due again. */
    void attach(LongSupplier commitIfDue) {
        writer = commitIfDue;
    }

    /** The writer is done (committed, aborted or closed): the reader waits on its own. */
    void detach() {
        writer = null;
    }

    /** Let the writer commit if due; how long to wait for records at most (at most {@code maxWaitMs}, at least 1). */
    long idle(long maxWaitMs) {
        LongSupplier current = writer;
        return current == null ? maxWaitMs : Math.max(1, Math.min(maxWaitMs, current.getAsLong()));
    }
}
