package io.geokafka.spark;

import java.util.List;
import java.util.Map;
import org.apache.spark.sql.connector.write.WriterCommitMessage;

/** What a task reports to the driver: per source partition, where it committed and what it did. */
record CommitMessage(List<Map<String, Object>> summaries) implements WriterCommitMessage {
    private static final long serialVersionUID = 1L;
}
