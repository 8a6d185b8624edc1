package io.geokafka.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.util.GenericArrayData;
import org.apache.spark.unsafe.types.UTF8String;
import org.junit.jupiter.api.Test;

/** The sink's per-record and per-commit decisions that need no broker. */
class SinkLogicTest {
    static GenericArrayData headers(String... keyValues) {
        Object[] rows = new Object[keyValues.length / 2];
        for (int i = 0; i < rows.length; i++) {
            rows[i] = new GenericInternalRow(new Object[] {UTF8String.fromString(keyValues[2 * i]),
                keyValues[2 * i + 1].getBytes(StandardCharsets.UTF_8)});
        }
        return new GenericArrayData(rows);
    }

    static String value(RecordHeaders headers, String key) {
        Header h = headers.lastHeader(key);
        return h == null ? null : new String(h.value(), StandardCharsets.UTF_8);
    }

    @Test
    void aRecordThatStartedOnTheTargetNeverGoesBack() {
        Provenance provenance = new Provenance("atl", "nyc", "nyc.orders", 0);
        assertNull(provenance.headers(headers("gk.origin", "nyc", "gk.src", "nyc/orders/0/5"), 17));
    }

    @Test
    void theOriginIsKeptAcrossHopsAndTheSourceReplaced() {
        RecordHeaders out = new Provenance("atl", "dal", "nyc.orders", 2).headers(
                headers("user", "u1", "gk.origin", "nyc", "gk.src", "nyc/orders/2/5"), 17);
        assertNotNull(out);
        assertEquals("nyc", value(out, "gk.origin"));
        assertEquals("atl/nyc.orders/2/17", value(out, "gk.src"));
        assertEquals("u1", value(out, "user"));
        assertEquals(3, out.toArray().length);
    }

    @Test
    void commitsStretchWhileSlowButNeverPastTwoSeconds() {
        long ms = 1_000_000L;
        assertEquals(100 * ms, TaskWriter.stretched(100 * ms, 5 * ms));
        assertEquals(450 * ms, TaskWriter.stretched(100 * ms, 50 * ms));
        assertEquals(2_000 * ms, TaskWriter.stretched(100 * ms, 900 * ms));
    }

    @Test
    void aCaughtUpWriterCommitsSoonAfterItsLastCommitAndNeverLaterThanTheInterval() {
        long ms = 1_000_000L;
        // rows pending since t=1000 ms, the last commit ended at t=990: caught up, it commits at t=1010
        assertEquals(1_010 * ms, TaskWriter.caughtUpDue(1_000 * ms, 100 * ms, 990 * ms, 20 * ms));
        // a commit just ended (t=1000) and a row came at t=1005: at t=1020, before the interval's t=1105
        assertEquals(1_020 * ms, TaskWriter.caughtUpDue(1_005 * ms, 100 * ms, 1_000 * ms, 20 * ms));
        // the interval comes first when the caught-up gap is longer
        assertEquals(1_100 * ms, TaskWriter.caughtUpDue(1_000 * ms, 100 * ms, 900 * ms, 500 * ms));
    }

    @Test
    void aPooledProducerIsReusedOnlyWhileItsCommitsAreWhatTheDriverExpects() {
        Map<String, long[]> expected = Map.of("a/0", new long[] {10, 3}, "a/1", new long[] {7, 3});
        assertEquals(true, ProducerPool.stillOwner(Map.of("a/0", 10L, "a/1", 7L), expected));
        assertEquals(true, ProducerPool.stillOwner(Map.of("a/0", 10L), expected));
        assertEquals(false, ProducerPool.stillOwner(Map.of("a/0", 12L), expected));  // someone committed after it
        assertEquals(false, ProducerPool.stillOwner(Map.of("b/0", 1L), expected));  // not this query's partition
    }

    @Test
    void aPartitionsReportResetsItsCountsButNotItsPosition() {
        PartitionWrites writes = new PartitionWrites(SinkOptionsTest.options(Map.of()), "orders", 0, 5);
        writes.written = 3;
        writes.bytes = 30;
        writes.committedNext = 8;
        Map<String, Object> first = writes.report(1);
        assertEquals(3L, first.get("written"));
        assertEquals(8L, first.get("next_offset"));
        assertEquals(1, first.get("group"));
        Map<String, Object> second = writes.report(1);
        assertEquals(0L, second.get("written"));
        assertEquals(8L, second.get("next_offset"));
    }

    @Test
    void theReaderLetsItsTasksWriterCommitWhileItWaits() {
        long[] calls = {0};
        assertEquals(100, IdleHook.idle(100));  // no writer in this thread: wait as long as asked
        IdleHook.register(() -> {
            calls[0]++;
            return 20;
        });
        try {
            assertEquals(20, IdleHook.idle(100));
            assertEquals(1, calls[0]);
        } finally {
            IdleHook.clear();
        }
        assertEquals(List.of(), List.of());
    }
}
