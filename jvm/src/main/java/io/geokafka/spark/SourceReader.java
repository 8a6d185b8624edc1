package io.geokafka.spark;

import java.time.Duration;
import java.util.List;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.OffsetOutOfRangeException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.Headers;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.util.GenericArrayData;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * Reads one {@link SourceRange} with a pooled consumer: polls until the consumer's position reaches the
 * range's end (offsets of transaction markers and aborted records are never returned, so the last record
 * may come before it), keeps what it read past the end for the next batch. Unlike Spark's Kafka source,
 * it never looks up the partition's offsets between polls (two ListOffsets per poll, each discarding
 * the fetch in flight). Rows have the columns of Spark's Kafka source with headers.
 */
final class SourceReader implements PartitionReader<InternalRow> {
    private static final long POLL_MS = 100;
    private final SourceOptions options;
    private final SourceRange range;
    private final UTF8String topic;
    private ConsumerPool.Lease lease;
    private boolean healthy;
    private List<ConsumerRecord<byte[], byte[]>> batch = List.of();
    private int at;
    private ConsumerRecord<byte[], byte[]> current;

    SourceReader(SourceOptions options, String stream, SourceRange range) {
        this.options = options;
        this.range = range;
        this.topic = UTF8String.fromString(range.topic());
        this.lease = ConsumerPool.borrow(stream, options.clientConfig, new TopicPartition(range.topic(), range.partition()),
                range.from());
        this.batch = lease.kept;
        this.at = lease.keptAt;
    }

    @Override
    public boolean next() {
        long lastProgress = System.nanoTime();
        long seen = -1;
        while (true) {
            if (at < batch.size()) {
                ConsumerRecord<byte[], byte[]> record = batch.get(at);
                if (record.offset() >= range.until()) {
                    return finished();
                }
                at++;
                current = record;
                return true;
            }
            long position;
            try {
                position = lease.consumer.position(lease.tp);
            } catch (RuntimeException e) {
                throw KafkaErrors.of(e, "source " + lease.tp);
            }
            if (position >= range.until()) {
                return finished();
            }
            if (position != seen) {  // records, or only transaction markers, were read since the last look
                seen = position;
                lastProgress = System.nanoTime();
            } else if (System.nanoTime() - lastProgress > options.pollTimeoutMs * 1_000_000L) {
                throw new GeokafkaException(GeokafkaException.Kind.KAFKA, -1, true, "source " + lease.tp + ": nothing read at offset "
                        + position + " (the batch ends at " + range.until() + ") within " + options.pollTimeoutMs
                        + " ms: is the source cluster reachable?", null);
            }
            try {
                batch = lease.consumer.poll(Duration.ofMillis(POLL_MS)).records(lease.tp);
                at = 0;
            } catch (OffsetOutOfRangeException e) {
                throw gap(position, e);
            } catch (RuntimeException e) {
                throw KafkaErrors.of(e, "source " + lease.tp);
            }
        }
    }

    @Override
    public InternalRow get() {
        ConsumerRecord<byte[], byte[]> r = current;
        return new GenericInternalRow(new Object[] {
            r.key(), r.value(), topic, r.partition(), r.offset(), r.timestamp() * 1000L, r.timestampType().id,
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
            ConsumerPool.close(lease);  // a failed or interrupted read: its position is not worth keeping
        }
        lease = null;
    }

    private boolean finished() {
        lease.kept = batch;
        lease.keptAt = at;
        lease.next = range.until();
        healthy = true;
        return false;
    }

    /** The partition's log starts after {@code position} (retention, delete-records) or ends before it: the
     * query stops, and the driver names the gap (and with skip_gaps, counts it and starts past it). */
    private GeokafkaException gap(long position, OffsetOutOfRangeException e) {
        return new GeokafkaException(GeokafkaException.Kind.DATA_LOSS, org.apache.kafka.common.protocol.Errors.OFFSET_OUT_OF_RANGE.code(),
                false, lease.tp + " offset " + position + " is no longer on the source (retention, delete-records or a "
                + "re-created topic)", e);
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
