package io.geokafka.spark;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ListOffsetsOptions;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.common.TopicPartition;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.streaming.MicroBatchStream;
import org.apache.spark.sql.connector.read.streaming.Offset;
import org.apache.spark.sql.connector.read.streaming.ReadLimit;
import org.apache.spark.sql.connector.read.streaming.ReadMaxRows;
import org.apache.spark.sql.connector.read.streaming.SupportsAdmissionControl;

/**
 * The driver's side of the source: each micro-batch asks the source cluster once for the end of every
 * assigned partition (the last stable offset under read_committed), caps the batch at
 * maxOffsetsPerTrigger records spread over the partitions by their backlog, and plans one range per
 * partition with records. Offsets are looked up here only; the readers never ask (see {@link SourceReader}).
 */
final class SourceStream implements MicroBatchStream, SupportsAdmissionControl {
    private static final long LOOKUP_TIMEOUT_MS = 30_000;
    private final SourceOptions options;
    private final List<TopicPartition> partitions = new ArrayList<>();
    /** This run of the query: its readers' consumers are kept for it alone (see {@link ConsumerPool}). */
    private final String stream = java.util.UUID.randomUUID().toString();
    private Admin admin;

    SourceStream(SourceOptions options) {
        this.options = options;
        options.assign.forEach((topic, parts) -> parts.forEach(p -> partitions.add(new TopicPartition(topic, p))));
    }

    @Override
    public Offset initialOffset() {
        Map<TopicPartition, Long> earliest = null;
        Map<TopicPartition, Long> latest = null;
        Map<TopicPartition, Long> start = new HashMap<>();
        for (TopicPartition tp : partitions) {
            Map<Integer, Long> given = options.starting.get(tp.topic());
            long next = given == null || !given.containsKey(tp.partition()) ? SourceOptions.LATEST : given.get(tp.partition());
            if (next == SourceOptions.EARLIEST) {
                earliest = earliest != null ? earliest : lookup(OffsetSpec.earliest());
                next = earliest.get(tp);
            } else if (next == SourceOptions.LATEST) {
                latest = latest != null ? latest : lookup(OffsetSpec.latest());
                next = latest.get(tp);
            }
            start.put(tp, next);
        }
        return SourceOffset.of(start);
    }

    @Override
    public ReadLimit getDefaultReadLimit() {
        return options.maxOffsetsPerTrigger > 0 ? ReadLimit.maxRows(options.maxOffsetsPerTrigger) : ReadLimit.allAvailable();
    }

    @Override
    public Offset latestOffset() {
        throw new UnsupportedOperationException("latestOffset(Offset, ReadLimit) is used instead");
    }

    @Override
    public Offset latestOffset(Offset startOffset, ReadLimit limit) {
        SourceOffset start = (SourceOffset) startOffset;
        Map<TopicPartition, Long> ends = lookup(OffsetSpec.latest());
        for (Map.Entry<TopicPartition, Long> e : ends.entrySet()) {
            long from = start.of(e.getKey().topic(), e.getKey().partition());
            if (e.getValue() < from) {
                // new records would arrive at offsets this flow counts as replicated: stop, never skip them
                throw new GeokafkaException(GeokafkaException.Kind.DATA_LOSS, -1, false, e.getKey() + ": the source log ends at "
                        + e.getValue() + ", before the replicated position " + from
                        + " (topic re-created, or records lost in an unclean leader election)", null);
            }
        }
        return SourceOffset.of(capped(start, ends, limit instanceof ReadMaxRows rows ? rows.maxRows() : Long.MAX_VALUE));
    }

    /** The ends of a batch from {@code start}: each partition's end, or, when the backlog exceeds {@code cap}
     * records, the cap shared by backlog (as Spark's Kafka source shares maxOffsetsPerTrigger). Every end
     * lies at or after its start ({@link #latestOffset(Offset, ReadLimit)} stops the query otherwise). */
    static Map<TopicPartition, Long> capped(SourceOffset start, Map<TopicPartition, Long> ends, long cap) {
        Map<TopicPartition, Long> sizes = new HashMap<>();
        long total = 0;
        for (Map.Entry<TopicPartition, Long> e : ends.entrySet()) {
            long from = start.of(e.getKey().topic(), e.getKey().partition());
            long size = from < 0 ? 0 : e.getValue() - from;
            sizes.put(e.getKey(), size);
            total += size;
        }
        Map<TopicPartition, Long> until = new HashMap<>();
        for (Map.Entry<TopicPartition, Long> e : ends.entrySet()) {
            long from = start.of(e.getKey().topic(), e.getKey().partition());
            if (from < 0 || total <= cap) {
                until.put(e.getKey(), e.getValue());
            } else {
                double share = (double) cap * sizes.get(e.getKey()) / total;
                long take = (long) (share < 1 ? Math.ceil(share) : Math.floor(share));
                until.put(e.getKey(), Math.min(e.getValue(), from + take));
            }
        }
        return until;
    }

    @Override
    public InputPartition[] planInputPartitions(Offset startOffset, Offset endOffset) {
        SourceOffset start = (SourceOffset) startOffset;
        SourceOffset end = (SourceOffset) endOffset;
        List<InputPartition> ranges = new ArrayList<>();
        for (TopicPartition tp : partitions) {
            long from = start.of(tp.topic(), tp.partition());
            long until = end.of(tp.topic(), tp.partition());
            if (from >= 0 && until > from) {
                ranges.add(new SourceRange(tp.topic(), tp.partition(), from, until));
            }
        }
        return ranges.toArray(new InputPartition[0]);
    }

    @Override
    public PartitionReaderFactory createReaderFactory() {
        return new SourceReaderFactory(options, stream);
    }

    @Override
    public Offset deserializeOffset(String json) {
        return SourceOffset.fromJson(json);
    }

    @Override
    public void commit(Offset end) {
        // progress lives in the target's state topic (written by the sink), never in the source cluster
    }

    @Override
    public void stop() {
        if (admin != null) {
            admin.close(java.time.Duration.ofSeconds(5));
            admin = null;
        }
        ConsumerPool.closeIdle(stream);  // e.g. a failed-over flow's consumers of the old source
    }

    @Override
    public String toString() {
        return "geokafka-source" + options.assign;
    }

    private Map<TopicPartition, Long> lookup(OffsetSpec spec) {
        if (admin == null) {
            Map<String, Object> config = new HashMap<>(options.clientConfig);
            config.remove("isolation.level");
            config.putIfAbsent("client.id", "geokafka-source-offsets");
            admin = Admin.create(config);
        }
        Map<TopicPartition, OffsetSpec> ask = new HashMap<>();
        partitions.forEach(tp -> ask.put(tp, spec));
        try {
            ListOffsetsResult result = admin.listOffsets(ask, new ListOffsetsOptions(options.isolation()));
            Map<TopicPartition, Long> out = new HashMap<>();
            result.all().get(LOOKUP_TIMEOUT_MS, TimeUnit.MILLISECONDS).forEach((tp, info) -> out.put(tp, info.offset()));
            return out;
        } catch (ExecutionException e) {
            throw KafkaErrors.of(e.getCause(), "source offsets of " + options.assign.keySet());
        } catch (java.util.concurrent.TimeoutException e) {
            throw new GeokafkaException(GeokafkaException.Kind.KAFKA, -1, true, "source offsets of " + options.assign.keySet()
                    + ": no answer from the source cluster within " + LOOKUP_TIMEOUT_MS + " ms", e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while looking up source offsets", e);
        }
    }
}
