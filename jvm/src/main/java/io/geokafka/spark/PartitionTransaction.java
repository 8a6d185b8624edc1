package io.geokafka.spark;

import java.util.ArrayList;
import java.util.List;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.errors.RecordBatchTooLargeException;
import org.apache.kafka.common.errors.RecordTooLargeException;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.record.AbstractRecords;
import org.apache.kafka.common.record.CompressionType;
import org.apache.kafka.common.record.RecordBatch;
import org.apache.spark.sql.catalyst.util.ArrayData;

/**
 * One source partition's writes within a task: its records and its progress record go to the
 * target in Kafka transactions of the partition's fixed transactional id, committed together or
 * not at all. Rows below the committed position are skipped (a replayed batch writes nothing twice).
 */
final class PartitionTransaction {
    private static final int WRITTEN = 0;
    private static final int DUPLICATES = 1;
    private static final int CYCLE = 2;
    private static final int FILTERED = 3;
    private static final int BYTES = 4;
    private static final int LAST_TS = 5;

    final String topic;
    final int partition;
    private final SinkOptions options;
    private final String txnId;
    private final String targetTopic;
    private final long maxBytes;  // 0: not checked here
    private final Provenance provenance;
    private final byte[] progressKey;
    private KafkaProducer<byte[], byte[]> producer;
    private long committedNext;
    private long next;
    private boolean open;
    private long stateOffset = -1;
    final long[] stats = {0, 0, 0, 0, 0, -1};
    private final List<Object[]> failures = new ArrayList<>();  // {offset, size, exception}

    PartitionTransaction(SinkOptions options, String topic, int partition, boolean retry) {
        this.options = options;
        this.topic = topic;
        this.partition = partition;
        this.txnId = options.transactionalId(topic, partition);
        this.targetTopic = options.topicMap.get(topic);
        Long limit = options.maxMessageBytes.get(targetTopic);
        this.maxBytes = limit != null && options.uncompressed() ? limit : 0;
        if (targetTopic == null) {
            throw new GeokafkaException(GeokafkaException.Kind.KAFKA, -1, false,
                    "flow " + options.flow + ": no target topic for source topic " + topic, null);
        }
        this.provenance = new Provenance(options.sourceCluster, options.targetCluster, topic, partition);
        this.progressKey = Progress.key(options.flow, topic, partition);
        long[] expected = options.expected.getOrDefault(topic + "/" + partition, new long[] {-1, 0});
        // The driver's expectation is exact for a task's first attempt: it fenced every writer and read
        // the progress before the query started, and learns each later commit from the epoch's commit.
        // Only a retried attempt can follow a commit the driver never heard of: then read it back.
        ProducerPool.Session session = retry ? null : ProducerPool.take(txnId, expected[0]);
        if (session != null) {
            producer = session.producer();
            committedNext = session.committedNext();
        } else {
            producer = ProducerPool.open(options, txnId);
            committedNext = retry
                    ? Math.max(expected[0], Progress.committedNext(options.targetConfig, progressKey, expected[1]))
                    : expected[0];
        }
        next = committedNext;
    }

    /** Handle one source row (rows come in offset order). */
    void write(long offset, byte[] key, byte[] value, long timestamp, ArrayData headers, boolean keep) {
        if (offset < committedNext) {
            stats[DUPLICATES]++;
            return;
        }
        next = offset + 1;
        if (!keep) {
            stats[FILTERED]++;
            return;
        }
        RecordHeaders out = provenance.headers(headers, offset);
        if (out == null) {
            stats[CYCLE]++;  // it started on the target: never send it back
            return;
        }
        int size = (key == null ? 0 : key.length) + (value == null ? 0 : value.length);
        if (maxBytes > 0 && AbstractRecords.estimateSizeInBytesUpperBound(
                RecordBatch.CURRENT_MAGIC_VALUE, CompressionType.NONE, key, value, out.toArray()) > maxBytes) {
            // Refused here: the broker's MESSAGE_TOO_LARGE sends the producer into splitting the
            // batch again and again until the transaction times out.
            throw tooLarge(offset, size, null);
        }
        begin();
        ProducerRecord<byte[], byte[]> record =
                new ProducerRecord<>(targetTopic, partition, timestamp < 0 ? null : timestamp, key, value, out);
        try {
            producer.send(record, (meta, error) -> {
                if (error != null) {
                    synchronized (failures) {
                        failures.add(new Object[] {offset, size, error});
                    }
                }
            });
        } catch (RuntimeException e) {
            throw KafkaErrors.of(e, "writing " + where(offset));
        }
        stats[WRITTEN]++;
        stats[BYTES] += size;
        stats[LAST_TS] = timestamp;
    }

