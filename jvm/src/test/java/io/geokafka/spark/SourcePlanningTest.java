package io.geokafka.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.TopicPartition;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.streaming.PartitionOffset;
import org.junit.jupiter.api.Test;

/** The source's offset planning: one input partition per group, never per source partition. */
class SourcePlanningTest {
    static final TopicPartition A0 = new TopicPartition("a", 0);
    static final TopicPartition A1 = new TopicPartition("a", 1);
    static final TopicPartition B0 = new TopicPartition("b", 0);
    static final List<List<TopicPartition>> GROUPS = List.of(List.of(A0, B0), List.of(A1));

    static SourceOffset offsets(long a0, long a1, long b0) {
        return SourceOffset.of(Map.of(A0, a0, A1, a1, B0, b0));
    }

    @Test
    void aBatchPlansOneRangePerGroupWithRecordsAndSkipsTheEmptyOnes() {
        InputPartition[] plan = SourceStream.plan(GROUPS, offsets(0, 5, 7), offsets(10, 5, 9));
        assertEquals(1, plan.length);  // group 1 (a/1) has nothing between 5 and 5
        GroupRange range = (GroupRange) plan[0];
        assertEquals(0, range.group());
        Map<TopicPartition, long[]> ranges = range.ranges();
        assertEquals(List.of(A0, B0), List.copyOf(ranges.keySet()));
        assertEquals(10, ranges.get(A0)[1]);
        assertEquals(7, ranges.get(B0)[0]);
    }

    @Test
    void realTimeModePlansEveryGroupOpenEnded() {
        InputPartition[] plan = SourceStream.plan(GROUPS, offsets(0, 5, 7), null);
        assertEquals(2, plan.length);
        for (InputPartition p : plan) {
            assertEquals(true, ((GroupRange) p).open());
        }
    }

    @Test
    void theBatchEndIsWhereEveryGroupsReaderStopped() {
        SourceStream stream = new SourceStream(SourceOptions.parse(Map.of(
                "kafka.bootstrap.servers", "127.0.0.1:9", "assign", "{\"a\": [0, 1], \"b\": [0]}",
                "groups", "[{\"a\": [0], \"b\": [0]}, {\"a\": [1]}]")));
        SourceOffset merged = (SourceOffset) stream.mergeOffsets(new PartitionOffset[] {
            GroupOffset.of(Map.of(A0, 11L, B0, 3L)), GroupOffset.of(Map.of(A1, 8L))});
        assertEquals(11, merged.of("a", 0));
        assertEquals(8, merged.of("a", 1));
        assertEquals(3, merged.of("b", 0));
    }

    @Test
    void aCapIsSharedByBacklog() {
        Map<TopicPartition, Long> ends = new HashMap<>(Map.of(A0, 1000L, A1, 100L, B0, 0L));
        Map<TopicPartition, Long> until = SourceStream.capped(offsets(0, 0, 0), ends, 110);
        assertEquals(100, until.get(A0));
        assertEquals(10, until.get(A1));
        assertEquals(0, until.get(B0));
    }

    @Test
    void groupsMustCoverTheAssignmentExactlyOnce() {
        IllegalArgumentException twice = assertThrows(IllegalArgumentException.class, () -> SourceOptions.parse(Map.of(
                "kafka.bootstrap.servers", "h:1", "assign", "{\"a\": [0]}", "groups", "[{\"a\": [0]}, {\"a\": [0]}]")));
        assertEquals(true, twice.getMessage().contains("in two groups"), twice.getMessage());
        IllegalArgumentException missing = assertThrows(IllegalArgumentException.class, () -> SourceOptions.parse(Map.of(
                "kafka.bootstrap.servers", "h:1", "assign", "{\"a\": [0, 1]}", "groups", "[{\"a\": [0]}]")));
        assertEquals(true, missing.getMessage().contains("cover 1 partitions, the assignment 2"), missing.getMessage());
    }

    @Test
    void withoutGroupsEveryPartitionIsInOne() {
        SourceOptions options = SourceOptions.parse(Map.of("kafka.bootstrap.servers", "h:1", "assign", "{\"a\": [0, 1]}"));
        assertEquals(List.of(List.of(A0, A1)), options.groups);
    }
}
