package io.geokafka.spark;

import java.util.List;
import java.util.Map;
import org.apache.spark.sql.connector.write.WriterCommitMessage;

/** What a task reports to the driver at its end: per source partition, where it committed and what it did
 * since its last report; ``reportedLive``: each commit already went to the driver's registry (local
 * masters), so only the positions are news. */
record CommitMessage(List<Map<String, Object>> summaries, boolean reportedLive) implements WriterCommitMessage {
    private static final long serialVersionUID = 2L;
}
