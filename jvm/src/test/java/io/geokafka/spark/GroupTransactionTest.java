package io.geokafka.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.TreeSet;
import org.apache.kafka.clients.producer.MockProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** A group's writer with the producers it opens and the read-back it does injected (Kafka's MockProducer, no
 * broker): every producer it opens ends pooled or closed. */
class GroupTransactionTest {
    private final List<MockProducer<byte[], byte[]>> opened = new ArrayList<>();
    private final ProducerPool producers = new ProducerPool(
            new ClientPool<>("test", 8, 1_000, new ClientPoolTest.ManualClock(),
                    session -> ProducerPool.closeQuietly(session.producer())),
            (options, txnId) -> {
                MockProducer<byte[], byte[]> producer = new MockProducer<>(true, new ByteArraySerializer(), new ByteArraySerializer());
                producer.initTransactions();
                opened.add(producer);
                return producer;
            });
    private final SinkOptions options = SinkOptionsTest.options(Map.of());

    private static final ReadBack NEVER = (options, group) -> {
        throw new AssertionError("a producer still the owner reads nothing back");
    };

    @Test
    void aReadBackThatThrowsClosesTheProducerItWasOpenedFor() {
        GeokafkaException refused = new GeokafkaException(GeokafkaException.Kind.KAFKA, KafkaCodes.REQUEST_TIMED_OUT, true,
                "reading the state topic timed out", null);
        GeokafkaException thrown = assertThrows(GeokafkaException.class,
                () -> new GroupTransaction(options, 0, true, producers, (o, g) -> {
                    throw refused;
                }));
        assertSame(refused, thrown);
        assertEquals(1, opened.size());
        assertEquals(true, opened.get(0).closed(), "the producer opened for the read-back is closed");
        assertEquals(0, producers.pooled(), "and not pooled");
    }

    @Test
    void aWriterOpenedAnewResumesWhereTheReadBackSaysAnEarlierWriterCommitted() {
        GroupTransaction txn = new GroupTransaction(options, 0, true, producers, (o, g) -> Map.of("orders/0", 15L));
        PartitionWrites orders0 = txn.partition("orders", 0);
        assertEquals(15, orders0.committedNext);  // the driver expected 10
        txn.write(orders0, 12, null, "v".getBytes(), 1, null, true);
        assertEquals(1, orders0.duplicates);
        assertEquals(0, opened.get(0).history().size());
        txn.abort();
        assertEquals(true, opened.get(0).closed());
    }

    /** The next batch's task after an attempt that committed a partition's whole backlog meets only what was
     * committed: nothing of that partition moves, but its skipped records still reach the driver's counts. */
    @Test
    void aPartitionWhoseRowsWereAllCommittedBeforeIsReportedWithItsSkippedRecordsThoughItDidNotMove() {
        GroupTransaction txn = new GroupTransaction(options, 0, true, producers,
                (o, g) -> Map.of("orders/0", 15L, "orders/1", 5L));
        PartitionWrites orders0 = txn.partition("orders", 0);
        PartitionWrites orders1 = txn.partition("orders", 1);
        for (long offset = 12; offset < 15; offset++) {
            txn.write(orders0, offset, null, "v".getBytes(), 1, null, true);
        }
        txn.write(orders1, 5, null, "v".getBytes(), 1, null, true);
        assertEquals(List.of(orders0), txn.onlyReplayed());
        assertEquals(List.of(orders1), txn.commit(), "only the partition with new records moves");
        Map<String, Object> report = orders0.report(0);
        assertEquals(3L, report.get("duplicates_skipped"));
        assertEquals(15L, report.get("next_offset"), "its position is the one read back");
        assertEquals(List.of(), txn.onlyReplayed(), "once reported, its counts start again");
        txn.release();
    }

    @Test
    void aCommittedWriterIsPooledAndTakenBackWithoutAReadBackWhileStillTheOwner() {
        GroupTransaction first = new GroupTransaction(options, 0, false, producers, (o, g) -> Map.of());
        PartitionWrites orders0 = first.partition("orders", 0);
        first.write(orders0, 10, null, "v".getBytes(), 1, null, true);
        assertEquals(List.of(orders0), first.commit());
        first.release();
        assertEquals(1, producers.pooled());
        assertEquals(1, opened.get(0).commitCount());

        SinkOptions next = options.withExpected(Map.of("orders/0", new long[] {11, 0}));
        GroupTransaction second = new GroupTransaction(next, 0, false, producers, NEVER);
        assertEquals(1, opened.size(), "the pooled producer is reused");
        assertEquals(0, producers.pooled());
        assertEquals(11, second.partition("orders", 0).committedNext);
        second.abort();
    }

    /** A retry, or the next batch's task that finds no pooled producer after a failed attempt: both open anew. */
    @ParameterizedTest(name = "retry {0}")
    @ValueSource(booleans = {true, false})
    void aWriterOpenedAnewThatGetsRowsOfSomePartitionsOnlyHandsOnWhatItReadBackForTheOthers(boolean isRetry) {
        // a failed attempt committed orders/0 to 15 and orders/2 to 40; the writer after it gets rows of orders/0
        // only in its batch (a backlog: its reader had not reached orders/2 when the batch's time was up)
        GroupTransaction retry = new GroupTransaction(options, 0, isRetry, producers,
                (o, g) -> Map.of("orders/0", 15L, "orders/2", 40L));
        PartitionWrites orders0 = retry.partition("orders", 0);
        retry.write(orders0, 15, null, "v".getBytes(), 1, null, true);
        assertEquals(List.of(orders0), retry.commit());
        List<Map<String, Object>> reports = retry.reports();
        retry.release();

        Map<String, long[]> learned = new HashMap<>();  // what the driver learns from the task's commit message
        for (Map<String, Object> r : reports) {
            learned.put(Contract.partitionKey((String) r.get("topic"), ((Number) r.get("partition")).intValue()),
                    new long[] {((Number) r.get("next_offset")).longValue(), 0});
        }
        assertEquals(40, learned.get("orders/2")[0], "the driver learns the read-back position of a partition without rows");
        GroupTransaction next = new GroupTransaction(options.withExpected(learned), 0, false, producers, NEVER);
        assertEquals(1, opened.size(), "the pooled producer is still the owner");
        PartitionWrites orders2 = next.partition("orders", 2);
        next.write(orders2, 39, null, "v".getBytes(), 1, null, true);
        assertEquals(1, orders2.duplicates, "what the failed attempt committed is not written again");
        assertEquals(16, next.partition("orders", 0).committedNext);
        next.abort();
    }

