package io.geokafka.spark;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.connector.write.PhysicalWriteInfo;
import org.apache.spark.sql.connector.write.Write;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.apache.spark.sql.connector.write.streaming.StreamingDataWriterFactory;
import org.apache.spark.sql.connector.write.streaming.StreamingWrite;
import org.apache.spark.sql.types.StructType;

/**
 * The driver side of one query's writes: hands each batch the next offsets it expects per source
 * partition, and learns the new ones from the batch's commit messages. Tasks commit their own Kafka
 * transactions; {@link #commit} only records what they did (and tells the driver's {@link QueryCommits}).
 */
final class SinkWrite implements Write, StreamingWrite {
    private final SinkOptions options;
    private final StructType schema;
    private final Map<String, long[]> expected;

    SinkWrite(SinkOptions options, StructType schema) {
        this.options = options;
        this.schema = schema;
        this.expected = SinkRegistry.EXPECTATIONS.of(options.queryKey, options.expected);
    }

    @Override
    public String description() {
        return "geokafka exactly-once writer of flow " + options.flow;
    }

    @Override
    public StreamingWrite toStreaming() {
        return this;
    }

    @Override
    public StreamingDataWriterFactory createStreamingWriterFactory(PhysicalWriteInfo info) {
        SinkOptions batch;
        synchronized (expected) {
            batch = options.withExpected(expected);
        }
        if (options.warmProducers && SinkRegistry.WARMUP.firstEpoch(options.queryKey)) {
            SinkRegistry.WARMUP.await(options.queryKey);
        }
        return new WriterFactory(batch, schema);
    }

    @Override
    public boolean useCommitCoordinator() {
        return false;  // every task commits its own transactions; there is nothing to coordinate
    }

    @Override
    public void commit(long epochId, WriterCommitMessage[] messages) {
        synchronized (expected) {
            learn(epochId, messages);
        }
    }

    private void learn(long epochId, WriterCommitMessage[] messages) {
        String topic = Contract.text("commit_summary", "topic");
        String partition = Contract.text("commit_summary", "partition");
        String nextOffset = Contract.text("commit_summary", "next_offset");
        String stateOffset = Contract.text("commit_summary", "state_offset");
        String lastTimestamp = Contract.text("commit_summary", "last_timestamp");
        List<Map<String, Object>> news = new ArrayList<>();
        for (WriterCommitMessage message : messages) {
            if (message instanceof CommitMessage m) {
                for (Map<String, Object> s : m.positions()) {
                    String key = Contract.partitionKey((String) s.get(topic), ((Number) s.get(partition)).intValue());
                    long next = ((Number) s.get(nextOffset)).longValue();
                    long state = ((Number) s.get(stateOffset)).longValue();
                    long timestamp = ((Number) s.get(lastTimestamp)).longValue();
                    long[] before = expected.getOrDefault(key, new long[] {-1, 0, -1});
                    expected.put(key, new long[] {next, state >= 0 ? state : before[1],
                            timestamp >= 0 ? timestamp : SinkOptions.lastTimestampOf(before)});
                }
                news.addAll(m.unreported());
            }
        }
        if (!news.isEmpty()) {
            SinkRegistry.COMMITS.record(options.queryKey, epochId, news);
        }
    }

    @Override
    public void abort(long epochId, WriterCommitMessage[] messages) {
        // tasks abort their own open transactions; committed ones stay committed and are read back
    }
}