    /** True when rows were handled since the last commit (the progress moved). */
    boolean dirty() {
        return next > committedNext;
    }

    /** Write the progress record and commit; afterwards nothing of this partition is pending. */
    void commit() {
        if (!dirty()) {
            return;
        }
        begin();
        long[] offset = {-1};
        producer.send(new ProducerRecord<>(Progress.STATE_TOPIC, 0, progressKey, Progress.value(next, stats[LAST_TS])),
                (meta, error) -> {
                    if (error != null) {
                        synchronized (failures) {
                            failures.add(new Object[] {-1L, 0, error});
                        }
                    } else {
                        offset[0] = meta.offset();
                    }
                });
        try {
            producer.flush();
        } catch (RuntimeException e) {
            throw KafkaErrors.of(e, "flushing " + where(next - 1));
        }
        synchronized (failures) {
            if (!failures.isEmpty()) {
                throw failure();
            }
        }
        try {
            producer.commitTransaction();
        } catch (RuntimeException e) {
            throw KafkaErrors.of(e, "committing " + where(next - 1));
        }
        open = false;
        committedNext = next;
        stateOffset = offset[0];
    }

    /** Abort the open transaction now (it would hold the target's last stable offset until it times
     * out) and close the producer. */
    void abort() {
        try {
            if (open) {
                producer.abortTransaction();
            }
        } catch (RuntimeException ignored) {
            // fenced or broken: its transaction dies with it
        }
        ProducerPool.closeQuietly(producer);
        open = false;
    }

    /** Keep the producer for the next batch (after a successful commit). */
    void release() {
        ProducerPool.give(txnId, producer, committedNext);
    }

    java.util.Map<String, Object> summary() {
        return Progress.summary(topic, partition, committedNext, stateOffset, stats);
    }

    private void begin() {
        if (!open) {
            try {
                producer.beginTransaction();
            } catch (RuntimeException e) {
                throw KafkaErrors.of(e, "beginning a transaction for " + where(next));
            }
            open = true;
        }
    }

    /** The error to stop on: an oversize record names itself (a rejected batch fails its small
     * neighbours too, so the largest failed record is the culprit). */
    private GeokafkaException failure() {
        Object[] largest = null;
        for (Object[] f : failures) {
            Throwable t = (Throwable) f[2];
            if ((t instanceof RecordTooLargeException || t instanceof RecordBatchTooLargeException)
                    && (largest == null || (int) f[1] > (int) largest[1])) {
                largest = f;
            }
        }
        if (largest != null) {
            return tooLarge((long) largest[0], (int) largest[1], (Throwable) largest[2]);
        }
        Object[] first = failures.get(0);
        long offset = (long) first[0];
        return KafkaErrors.of((Throwable) first[2], offset >= 0 ? "writing " + where(offset)
                : "writing progress of " + topic + "/" + partition + " to " + Progress.STATE_TOPIC);
    }

    private GeokafkaException tooLarge(long offset, int size, Throwable cause) {
        String text = "record " + options.sourceCluster + " " + topic + "/" + partition + " offset " + offset
                + " (" + size + " bytes) is larger than max.message.bytes of " + options.targetCluster
                + " topic " + targetTopic + (maxBytes > 0 ? " (" + maxBytes + ")" : "") + "; flow " + options.flow
                + " stopped";
        return new GeokafkaException(GeokafkaException.Kind.RECORD_TOO_LARGE, 10, false, text, cause);
    }

    private String where(long offset) {
        return options.sourceCluster + " " + topic + "/" + partition + " offset " + offset + " to "
                + options.targetCluster + " topic " + targetTopic;
    }
}
