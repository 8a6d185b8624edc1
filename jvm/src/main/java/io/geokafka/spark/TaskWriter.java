package io.geokafka.spark;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.TaskContext;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.write.DataWriter;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * Writes one task's rows: the rows of one partition group (the source reads one group per task), all in
 * the group's transactions, committed every {@code commit_interval_ms} (records become visible to
 * read_committed consumers within about that long, whatever the batch size), while the reader waits for
 * records too (the task's {@link CommitHandOff}), and at the end of the task. While commits are slow (a backlog: each
 * flushes a lot), the interval stretches to nine times the last commit's duration, at most 2 s, so
 * committing takes at most a tenth of the task's time.
 */
final class TaskWriter implements DataWriter<InternalRow> {
    private final SinkOptions options;
    private final long epochId;
    private final boolean retry;
    private final int key;
    private final int value;
    private final int topic;
    private final int partition;
    private final int offset;
    private final int ts;
    private final int headers;
    private final int keep;
    /** The column naming a chunk of records handed over by the task's reader ({@link CommitHandOff#take}; -1: a
     * row per record). */
    private final int chunk;
    private final long commitIntervalNanos;
    /** The interval in force: {@link #commitIntervalNanos}, stretched while commits are slow. */
    private long intervalNanos;
    private final Map<Integer, GroupTransaction> groups = new LinkedHashMap<>();
    private GroupTransaction currentGroup;
    private PartitionWrites current;
    private UTF8String currentTopic;
    private int currentPartition = -1;
    /** When the oldest row not yet committed was handled (-1: nothing pending). */
    private long pendingSince = -1;
    /** When the last commit ended. */
    private long lastCommitEnd = System.nanoTime();
    private final long caughtUpNanos;
    /** Local masters: each commit is reported to the driver's registry at once (same JVM). */
    private final boolean live;
    /** Cluster masters: each commit is posted to the driver as it happens (null: the driver listens for none). */
    private final CommitReports reports;
    /** This attempt is the task's first (not a retry, not a resubmitted stage's). */
    private final boolean firstAttempt;
    private final int failAfterCommits;
    private final int failStallMs;
    private int commits;
    /** The task's link to its reader, which lets this writer commit while it waits for records. */
    private final CommitHandOff handOff;

    TaskWriter(SinkOptions options, StructType schema, long epochId, CommitHandOff handOff) {
        this.options = options;
        this.handOff = handOff;
        this.epochId = epochId;
        TaskContext task = TaskContext.get();
        // A retry must not take a pooled producer (it would trust the driver's expectations, which miss what the
        // failed attempt committed). GroupTransaction also reads back whenever it opens a producer anew, so a
        // retry that looks like a first attempt (a resubmitted stage numbers its tasks from 0) is safe too.
        this.firstAttempt = task != null && task.attemptNumber() == 0 && task.stageAttemptNumber() == 0;
        this.retry = !firstAttempt;
        this.failAfterCommits = InjectedFaults.conf(InjectedFaults.FAIL_AFTER_COMMITS);
        this.failStallMs = failAfterCommits > 0 ? InjectedFaults.conf(InjectedFaults.STALL_MS) : 0;
        topic = schema.fieldIndex("topic");
        partition = schema.fieldIndex("partition");
        chunk = field(schema, "chunk");
        boolean perRecord = chunk < 0;
        key = perRecord ? schema.fieldIndex("key") : -1;
        value = perRecord ? schema.fieldIndex("value") : -1;
        offset = perRecord ? schema.fieldIndex("offset") : -1;
        ts = perRecord ? schema.fieldIndex("ts") : -1;
        headers = perRecord ? schema.fieldIndex("headers") : -1;
        keep = field(schema, "keep");
        commitIntervalNanos = options.commitIntervalMs * 1_000_000L;
        intervalNanos = commitIntervalNanos;
        caughtUpNanos = Math.min(commitIntervalNanos, options.caughtUpCommitMs * 1_000_000L);
        live = SinkRegistry.COMMITS.registered(options.queryKey);
        if (live) {
            SinkRegistry.WRITERS.started(options.queryKey);
        }
        reports = live ? null : CommitReports.of(options);
        handOff.attach(this::commitIfDue);
    }

