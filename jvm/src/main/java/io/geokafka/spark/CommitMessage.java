package io.geokafka.spark;

import java.util.List;
import java.util.Map;
import org.apache.spark.sql.connector.write.WriterCommitMessage;

/** What a task reports to the driver at its end: ``positions``, per source partition where it committed (what
 * the driver plans the next batch with); ``unreported``, the commit rows (positions and counts) that did not
 * reach the driver's registry as they happened, to be recorded now (empty when every commit did: local masters,
 * or a cluster's live reports that all arrived). */
record CommitMessage(List<Map<String, Object>> positions, List<Map<String, Object>> unreported)
        implements WriterCommitMessage {
    private static final long serialVersionUID = 3L;
}
