package io.geokafka.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Commit reports from tasks on other JVMs to the driver (a real HTTP round trip on the loopback), and the test
 * hook that fails a task after its commits. */
class CommitReportsTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    private static SinkOptions options(String queryKey, String address, String token) {
        Map<String, String> extra = new HashMap<>();
        extra.put("query_key", queryKey);
        extra.put("report_address", address);
        extra.put("report_token", token);
        return SinkOptionsTest.options(extra);
    }

    @Test
    void eachCommitReachesTheDriversRegistryAsItHappensAndNothingIsLeftForTheCommitMessage() throws Exception {
        JsonNode endpoint = JSON.readTree(SinkRegistry.listen("127.0.0.1", "127.0.0.1"));
        SinkRegistry.register("live-q");
        try {
            CommitReports reports = CommitReports.of(options("live-q", endpoint.get("address").asText(),
                    endpoint.get("token").asText()));
            reports.send(3, List.of(Map.of("topic", "orders", "partition", 0, "written", 10)));
            reports.send(3, List.of(Map.of("topic", "orders", "partition", 1, "written", 5)));
            assertEquals(List.of(), reports.finish(10_000));
            JsonNode drained = JSON.readTree(SinkRegistry.drain("live-q"));
            assertEquals(2, drained.size());
            assertEquals(3, drained.get(0).get("epoch").asInt());
            assertEquals(10, drained.get(0).get("partitions").get(0).get("written").asInt());
            assertEquals(1, drained.get(1).get("partitions").get(0).get("partition").asInt());
        } finally {
            SinkRegistry.forget("live-q");
        }
    }

    @Test
    void reportsTheDriverRefusesOrNeverGetsGoBackToTheTaskForItsCommitMessage() throws Exception {
        JsonNode endpoint = JSON.readTree(SinkRegistry.listen("127.0.0.1", "127.0.0.1"));
        SinkRegistry.register("refused-q");
        try {
            Map<String, Object> row = Map.of("topic", "orders", "partition", 0, "written", 7);
            CommitReports wrongToken = CommitReports.of(options("refused-q", endpoint.get("address").asText(), "nope"));
            wrongToken.send(1, List.of(row));
            assertEquals(List.of(row), wrongToken.finish(10_000));
            CommitReports nobody = CommitReports.of(options("refused-q", "127.0.0.1:9", "t"));  // nothing listens
            nobody.send(1, List.of(row));
            assertEquals(List.of(row), nobody.finish(10_000));
            assertEquals("[]", SinkRegistry.drain("refused-q"));
        } finally {
            SinkRegistry.forget("refused-q");
        }
    }

    @Test
    void withoutAnAddressTasksReportNothingLive() {
        assertEquals(null, CommitReports.of(SinkOptionsTest.options(Map.of())));
    }

    @Test
    void theHookFailsAFirstAttemptOnceItsCommitsReachTheCountAndOncePerFlowAndGroupInAJvm() {
        InjectedFaults.afterCommit(0, 0, 100, true, "hook-f", 0);  // not asked for
        InjectedFaults.afterCommit(3, 0, 2, true, "hook-f", 0);  // not yet
        InjectedFaults.afterCommit(3, 0, 3, false, "hook-f", 0);  // a retry never fails
        long started = System.nanoTime();
        GeokafkaException e = assertThrows(GeokafkaException.class,
                () -> InjectedFaults.afterCommit(3, 50, 3, true, "hook-f", 0));
        assertEquals(true, e.retriable());
        assertEquals(true, System.nanoTime() - started >= 50_000_000L);  // held first, as a lost executor holds it
        InjectedFaults.afterCommit(3, 0, 4, true, "hook-f", 0);  // once per flow and group in this JVM
        assertThrows(GeokafkaException.class, () -> InjectedFaults.afterCommit(3, 0, 3, true, "hook-f", 1));
    }
}