    @Override
    public void write(InternalRow row) {
        UTF8String t = row.getUTF8String(topic);
        int p = row.getInt(partition);
        if (current == null || p != currentPartition || !t.equals(currentTopic)) {
            String name = t.toString();
            int group = options.groupOf(name, p);
            currentGroup = groups.computeIfAbsent(group, g -> new GroupTransaction(options, g, retry, ProducerPool.JVM,
                    ReadBack.STATE_TOPIC));
            current = currentGroup.partition(name, p);
            currentTopic = t.clone();
            currentPartition = p;
        }
        if (chunk >= 0) {
            CommitHandOff.Chunk records = handOff.take(row.getLong(chunk));
            for (int i = records.from(); i < records.to(); i++) {
                currentGroup.write(current, records.records().get(i));
            }
        } else {
            boolean kept = keep < 0 || row.isNullAt(keep) || row.getBoolean(keep);
            currentGroup.write(current, row.getLong(offset), row.isNullAt(key) ? null : row.getBinary(key),
                    row.isNullAt(value) ? null : row.getBinary(value), row.isNullAt(ts) ? -1 : row.getLong(ts),
                    row.isNullAt(headers) ? null : row.getArray(headers), kept);
        }
        long now = System.nanoTime();
        if (pendingSince < 0) {
            pendingSince = now;  // the interval counts from the oldest uncommitted row, not the task's start
        } else if (now - pendingSince >= intervalNanos) {
            commitAll();
        }
    }

    private static int field(StructType schema, String name) {
        return java.util.Arrays.asList(schema.fieldNames()).contains(name) ? schema.fieldIndex(name) : -1;
    }

    /** Called by the reader when it has nothing more to hand out now and waits: commit if due, which is sooner
     * than the interval when the reader has caught up with the source ({@code caughtUp}: no backlog); ms until the
     * next commit is due. */
    private long commitIfDue(boolean caughtUp) {
        if (pendingSince < 0) {
            return Long.MAX_VALUE;
        }
        long now = System.nanoTime();
        long due = commitDue(caughtUp, pendingSince, intervalNanos, lastCommitEnd, caughtUpNanos);
        if (now >= due) {
            commitAll();
            return Long.MAX_VALUE;
        }
        return Math.max(1, (due - now) / 1_000_000L);
    }

    @Override
    public WriterCommitMessage commit() {
        handOff.detach();
        commitAll();
        List<Map<String, Object>> positions = new ArrayList<>();
        for (GroupTransaction txn : groups.values()) {
            txn.release();
            positions.addAll(txn.reports());
        }
        groups.clear();
        // every commit went to the driver as it happened (counts since then are 0), or what did not arrive goes now
        List<Map<String, Object>> unreported = live ? List.of()
                : reports != null ? reports.finish(REPORTS_FINISH_MS) : positions;
        return new CommitMessage(positions, unreported);
    }

    /** How long a task's end waits for its last commit reports to reach the driver before carrying them itself. */
    static final long REPORTS_FINISH_MS = 5_000;

    @Override
    public void abort() {
        handOff.detach();
        for (GroupTransaction txn : groups.values()) {
            txn.abort();  // never leave a transaction open behind a failed task
        }
        groups.clear();
    }

    @Override
    public void close() {
        handOff.detach();  // producers are released to the pool on commit and closed on abort
    }

    private void commitAll() {
        long started = System.nanoTime();
        for (GroupTransaction txn : groups.values()) {
            List<PartitionWrites> replayed = txn.onlyReplayed();
            List<PartitionWrites> moved = txn.commit();
            if ((live || reports != null) && (!moved.isEmpty() || !replayed.isEmpty())) {
                List<Map<String, Object>> rows = new ArrayList<>();
                moved.forEach(p -> rows.add(p.report(txn.group)));
                replayed.forEach(p -> rows.add(p.report(txn.group)));
                if (live) {
                    SinkRegistry.COMMITS.record(options.queryKey, epochId, rows);
                } else {
                    reports.send(epochId, rows);
                }
            }
            if (moved.isEmpty()) {
                continue;
            }
            commits++;
            InjectedFaults.afterCommit(failAfterCommits, failStallMs, commits, firstAttempt, options.flow, txn.group);
        }
        pendingSince = -1;
        lastCommitEnd = System.nanoTime();
        intervalNanos = stretched(commitIntervalNanos, lastCommitEnd - started);
    }

    /** When a waiting writer commits: as {@link #caughtUpDue} when its reader caught up with the source, else (a
     * backlog: more records are on their way) once its oldest pending row waited the interval (nanoTime values). */
    static long commitDue(boolean caughtUp, long pendingSince, long intervalNanos, long lastCommitEnd, long caughtUpNanos) {
        return caughtUp ? caughtUpDue(pendingSince, intervalNanos, lastCommitEnd, caughtUpNanos) : pendingSince + intervalNanos;
    }

    /** When a caught-up writer commits: once its oldest pending row waited the interval, or once the caught-up
     * gap passed since the last commit, whichever comes first (nanoTime values). */
    static long caughtUpDue(long pendingSince, long intervalNanos, long lastCommitEnd, long caughtUpNanos) {
        return Math.min(pendingSince + intervalNanos, lastCommitEnd + caughtUpNanos);
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
