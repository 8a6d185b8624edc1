package io.geokafka.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.producer.MockProducer;
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
}
