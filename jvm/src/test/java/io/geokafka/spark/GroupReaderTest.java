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
}
