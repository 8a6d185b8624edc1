package io.geokafka.spark;

import java.time.Duration;
import java.util.ArrayDeque;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Set;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.OffsetOutOfRangeException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.Headers;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.util.GenericArrayData;
import org.apache.spark.sql.connector.read.streaming.PartitionOffset;
import org.apache.spark.sql.connector.read.streaming.SupportsRealTimeRead;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * Reads one partition group with one pooled consumer for all its partitions.
 *
 * <p>Micro-batch mode ({@link #next()}): hands out each partition's records of [from, until) in offset
 * order (offsets of transaction markers and aborted records are never returned, so a partition is done
 * when its consumer's position reaches its end), pauses a partition once done, and keeps what it read past
 * an end for the next batch. Real-time mode ({@link #nextWithTimeout}): hands out records as they come
 * until the batch's time is up, and says where each partition stopped ({@link #getOffset()}).
 *
 * <p>While it waits for records it lets the task's writer commit ({@link CommitHandOff}): records already
 * written become visible on time even when no more arrive. It never looks up offsets (the driver does,
 * once per batch). Rows have the columns of Spark's Kafka source with headers; with {@code handOver} (a flow
 * without a transform), a row names a chunk of one partition's records, handed to the writer through the
 * {@link CommitHandOff} as the consumer returned them.
 */
final class GroupReader implements SupportsRealTimeRead<InternalRow> {
    private static final long POLL_MS = 100;
    private static final RecordStatus RECORD = RecordStatus.newStatusWithoutArrivalTime(true);
    private static final RecordStatus NO_RECORD = RecordStatus.newStatusWithoutArrivalTime(false);
    private final SourceOptions options;
    private final GroupRange range;
    private ConsumerPool.Lease lease;
    private boolean healthy;
    /** Cursors with records read and not handed out, in the order they are handed out. */
    private final ArrayDeque<ConsumerPool.Cursor> ready = new ArrayDeque<>();
    /** Cursors of this batch not done yet (micro-batch mode). */
    private final Map<TopicPartition, ConsumerPool.Cursor> active = new LinkedHashMap<>();
    private ConsumerRecord<byte[], byte[]> current;
    /** The partitions the last poll that returned records returned records of. */
    private Set<TopicPartition> lastPolled = Set.of();
    /** Records handed over: the number of the chunk the current row names. */
    private long currentChunk;
    private UTF8String currentTopic;
    /** The task's link to its writer, which may commit while this reader waits. */
    private final CommitHandOff handOff;

    GroupReader(SourceOptions options, String stream, GroupRange range, CommitHandOff handOff) {
        this.options = options;
        this.handOff = handOff;
        this.range = range;
        this.lease = ConsumerPool.borrow(stream, range.group(), options.clientConfig, options.groups.get(range.group()),
                range.ranges());
        for (ConsumerPool.Cursor cursor : lease.cursors.values()) {
            if (!cursor.done) {
                active.put(cursor.tp, cursor);
                if (cursor.pending()) {
                    ready.add(cursor);
                }
            }
        }
    }

    /** Micro-batch mode: the next record of the batch, false once every partition reached its end. */
    @Override
    public boolean next() {
        long lastProgress = System.nanoTime();
        while (true) {
            if (handOut(true)) {
                return true;
            }
            if (finishPartitionsAtTheirEnd()) {
                lastProgress = System.nanoTime();
            }
            if (active.isEmpty()) {
                return finished();
            }
            if (poll(handOff.idle(POLL_MS, caughtUp()))) {
                lastProgress = System.nanoTime();
            } else if (System.nanoTime() - lastProgress > options.pollTimeoutMs * 1_000_000L) {
                ConsumerPool.Cursor waiting = active.values().iterator().next();
                throw new GeokafkaException(GeokafkaException.Kind.KAFKA, KafkaCodes.NONE, true, "source " + waiting.tp + ": nothing read at "
                        + "offset " + position(waiting) + " (the batch ends at " + waiting.until + ") within "
                        + options.pollTimeoutMs + " ms: is the source cluster reachable?", null);
            }
        }
    }

    /** Real-time mode: the next record within ``timeoutMs``, or none when the batch's time is up. */
    @Override
    public RecordStatus nextWithTimeout(Long timeoutMs) {
        long deadline = System.nanoTime() + timeoutMs * 1_000_000L;
        while (true) {
            if (handOut(false)) {
                return RECORD;
            }
            long leftMs = (deadline - System.nanoTime()) / 1_000_000L;
            if (leftMs <= 0) {
                finished();
                return NO_RECORD;
            }
            poll(handOff.idle(Math.min(leftMs, POLL_MS), caughtUp()));
        }
    }

    /** Real-time mode: where each partition of the group stopped (the next batch starts there). Spark asks it
     * once, when the batch's time is up; its wrapper checks the time before it asks for a record, so a reader
     * still handing out records then (a backlog) sees no other end: this is the clean end, and its consumer is
     * kept for the next batch. */
    @Override
    public PartitionOffset getOffset() {
        Map<TopicPartition, Long> positions = new LinkedHashMap<>();
        for (ConsumerPool.Cursor cursor : active.values()) {
            cursor.next = cursor.pending() ? cursor.records.get(cursor.at).offset() : position(cursor);
            positions.put(cursor.tp, cursor.next);
        }
        finished();
        return GroupOffset.of(positions);
    }

    @Override
    public InternalRow get() {
        if (options.handOver) {
            return new GenericInternalRow(new Object[] {currentTopic, current.partition(), currentChunk});
        }
        ConsumerRecord<byte[], byte[]> r = current;
        return new GenericInternalRow(new Object[] {
            r.key(), r.value(), currentTopic, r.partition(), r.offset(), r.timestamp() * 1000L, r.timestampType().id,
            headers(r.headers())});
    }

    @Override
    public void close() {
        if (lease == null) {
            return;
        }
        if (healthy) {
            ConsumerPool.giveBack(lease);
        } else {
            ConsumerPool.close(lease);  // a failed or interrupted read: its positions are not worth keeping
        }
        lease = null;
    }

    /** Hand out the next record that is due (handing over: the next chunk, one partition's records that are due,
     * offered to the writer); ``bounded``: only below each partition's end. */
    private boolean handOut(boolean bounded) {
        while (!ready.isEmpty()) {
            ConsumerPool.Cursor cursor = ready.peekFirst();
            if (!cursor.pending()) {
                cursor.drop();
                ready.pollFirst();
                continue;
            }
            ConsumerRecord<byte[], byte[]> record = cursor.records.get(cursor.at);
            if (bounded && record.offset() >= cursor.until) {
                ready.pollFirst();  // kept for the next batch
                finish(cursor);
                continue;
            }
            if (options.handOver) {
                int end = chunkEnd(cursor.records, cursor.at, bounded ? cursor.until : Long.MAX_VALUE);
                currentChunk = handOff.offer(cursor.records, cursor.at, end);
                record = cursor.records.get(end - 1);
                cursor.at = end;
            } else {
                cursor.at++;
            }
            cursor.next = record.offset() + 1;
            current = record;
            currentTopic = cursor.topic;
            return true;
        }
        return false;
    }

    /** Partitions with nothing pending whose consumer reached their end (markers past the last record). */
    private boolean finishPartitionsAtTheirEnd() {
        boolean any = false;
        for (ConsumerPool.Cursor cursor : active.values().toArray(new ConsumerPool.Cursor[0])) {
            if (!cursor.pending() && position(cursor) >= cursor.until) {
                finish(cursor);
                any = true;
            }
        }
        return any;
    }

    private void finish(ConsumerPool.Cursor cursor) {
        cursor.done = true;
        cursor.next = cursor.until;
        active.remove(cursor.tp);
        lease.consumer.pause(java.util.List.of(cursor.tp));
    }

    /** One poll of the group's consumer; true when it returned records. */
    private boolean poll(long timeoutMs) {
        ConsumerRecords<byte[], byte[]> polled;
        try {
            polled = lease.consumer.poll(Duration.ofMillis(Math.max(0, timeoutMs)));
        } catch (OffsetOutOfRangeException e) {
            throw gap(e);
        } catch (RuntimeException e) {
            throw KafkaErrors.of(e, "source group " + range.group() + " " + active.keySet());
        }
        if (polled.isEmpty()) {
            return false;
        }
        lastPolled = polled.partitions();
        for (TopicPartition tp : polled.partitions()) {
            ConsumerPool.Cursor cursor = lease.cursors.get(tp);
            cursor.records = polled.records(tp);
            cursor.at = 0;
            ready.add(cursor);
        }
        return true;
    }

    /** False while a partition of the last poll that returned records has more on the source to read (a
     * backlog: the writer commits at its interval); true otherwise, the lag unknown included. */
    private boolean caughtUp() {
        for (TopicPartition tp : lastPolled) {
            OptionalLong lag = lease.consumer.currentLag(tp);
            if (lag.isPresent() && lag.getAsLong() > 0) {
                return false;
            }
        }
        return true;
    }

    private long position(ConsumerPool.Cursor cursor) {
        try {
            return lease.consumer.position(cursor.tp);
        } catch (RuntimeException e) {
            throw KafkaErrors.of(e, "source " + cursor.tp);
        }
    }

    private boolean finished() {
        healthy = true;
        return false;
    }

    /** A partition's log starts after its position (retention, delete-records) or ends before it: the
     * query stops, and the driver names the gap (and with skip_gaps, counts it and starts past it). */
    private GeokafkaException gap(OffsetOutOfRangeException e) {
        return new GeokafkaException(GeokafkaException.Kind.DATA_LOSS, KafkaCodes.OFFSET_OUT_OF_RANGE,
                false, "source offsets " + e.offsetOutOfRangePartitions() + " are no longer on the source (retention, "
                + "delete-records or a re-created topic)", e);
    }

    /** The end of the chunk of {@code records} from {@code from} on: the first record at or past {@code until}. */
    static int chunkEnd(java.util.List<ConsumerRecord<byte[], byte[]>> records, int from, long until) {
        int to = from;
        while (to < records.size() && records.get(to).offset() < until) {
            to++;
        }
        return to;
    }

    private static GenericArrayData headers(Headers headers) {
        Header[] all = headers.toArray();
        if (all.length == 0) {
            return null;
        }
        Object[] rows = new Object[all.length];
        for (int i = 0; i < all.length; i++) {
            rows[i] = new GenericInternalRow(new Object[] {UTF8String.fromString(all[i].key()), all[i].value()});
        }
        return new GenericArrayData(rows);
    }
}