    /** A group's commits over several tasks (its pooled producer, a task that fails after committing, a retry that
     * opens the id anew), each moving a few random partitions: each progress record holds only what moved but
     * at a snapshot, and once the state topic is compacted (the latest value of each key) the last mention of
     * every partition is still its committed position. */
    @Test
    void compactedPackedProgressStillHoldsEveryPartitionsLastCommittedPosition() {
        StringBuilder all = new StringBuilder();
        for (int p = 0; p < 40; p++) {
            all.append(p == 0 ? "" : ",").append(p);
        }
        SinkOptions base = SinkOptionsTest.options(Map.of("groups", "[{\"orders\": [" + all + "]}]", "expected", "{}"));
        Random random = new Random(7);
        Map<String, long[]> truth = new TreeMap<>();  // partition -> [next, last timestamp] committed
        Map<String, long[]> driver = new HashMap<>();  // what the driver learned
        Map<Integer, Integer> movedByCommit = new HashMap<>();
        int commitNo = 0;
        long ts = 1_700_000_000_000L;
        for (int task = 0; task < 6; task++) {
            boolean fails = task == 2;  // commits, then dies before the driver hears of it
            Map<String, Long> committed = new HashMap<>();
            truth.forEach((k, v) -> committed.put(k, v[0]));
            GroupTransaction txn = new GroupTransaction(base.withExpected(driver), 0, task == 3, producers,
                    (o, g) -> committed);
            int commits = 20 + random.nextInt(60);
            for (int c = 0; c < commits; c++) {
                TreeSet<Integer> moving = new TreeSet<>();
                for (int m = 1 + random.nextInt(3); m > 0; m--) {
                    moving.add(random.nextInt(40));
                }
                for (int p : moving) {
                    PartitionWrites writes = txn.partition("orders", p);
                    txn.write(writes, Math.max(0, writes.next), null, "v".getBytes(), ++ts, null, true);
                }
                assertEquals(moving.size(), txn.commit().size());
                for (int p : moving) {
                    PartitionWrites writes = txn.partition("orders", p);
                    truth.put(writes.key(), new long[] {writes.committedNext, writes.lastTimestamp});
                }
                movedByCommit.put(commitNo++, moving.size());
            }
            if (fails) {
                txn.abort();
                continue;
            }
            for (Map<String, Object> r : txn.reports()) {
                driver.put(Contract.partitionKey((String) r.get("topic"), ((Number) r.get("partition")).intValue()),
                        new long[] {((Number) r.get("next_offset")).longValue(), ((Number) r.get("state_offset")).longValue(),
                                ((Number) r.get("last_timestamp")).longValue()});
            }
            txn.release();
        }
        assertEquals(2, opened.size(), "the failed task's producer was closed and the retry opened a new one");

        List<ProducerRecord<byte[], byte[]>> log = new ArrayList<>();
        opened.forEach(producer -> producer.history().stream()
                .filter(r -> r.topic().equals(Contract.STATE_TOPIC)).forEach(log::add));
        assertEquals(commitNo, log.size(), "one progress record a commit");
        int snapshots = 0;
        for (int i = 0; i < log.size(); i++) {
            String key = new String(log.get(i).key(), StandardCharsets.UTF_8);
            List<Progress.Entry> entries = new ArrayList<>();
            Progress.forEachPacked(log.get(i).value(), entries::add);
            if (key.endsWith("/" + Contract.SNAPSHOT_SLOT)) {
                snapshots++;
            } else {
                assertEquals(movedByCommit.get(i), entries.size(), "a delta holds what moved: " + key);
            }
        }
        assertEquals(true, snapshots >= 2 && snapshots <= 2 + commitNo / Contract.DELTA_SLOTS, snapshots + " snapshots");

        Map<String, Integer> latestOfKey = new HashMap<>();
        for (int i = 0; i < log.size(); i++) {
            latestOfKey.put(new String(log.get(i).key(), StandardCharsets.UTF_8), i);
        }
        Map<String, long[]> lastMention = new TreeMap<>();
        for (int i = 0; i < log.size(); i++) {
            if (latestOfKey.containsValue(i)) {  // compaction keeps it
                Progress.forEachPacked(log.get(i).value(), e -> lastMention.put(Contract.partitionKey(e.topic(), e.partition()),
                        new long[] {e.next(), e.lastTimestamp()}));
            }
        }
        assertEquals(true, latestOfKey.size() <= 1 + Contract.DELTA_SLOTS);
        Map<String, List<Long>> want = new LinkedHashMap<>();
        truth.forEach((k, v) -> want.put(k, List.of(v[0], v[1])));
        Map<String, List<Long>> got = new LinkedHashMap<>();
        lastMention.forEach((k, v) -> got.put(k, List.of(v[0], v[1])));
        assertEquals(want, got);
    }
}
