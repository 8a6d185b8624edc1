package io.geokafka.spark;

import java.util.LinkedHashMap;
import java.util.Map;

/** One source partition's share of its group's transactions: where its committed progress is, where its
 * writes are, and what was done since the last report. Rows below the committed position are skipped (a
 * replayed batch writes nothing twice). */
final class PartitionWrites {
    final String topic;
    final int partition;
    final String targetTopic;
    /** The target topic's max.message.bytes when records go out uncompressed; 0: not checked here. */
    final long maxBytes;
    final Provenance provenance;
    /** The next source offset committed on the target (what a restart resumes from). */
    long committedNext;
    /** The next source offset after the rows handled so far (committed or not). */
    long next;
    /** Offset of the last committed progress record in the state topic (-1: none this run). */
    long stateOffset = -1;
    /** The timestamp of the last source record written, as far as known (-1: unknown). */
    long lastTimestamp;
    /** Since the last report: written, duplicates skipped, cycle skipped, filtered, bytes. */
    long written;
    long duplicates;
    long cycle;
    long filtered;
    long bytes;

    PartitionWrites(SinkOptions options, String topic, int partition, long committedNext) {
        this.topic = topic;
        this.partition = partition;
        this.targetTopic = options.topicMap.get(topic);
        if (targetTopic == null) {
            throw new GeokafkaException(GeokafkaException.Kind.KAFKA, KafkaCodes.NONE, false,
                    "flow " + options.flow + ": no target topic for source topic " + topic, null);
        }
        Long limit = options.maxMessageBytes.get(targetTopic);
        this.maxBytes = limit != null && options.uncompressed() ? limit : 0;
        this.provenance = new Provenance(options.sourceCluster, options.targetCluster, topic, partition);
        this.lastTimestamp = SinkOptions.lastTimestampOf(options.expectedOf(topic, partition));
        this.committedNext = committedNext;
        this.next = committedNext;
    }

    /** Its position in a packed progress record (as of the rows handled so far). */
    Progress.Entry entry() {
        return new Progress.Entry(topic, partition, next, lastTimestamp);
    }

    /** Its partition key ({@link Contract#partitionKey}). */
    String key() {
        return Contract.partitionKey(topic, partition);
    }

    /** True when rows were handled since the last commit (the progress moved). */
    boolean dirty() {
        return next > committedNext;
    }

    /** What the driver learns of this partition: its committed position and the counts since the last
     * report (which are then reset), under the contract's field names. */
    Map<String, Object> report(int group) {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put(name("topic"), topic);
        out.put(name("partition"), partition);
        out.put(name("group"), group);
        out.put(name("next_offset"), committedNext);
        out.put(name("state_offset"), stateOffset);
        out.put(name("written"), written);
        out.put(name("duplicates_skipped"), duplicates);
        out.put(name("cycle_skipped"), cycle);
        out.put(name("filtered"), filtered);
        out.put(name("bytes"), bytes);
        out.put(name("last_timestamp"), lastTimestamp);
        written = duplicates = cycle = filtered = bytes = 0;
        return out;
    }

    private static String name(String role) {
        return Contract.text("commit_summary", role);
    }
}
