package io.geokafka.spark;

import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.function.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.spark.TaskContext;
import org.apache.spark.util.TaskCompletionListener;

/**
 * The link between one task's reader and its writer, passed to both: while the reader waits for records it
 * lets the writer commit what it has written (a transaction per commit interval even when no more records
 * come), and learns how long it may wait before the writer wants to be asked again. A flow without a transform
 * also hands its records over here ({@link #offer}, {@link #take}): its rows carry a chunk's number, not the
 * records, which go from the consumer to the producer as they are. Spark builds the reader and the writer of a
 * task apart; each factory asks {@link #ofTask} for the task's one.
 */
final class CommitHandOff {
    private static final Map<Long, CommitHandOff> BY_TASK = new ConcurrentHashMap<>();
    /** Chunks offered and not taken kept at most: more means no writer takes them (a query whose sink is not
     * geokafka's); the oldest go, and a writer that then asks for one of them fails. */
    static final int CHUNKS_KEPT = 64;

    /** What the writer does while the reader waits: commit if due; returns ms until it is due again. */
    interface Waiting {
        /** ``caughtUp``: the reader read all there was on the source (no backlog). */
        long commitIfDue(boolean caughtUp);
    }

    private volatile Waiting writer;
    private final ConcurrentLinkedQueue<Chunk> chunks = new ConcurrentLinkedQueue<>();
    /** The number of the last chunk offered (the reader's). */
    private long offered;

    /** Records {@code [from, to)} of {@code records}, all of one source partition in offset order. */
    record Chunk(long number, List<ConsumerRecord<byte[], byte[]>> records, int from, int to) {}

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

    /** The writer: called while the reader waits. */
    void attach(Waiting commitIfDue) {
        writer = commitIfDue;
    }

    /** The writer is done (committed, aborted or closed): the reader waits on its own. */
    void detach() {
        writer = null;
    }

    /** The reader hands over records {@code [from, to)} of {@code records}; returns the chunk's number, which its
     * row carries to the writer. */
    long offer(List<ConsumerRecord<byte[], byte[]>> records, int from, int to) {
        chunks.add(new Chunk(++offered, records, from, to));
        // chunks are numbered one after another: those at least CHUNKS_KEPT behind the newest go (size() would walk
        // the queue on every offer)
        for (Chunk oldest = chunks.peek(); oldest != null && oldest.number() <= offered - CHUNKS_KEPT; oldest = chunks.peek()) {
            chunks.poll();
        }
        return offered;
    }

    /** The writer takes the chunk its row names: the oldest one offered, or the task's rows and records parted. */
    Chunk take(long number) {
        Chunk chunk = chunks.poll();
        if (chunk == null || chunk.number() != number) {
            throw new GeokafkaException(GeokafkaException.Kind.KAFKA, KafkaCodes.NONE, false, "a row named records "
                    + "(chunk " + number + ") that its task's reader did not hand over (next there: "
                    + (chunk == null ? "none" : chunk.number()) + "): the source and the sink must run in one task", null);
        }
        return chunk;
    }

    /** Let the writer commit if due ({@code caughtUp}: the reader read all there was); how long to wait for records
     * at most (at most {@code maxWaitMs}, at least 1). */
    long idle(long maxWaitMs, boolean caughtUp) {
        Waiting current = writer;
        return current == null ? maxWaitMs : Math.max(1, Math.min(maxWaitMs, current.commitIfDue(caughtUp)));
    }
}
