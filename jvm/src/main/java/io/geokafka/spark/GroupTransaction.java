package io.geokafka.spark;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.RecordBatchTooLargeException;
import org.apache.kafka.common.errors.RecordTooLargeException;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.record.AbstractRecords;
import org.apache.kafka.common.record.CompressionType;
import org.apache.kafka.common.record.RecordBatch;
import org.apache.spark.sql.catalyst.util.ArrayData;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One partition group's writes within a task, as KIP-618 has a task's: one transactional producer (the
 * group's fixed id of this generation) and one Kafka transaction per commit holding the group's records and
 * one packed progress record, committed together or not at all. The progress record holds the partitions that
 * moved, under the producer's next delta slot; a producer's first commit and every
 * {@link Contract#DELTA_SLOTS}-th after it hold every partition of the group, under the snapshot slot, so the
 * state topic's compaction (the latest value of each key) never loses a partition's latest position.
 */
final class GroupTransaction {
    private static final Logger LOG = LoggerFactory.getLogger(GroupTransaction.class);
    private final SinkOptions options;
    final int group;
    private final String txnId;
    private final ProducerPool producers;
    private final Producer<byte[], byte[]> producer;
    /** Commits this producer made (in every task that used it): picks the slot of the next progress record. */
    private long commits;
    private boolean open;
    private final Map<String, PartitionWrites> partitions = new LinkedHashMap<>();
    /** A newly opened writer's view of what earlier writers of its id committed (partition key -> next). */
    private final Map<String, Long> readBack;
    private final List<Failure> failures = new ArrayList<>();

    private record Failure(PartitionWrites partition, long offset, int size, Exception error) {}

    /** The writes of ``group``, with a producer taken from ``producers`` (a first attempt still the owner) or
     * opened anew there, which then learns from ``readBack`` what earlier writers of its id committed. */
    GroupTransaction(SinkOptions options, int group, boolean retry, ProducerPool producers, ReadBack readBack) {
        this.options = options;
        this.producers = producers;
        this.group = group;
        this.txnId = options.transactionalId(group);
        // A pooled producer that is still the owner (every position it committed is what the driver expects)
        // writes from the driver's expectations: nobody wrote for its partitions since, or its epoch would
        // have been fenced and its first write would fail. Any other start -- a retried attempt, a task on
        // another executor, a replacement for a lost one -- opens the id anew, which fences every earlier
        // writer of it, and then reads back what they committed: an attempt that died after some commits
        // of a batch the driver never heard the end of must not have its records written twice.
        ProducerPool.Session session = retry ? null : producers.take(txnId, options);
        if (session != null) {
            producer = session.producer();
            commits = session.commits();
            this.readBack = Map.of();
        } else {
            producer = producers.open(options, txnId);
            try {
                ProducerPool.learnTopics(producer, options.targetTopicsOf(group));
                this.readBack = Map.copyOf(readBack.committed(options, group));
            } catch (RuntimeException | Error e) {
                ProducerPool.closeQuietly(producer);  // neither pooled nor kept by anyone otherwise
                throw e;
            }
            // Every partition read back ahead of the driver is tracked, rows or none: the driver learns its
            // position from this task's report, and the pooled producer keeps it. A partition left out (on a
            // backlog, the batch's time was up before the reader reached it) kept the driver at the batch's
            // start while the pooled producer still looked like the owner, and the next task wrote what the
            // failed attempt had committed again.
            for (Map.Entry<String, Long> e : this.readBack.entrySet()) {
                TopicPartition tp = Contract.parsePartitionKey(e.getKey());
                if (e.getValue() > options.expectedOf(tp.topic(), tp.partition())[0]) {
                    partition(tp.topic(), tp.partition());
                }
            }
            if (!partitions.isEmpty()) {
                LOG.info("geokafka sink: group {} of flow {}: {} partitions resume past the batch's start, where an "
                        + "earlier writer of the group committed", group, options.flow, partitions.size());
            }
        }
    }

    /** The writes of one source partition of this group. */
    PartitionWrites partition(String topic, int partition) {
        String key = Contract.partitionKey(topic, partition);
        PartitionWrites writes = partitions.get(key);
        if (writes == null) {
            long expected = options.expectedOf(topic, partition)[0];
            writes = new PartitionWrites(options, topic, partition, Math.max(expected, readBack.getOrDefault(key, -1L)));
            partitions.put(key, writes);
        }
        return writes;
    }

    /** Handle one source row of ``p`` (rows of a partition come in offset order). */
    void write(PartitionWrites p, long offset, byte[] key, byte[] value, long timestamp, ArrayData headers, boolean keep) {
        if (skipped(p, offset, keep)) {
            return;
        }
        send(p, offset, key, value, timestamp, p.provenance.headers(headers, offset));
    }

    /** Handle one source record of ``p`` as its reader handed it over (records of a partition come in offset order). */
    void write(PartitionWrites p, ConsumerRecord<byte[], byte[]> r) {
        if (skipped(p, r.offset(), true)) {
            return;
        }
        send(p, r.offset(), r.key(), r.value(), r.timestamp(), p.provenance.headers(r.headers(), r.offset()));
    }

    /** True when the record at ``offset`` is not written: committed before (a replay) or filtered out. */
    private static boolean skipped(PartitionWrites p, long offset, boolean keep) {
        if (offset < p.committedNext) {
            p.duplicates++;
            return true;
        }
        p.next = offset + 1;
        if (!keep) {
            p.filtered++;
            return true;
        }
        return false;
    }

    /** Send one record with its target headers ``out`` (null: it started on the target, and is not sent). */
    private void send(PartitionWrites p, long offset, byte[] key, byte[] value, long timestamp, RecordHeaders out) {
        if (out == null) {
            p.cycle++;  // it started on the target: never send it back
            return;
        }
        int size = (key == null ? 0 : key.length) + (value == null ? 0 : value.length);
        if (p.maxBytes > 0 && AbstractRecords.estimateSizeInBytesUpperBound(
                RecordBatch.CURRENT_MAGIC_VALUE, CompressionType.NONE, key, value, out.toArray()) > p.maxBytes) {
            // Refused here: the broker's MESSAGE_TOO_LARGE sends the producer into splitting the batch
            // again and again until the transaction times out.
            throw tooLarge(p, offset, size, null);
        }
        begin(p);
        ProducerRecord<byte[], byte[]> record =
                new ProducerRecord<>(p.targetTopic, p.partition, timestamp < 0 ? null : timestamp, key, value, out);
        try {
            producer.send(record, (meta, error) -> {
                if (error != null) {
                    synchronized (failures) {
                        failures.add(new Failure(p, offset, size, error));
                    }
                }
            });
        } catch (RuntimeException e) {
            throw KafkaErrors.of(e, "writing " + where(p, offset));
        }
        p.written++;
        p.bytes += size;
        p.lastTimestamp = timestamp;
    }

    /** The partitions whose rows since their last report were all skipped as committed before (a replay of what a
     * failed attempt committed): nothing of theirs is committed, but their counts still go to the driver. */
    List<PartitionWrites> onlyReplayed() {
        List<PartitionWrites> out = new ArrayList<>();
        for (PartitionWrites p : partitions.values()) {
            if (!p.dirty() && p.duplicates > 0) {
                out.add(p);
            }
        }
        return out;
    }

    /** True when rows were handled since the last commit. */
    boolean dirty() {
        for (PartitionWrites p : partitions.values()) {
            if (p.dirty()) {
                return true;
            }
        }
        return false;
    }

    /** One transaction: the packed progress record (the partitions that moved, or the whole group), a flush, the
     * commit. Returns the partitions committed. */
    List<PartitionWrites> commit() {
        List<PartitionWrites> moved = new ArrayList<>();
        for (PartitionWrites p : partitions.values()) {
            if (p.dirty()) {
                moved.add(p);
            }
        }
        if (moved.isEmpty()) {
            return moved;
        }
        long[] stateOffset = {-1};
        PartitionWrites first = moved.get(0);
        begin(first);
        producer.send(progressRecord(moved), (meta, error) -> {
            if (error != null) {
                synchronized (failures) {
                    failures.add(new Failure(first, -1, 0, error));
                }
            } else {
                synchronized (stateOffset) {
                    stateOffset[0] = meta.offset();
                }
            }
        });
        try {
            producer.flush();
        } catch (RuntimeException e) {
            throw KafkaErrors.of(e, "flushing group " + group + " of flow " + options.flow);
        }
        synchronized (failures) {
            if (!failures.isEmpty()) {
                throw failure();
            }
        }
        try {
            producer.commitTransaction();
        } catch (RuntimeException e) {
            throw KafkaErrors.of(e, "committing group " + group + " of flow " + options.flow + " (" + moved.size()
                    + " partitions) to " + options.targetCluster);
        }
        open = false;
        commits++;
        long committedAt;
        synchronized (stateOffset) {
            committedAt = stateOffset[0];
        }
        for (PartitionWrites p : moved) {
            p.committedNext = p.next;
            p.stateOffset = committedAt;
        }
        return moved;
    }

    /** This commit's packed progress record: under the next delta slot the partitions that ``moved``, or, at a
     * producer's first commit and every {@link Contract#DELTA_SLOTS}-th, every partition of the group that has a
     * position under the snapshot slot. */
    private ProducerRecord<byte[], byte[]> progressRecord(List<PartitionWrites> moved) {
        long slot = commits % Contract.DELTA_SLOTS;
        List<Progress.Entry> entries = new ArrayList<>();
        if (slot == 0) {
            for (String key : options.partitionsOf(group)) {
                PartitionWrites p = partitions.get(key);
                if (p != null) {
                    if (p.next >= 0) {
                        entries.add(p.entry());
                    }
                    continue;
                }
                TopicPartition tp = Contract.parsePartitionKey(key);
                long[] expected = options.expectedOf(tp.topic(), tp.partition());
                long next = Math.max(expected[0], readBack.getOrDefault(key, -1L));
                if (next >= 0) {
                    entries.add(new Progress.Entry(tp.topic(), tp.partition(), next, SinkOptions.lastTimestampOf(expected)));
                }
            }
        } else {
            moved.forEach(p -> entries.add(p.entry()));
        }
        String key = Contract.packedProgressKey(options.flow, options.generation, group,
                slot == 0 ? Contract.SNAPSHOT_SLOT : Long.toString(slot));
        return new ProducerRecord<>(Contract.STATE_TOPIC, 0, key.getBytes(StandardCharsets.UTF_8), Progress.packed(entries));
    }

    /** Abort the open transaction now (it would hold the target's last stable offset until it times out)
     * and close the producer. */
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

    /** Keep the producer for the next batch (after a successful commit), with the positions it committed. */
    void release() {
        Map<String, Long> committed = new HashMap<>();
        partitions.forEach((key, p) -> committed.put(key, p.committedNext));
        producers.give(txnId, options.queryKey, producer, committed, commits);
    }

    /** Every partition of this task's share of the group, as the driver learns them. */
    List<Map<String, Object>> reports() {
        List<Map<String, Object>> out = new ArrayList<>();
        partitions.values().forEach(p -> out.add(p.report(group)));
        return out;
    }

    private void begin(PartitionWrites p) {
        if (!open) {
            try {
                producer.beginTransaction();
            } catch (RuntimeException e) {
                throw KafkaErrors.of(e, "beginning a transaction for group " + group + " at " + where(p, p.next));
            }
            open = true;
        }
    }

    /** The error to stop on: an oversize record names itself (a rejected batch fails its small neighbours
     * too, so the largest failed record is the culprit). */
    private GeokafkaException failure() {
        Failure largest = null;
        for (Failure f : failures) {
            if ((f.error() instanceof RecordTooLargeException || f.error() instanceof RecordBatchTooLargeException)
                    && (largest == null || f.size() > largest.size())) {
                largest = f;
            }
        }
        if (largest != null) {
            return tooLarge(largest.partition(), largest.offset(), largest.size(), largest.error());
        }
        Failure first = failures.get(0);
        return KafkaErrors.of(first.error(), first.offset() >= 0 ? "writing " + where(first.partition(), first.offset())
                : "writing the progress of group " + group + " of flow " + options.flow + " to " + Contract.STATE_TOPIC);
    }

    private GeokafkaException tooLarge(PartitionWrites p, long offset, int size, Throwable cause) {
        String text = "record " + options.sourceCluster + " " + p.topic + "/" + p.partition + " offset " + offset
                + " (" + size + " bytes) is larger than max.message.bytes of " + options.targetCluster
                + " topic " + p.targetTopic + (p.maxBytes > 0 ? " (" + p.maxBytes + ")" : "") + "; flow " + options.flow
                + " stopped";
        return new GeokafkaException(GeokafkaException.Kind.RECORD_TOO_LARGE, KafkaCodes.MESSAGE_TOO_LARGE, false, text, cause);
    }

    private String where(PartitionWrites p, long offset) {
        return options.sourceCluster + " " + p.topic + "/" + p.partition + " offset " + offset + " to "
                + options.targetCluster + " topic " + p.targetTopic;
    }
}
