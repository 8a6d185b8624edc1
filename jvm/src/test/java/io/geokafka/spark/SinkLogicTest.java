package io.geokafka.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.record.TimestampType;
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
    void theSourceValueWrittenAsBytesIsTheContractsForEveryOffsetWidth() {
        Provenance provenance = new Provenance("nyc", "atl", "orders", 7);
        for (long offset : new long[] {0, 9, 10, 99, 100, 12_345, 999_999_999_999L, Long.MAX_VALUE}) {
            assertEquals(Contract.sourceHeaderValue("nyc", "orders", 7, offset),
                    new String(provenance.sourceValue(offset), StandardCharsets.UTF_8));
        }
    }

    @Test
    void headerNamesAreDecodedOnceAndKeptApartFromTheRowsBytes() {
        Provenance provenance = new Provenance("atl", "dal", "nyc.orders", 2);
        RecordHeaders first = provenance.headers(headers("user", "u1", "trace-ü", "t1"), 1);
        RecordHeaders second = provenance.headers(headers("user", "u2", "trace-ü", "t2"), 2);
        assertSame(first.lastHeader("user").key(), second.lastHeader("user").key());
        assertEquals("t2", value(second, "trace-ü"));
        assertEquals("u2", value(second, "user"));
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
        // behind a backlog the reader's waits are between two fetches: the writer keeps to its interval
        assertEquals(1_100 * ms, TaskWriter.commitDue(false, 1_000 * ms, 100 * ms, 990 * ms, 2 * ms));
        assertEquals(992 * ms, TaskWriter.commitDue(true, 1_000 * ms, 100 * ms, 990 * ms, 2 * ms));
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
        List<Boolean> caughtUp = new java.util.ArrayList<>();
        CommitHandOff handOff = new CommitHandOff();
        assertEquals(100, handOff.idle(100, true));  // no writer attached: wait as long as asked
        handOff.attach(upToDate -> {
            calls[0]++;
            caughtUp.add(upToDate);
            return 20;
        });
        assertEquals(20, handOff.idle(100, true));
        assertEquals(1, calls[0]);
        assertEquals(10, handOff.idle(10, false));  // due in 20 ms, but never longer than asked
        assertEquals(List.of(true, false), caughtUp, "the writer learns whether the reader caught up");
        handOff.attach(upToDate -> 0);
        assertEquals(1, handOff.idle(100, true));  // due now: wait at least a millisecond
        handOff.detach();
        assertEquals(100, handOff.idle(100, true));
        assertEquals(2, calls[0]);
    }

    @Test
    void aTasksReaderAndWriterGetOneHandOffDroppedWhenTheTaskCompletes() {
        List<Runnable> completion = new java.util.ArrayList<>();
        int before = CommitHandOff.live();
        CommitHandOff reader = CommitHandOff.of(9_001, completion::add);
        CommitHandOff writer = CommitHandOff.of(9_001, completion::add);
        assertSame(reader, writer);
        assertEquals(1, completion.size(), "one completion listener per task");
        assertNotSame(reader, CommitHandOff.of(9_002, completion::add));
        assertNotSame(CommitHandOff.ofTask(null), CommitHandOff.ofTask(null));  // outside a task: unshared
        completion.forEach(Runnable::run);
        assertEquals(before, CommitHandOff.live());
        assertNotSame(reader, CommitHandOff.of(9_001, completion::add));  // a later task of that id is another's
        completion.get(completion.size() - 1).run();
    }

    private static ConsumerRecord<byte[], byte[]> record(long offset, String... headers) {
        RecordHeaders hs = new RecordHeaders();
        for (int i = 0; i < headers.length; i += 2) {
            hs.add(new RecordHeader(headers[i], headers[i + 1].getBytes(StandardCharsets.UTF_8)));
        }
        return new ConsumerRecord<>("nyc.orders", 2, offset, 1L, TimestampType.CREATE_TIME, 0, 1, null, new byte[] {1},
                hs, Optional.empty());
    }

    @Test
    void recordsHandedOverGoToTheWriterInOrderByTheNumberTheirRowCarries() {
        CommitHandOff handOff = new CommitHandOff();
        List<ConsumerRecord<byte[], byte[]>> polled = List.of(record(5), record(6), record(7));
        long first = handOff.offer(polled, 0, 2);
        long second = handOff.offer(polled, 2, 3);
        CommitHandOff.Chunk chunk = handOff.take(first);
        assertSame(polled, chunk.records());
        assertEquals(List.of(0, 2), List.of(chunk.from(), chunk.to()));
        assertEquals(2, handOff.take(second).from());
        GeokafkaException lost = assertThrows(GeokafkaException.class, () -> handOff.take(second + 1));
        assertFalse(lost.retriable(), "rows and records parted: a retry would part them again");
    }

    @Test
    void chunksNobodyTakesAreNotKeptForeverAndAWriterAskingForOneOfThemFails() {
        CommitHandOff handOff = new CommitHandOff();
        List<ConsumerRecord<byte[], byte[]>> polled = List.of(record(5));
        long first = handOff.offer(polled, 0, 1);
        for (int i = 0; i < CommitHandOff.CHUNKS_KEPT; i++) {
            handOff.offer(polled, 0, 1);
        }
        assertThrows(GeokafkaException.class, () -> handOff.take(first));
    }

    @Test
    void aHandedOverRecordKeepsItsUsersHeadersGetsTheOriginAndANewSourceAndNeverGoesBack() {
        Provenance provenance = new Provenance("atl", "dal", "nyc.orders", 2);
        ConsumerRecord<byte[], byte[]> r = record(17, "user", "u1", "gk.origin", "nyc", "gk.src", "nyc/orders/2/5");
        RecordHeaders out = provenance.headers(r.headers(), r.offset());
        assertNotNull(out);
        assertSame(r.headers().lastHeader("user"), out.lastHeader("user"), "the user's header as the consumer read it");
        assertEquals("nyc", value(out, "gk.origin"));
        assertEquals("atl/nyc.orders/2/17", value(out, "gk.src"));
        assertEquals(3, out.toArray().length);
        assertEquals("atl", value(provenance.headers(record(3, "user", "u2").headers(), 3), "gk.origin"));
        assertNull(new Provenance("atl", "nyc", "nyc.orders", 0).headers(record(17, "gk.origin", "nyc").headers(), 17));
    }
}
