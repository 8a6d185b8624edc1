package io.geokafka.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** A group's reader and the consumer it borrows (a real KafkaConsumer that never connects: assigning, seeking
 * and asking its position need no broker). */
class GroupReaderTest {
    private static final String STREAM = "group-reader-test";
    private final TopicPartition orders0 = new TopicPartition("orders", 0);
    private final TopicPartition orders1 = new TopicPartition("orders", 1);

    @AfterEach
    void closeTheStream() {
        ConsumerPool.closeStream(STREAM);
    }

    private GroupReader reader() {
        Map<TopicPartition, Long> starts = new LinkedHashMap<>();
        starts.put(orders0, 5L);
        starts.put(orders1, 7L);
        return new GroupReader(SourceOptions.parse(ContractTest.minimalSource()), STREAM, GroupRange.of(0, starts, null),
                new CommitHandOff());
    }

    @Test
    void aRealTimeBatchThatSparkEndedKeepsItsConsumerForTheNextBatch() {
        int before = ConsumerPool.idle();
        GroupReader reader = reader();
        // Spark's real-time wrapper checks the batch's time itself before it asks for a record: when the time is up
        // it only asks where the reader stopped, and the reader never sees the end in nextWithTimeout
        GroupOffset stopped = (GroupOffset) reader.getOffset();
        assertEquals(Map.of("orders", Map.of(0, 5L, 1, 7L)), stopped.next());
        reader.close();
        assertEquals(before + 1, ConsumerPool.idle(), "the consumer is kept, its fetches and position with it");
    }

    @Test
    void aReadThatDidNotEndClosesItsConsumer() {
        int before = ConsumerPool.idle();
        GroupReader reader = reader();
        reader.close();  // the task failed or was interrupted: where the consumer is is not worth keeping
        assertEquals(before, ConsumerPool.idle());
    }

    @Test
    void aChunkHandedOverEndsBeforeTheFirstRecordAtOrPastTheBatchsEnd() {
        java.util.List<org.apache.kafka.clients.consumer.ConsumerRecord<byte[], byte[]>> polled = new java.util.ArrayList<>();
        for (long offset : new long[] {5, 6, 8, 9}) {  // 7: a transaction marker
            polled.add(new org.apache.kafka.clients.consumer.ConsumerRecord<>("orders", 0, offset, null, new byte[] {1}));
        }
        assertEquals(2, GroupReader.chunkEnd(polled, 0, 8));
        assertEquals(3, GroupReader.chunkEnd(polled, 2, 9));
        assertEquals(4, GroupReader.chunkEnd(polled, 1, Long.MAX_VALUE));
        assertEquals(2, GroupReader.chunkEnd(polled, 2, 8), "nothing due: an empty chunk, never handed out");
    }
}
