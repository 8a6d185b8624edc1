package io.geokafka.spark;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.apache.spark.TaskContext;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.write.DataWriter;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * Writes one task's rows: each source partition through its own {@link PartitionTransaction},
 * committed every {@code commit_interval_ms} (records become visible to read_committed consumers
 * within about that long, whatever the batch size) and at the end of the task. While commits are
 * slow (a backlog: each flushes a lot), the interval stretches to nine times the last commit's
 * duration, at most 2 s, so committing takes at most a tenth of the task's time.
 */
final class TaskWriter implements DataWriter<InternalRow> {
    /** Commits of several partitions run side by side: each is a round trip to its coordinator. */
    private static final ExecutorService COMMITTERS = Executors.newCachedThreadPool(r -> {
        Thread t = new Thread(r, "geokafka-commit");
        t.setDaemon(true);
        return t;
    });

    private final SinkOptions options;
    private final boolean retry;
    private final int key;
    private final int value;
    private final int topic;
    private final int partition;
    private final int offset;
    private final int ts;
    private final int headers;
    private final int keep;
    private final long commitIntervalNanos;
    /** The interval in force: {@link #commitIntervalNanos}, stretched while commits are slow. */
    private long intervalNanos;
    private final Map<String, PartitionTransaction> partitions = new LinkedHashMap<>();
    private PartitionTransaction current;
    private UTF8String currentTopic;
    private int currentPartition = -1;
    /** When the oldest record not yet committed was written (-1: nothing pending). */
    private long pendingSince = -1;

    TaskWriter(SinkOptions options, StructType schema) {
        this.options = options;
        TaskContext task = TaskContext.get();
        // A write stage is never resubmitted as a whole, so the attempt number tells every retry.
        this.retry = task == null || task.attemptNumber() > 0;
        key = schema.fieldIndex("key");
        value = schema.fieldIndex("value");
        topic = schema.fieldIndex("topic");
        partition = schema.fieldIndex("partition");
        offset = schema.fieldIndex("offset");
        ts = schema.fieldIndex("ts");
        headers = schema.fieldIndex("headers");
        keep = java.util.Arrays.asList(schema.fieldNames()).contains("keep") ? schema.fieldIndex("keep") : -1;
        commitIntervalNanos = options.commitIntervalMs * 1_000_000L;
        intervalNanos = commitIntervalNanos;
    }

    @Override
    public void write(InternalRow row) {
        UTF8String t = row.getUTF8String(topic);
        int p = row.getInt(partition);
        if (current == null || p != currentPartition || !t.equals(currentTopic)) {
            String name = t.toString();
            current = partitions.computeIfAbsent(name + "/" + p, k -> new PartitionTransaction(options, name, p, retry));
            currentTopic = t.clone();
            currentPartition = p;
        }
        boolean kept = keep < 0 || row.isNullAt(keep) || row.getBoolean(keep);
        current.write(row.getLong(offset), row.isNullAt(key) ? null : row.getBinary(key),
                row.isNullAt(value) ? null : row.getBinary(value), row.isNullAt(ts) ? -1 : row.getLong(ts),
                row.isNullAt(headers) ? null : row.getArray(headers), kept);
        long now = System.nanoTime();
        if (pendingSince < 0) {
            pendingSince = now;  // the interval counts from the oldest uncommitted record, not the task's start
        } else if (now - pendingSince >= intervalNanos) {
            commitAll();
        }
    }

    @Override
    public WriterCommitMessage commit() {
        commitAll();
        List<Map<String, Object>> summaries = new ArrayList<>();
        for (PartitionTransaction txn : partitions.values()) {
            txn.release();
            summaries.add(txn.summary());
        }
        partitions.clear();
        return new CommitMessage(summaries);
    }

    @Override
    public void abort() {
        for (PartitionTransaction txn : partitions.values()) {
            txn.abort();  // never leave a transaction open behind a failed task
        }
        partitions.clear();
    }

    @Override
    public void close() {
        // producers are released to the pool on commit and closed on abort
    }

    private void commitAll() {
        long started = System.nanoTime();
        List<PartitionTransaction> dirty = new ArrayList<>();
        for (PartitionTransaction txn : partitions.values()) {
            if (txn.dirty()) {
                dirty.add(txn);
            }
        }
        if (dirty.size() == 1) {
            dirty.get(0).commit();
        } else if (!dirty.isEmpty()) {
            CompletableFuture<?>[] all = dirty.stream()
                    .map(txn -> CompletableFuture.runAsync(txn::commit, COMMITTERS))
                    .toArray(CompletableFuture[]::new);
            try {
                CompletableFuture.allOf(all).join();
            } catch (java.util.concurrent.CompletionException e) {
                throw e.getCause() instanceof RuntimeException r ? r : e;
            }
        }
        pendingSince = -1;
        intervalNanos = stretched(commitIntervalNanos, System.nanoTime() - started);
    }

    /** Commits at most this share of a writer's time: a commit (flush, then EndTxn and its markers)
     * stalls the task, and on a backlog 100-ms commits took a third of it. */
    static final int COMMIT_SHARE_DIVISOR = 10;
    /** However slow the commits, records become visible at least this often. */
    static final long MAX_STRETCHED_NANOS = 2_000_000_000L;

    /** The interval until the next commit: the configured one, or longer when the last commit took
     * {@code commitNanos}, so that committing stays under 1/{@link #COMMIT_SHARE_DIVISOR} of the time. */
    static long stretched(long configuredNanos, long commitNanos) {
        long bounded = Math.min((COMMIT_SHARE_DIVISOR - 1) * commitNanos, MAX_STRETCHED_NANOS);
        return Math.max(configuredNanos, bounded);
    }
}
