package io.geokafka.spark;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
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
import org.apache.spark.sql.connector.read.streaming.PartitionOffset;
import org.apache.spark.sql.connector.read.streaming.ReadLimit;
import org.apache.spark.sql.connector.read.streaming.ReadMaxRows;
import org.apache.spark.sql.connector.read.streaming.SupportsAdmissionControl;
import org.apache.spark.sql.connector.read.streaming.SupportsRealTimeMode;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The driver's side of the source. One input partition (one Spark task, one consumer) per partition
 * group, never per source partition. In micro-batch mode each batch asks the source cluster once for the
 * end of every assigned partition (the last stable offset under read_committed, one ListOffsets request
 * per broker), caps the batch at maxOffsetsPerTrigger records spread over the partitions by their
 * backlog, and plans each group's ranges. In real-time mode (Spark's {@code SupportsRealTimeMode}) a
 * group's task reads from the batch's start for as long as the batch lasts and says where it stopped
 * ({@link #mergeOffsets}).
 */
final class SourceStream implements MicroBatchStream, SupportsAdmissionControl, SupportsRealTimeMode {
    private static final Logger LOG = LoggerFactory.getLogger(SourceStream.class);
    private static final long LOOKUP_TIMEOUT_MS = 30_000;
    private final SourceOptions options;
    private final List<TopicPartition> partitions;
    /** This run of the query: its readers' consumers are kept for it alone (see {@link ConsumerPool}). */
    private final String stream = java.util.UUID.randomUUID().toString();
    private Admin admin;

    SourceStream(SourceOptions options) {
        this.options = options;
        this.partitions = options.partitions();
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
                throw new GeokafkaException(GeokafkaException.Kind.DATA_LOSS, KafkaCodes.NONE, false, e.getKey() + ": the source log ends at "
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
        return plan((SourceOffset) startOffset, (SourceOffset) endOffset);
    }

    /** Real-time mode: every group from ``start``, open-ended. */
    @Override
    public InputPartition[] planInputPartitions(Offset startOffset) {
        return plan((SourceOffset) startOffset, null);
    }

    @Override
    public void prepareForRealTimeMode() {
        LOG.info("geokafka source {}: real-time mode, {} groups over {} partitions", options.assign.keySet(),
                options.groups.size(), partitions.size());
    }

    /** One range per group that has records to read (every group when ``end`` is null: real-time mode). */
    static InputPartition[] plan(List<List<TopicPartition>> groups, SourceOffset start, SourceOffset end) {
        List<InputPartition> out = new ArrayList<>();
        for (int g = 0; g < groups.size(); g++) {
            Map<TopicPartition, Long> from = new LinkedHashMap<>();
            Map<TopicPartition, Long> until = new LinkedHashMap<>();
            for (TopicPartition tp : groups.get(g)) {
                long f = start.of(tp.topic(), tp.partition());
                long u = end == null ? GroupRange.OPEN : end.of(tp.topic(), tp.partition());
                if (f >= 0 && u > f) {
                    from.put(tp, f);
                    until.put(tp, u);
                }
            }
            if (!from.isEmpty()) {
                out.add(GroupRange.of(g, from, end == null ? null : until));
            }
        }
        return out.toArray(new InputPartition[0]);
    }

    private InputPartition[] plan(SourceOffset start, SourceOffset end) {
        return plan(options.groups, start, end);
    }

    /** Real-time mode: the batch's end, from where each group's reader stopped. */
    @Override
    public Offset mergeOffsets(PartitionOffset[] offsets) {
        Map<String, Map<Integer, Long>> merged = new TreeMap<>();
        for (PartitionOffset offset : offsets) {
            ((GroupOffset) offset).next().forEach((topic, parts) ->
                    merged.computeIfAbsent(topic, t -> new TreeMap<>()).putAll(parts));
        }
        return new SourceOffset(merged);
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
        ConsumerPool.closeStream(stream);  // e.g. a failed-over flow's consumers of the old source
    }

    @Override
    public String toString() {
        return "geokafka-source" + options.assign.keySet();
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
            throw new GeokafkaException(GeokafkaException.Kind.KAFKA, KafkaCodes.NONE, true, "source offsets of " + options.assign.keySet()
                    + ": no answer from the source cluster within " + LOOKUP_TIMEOUT_MS + " ms", e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while looking up source offsets", e);
        }
    }
}
