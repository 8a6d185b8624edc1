package io.geokafka.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

class SinkOptionsTest {
    static Map<String, String> minimal() {
        Map<String, String> options = new HashMap<>();
        options.put("flow", "f");
        options.put("source_cluster", "nyc");
        options.put("target_cluster", "atl");
        options.put("target_config", "{\"bootstrap.servers\": \"127.0.0.1:9\"}");
        options.put("topic_map", "{\"orders\": \"nyc.orders\", \"pay\": \"nyc.pay\"}");
        options.put("groups", "[{\"orders\": [0, 2], \"pay\": [1]}, {\"orders\": [1], \"pay\": [0]}]");
        options.put("generation", "3");
        options.put("expected", "{\"orders/0\": [10, 4, 1700000000000], \"pay/1\": [-1, 0, -1]}");
        return options;
    }

    static SinkOptions options(Map<String, String> extra) {
        Map<String, String> options = minimal();
        options.putAll(extra);
        return SinkOptions.parse(options);
    }

    @Test
    void everyPartitionHasItsGroupAndEveryGroupItsWriterOfThisGeneration() {
        SinkOptions options = options(Map.of());
        assertEquals(0, options.groupOf("orders", 2));
        assertEquals(1, options.groupOf("pay", 0));
        assertEquals(2, options.groupCount);
        assertEquals("geokafka-f-g3.1", options.transactionalId(1));
        GeokafkaException e = assertThrows(GeokafkaException.class, () -> options.groupOf("orders", 9));
        assertEquals("KAFKA", e.kind());
        assertEquals(false, e.retriable());
    }

    @Test
    void expectationsDefaultToUnknown() {
        SinkOptions options = options(Map.of());
        assertEquals(10, options.expectedOf("orders", 0)[0]);
        assertEquals(4, options.expectedOf("orders", 0)[1]);
        assertEquals(-1, options.expectedOf("orders", 1)[0]);
    }

    @Test
    void compressedBatchesAreNoLargerThanTheSmallestTargetTopicTakes() {
        Map<String, String> limits = Map.of("max_message_bytes", "{\"nyc.orders\": 2000, \"nyc.pay\": 1048588}");
        assertEquals(2000, options(limits).batchSize(524288));  // the contract's default codec: compressed
        assertEquals(524288, options(Map.of()).batchSize(524288));
        Map<String, String> plain = new HashMap<>(limits);
        plain.put("producer_config", "{\"compression.type\": \"none\"}");
        assertEquals(524288, options(plain).batchSize(524288));  // checked record by record instead
        assertEquals(true, options(plain).uncompressed());
    }

    @Test
    void aMalformedNumberNamesItsOption() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> options(Map.of("commit_interval_ms", "soon")));
        assertEquals(true, e.getMessage().contains("'commit_interval_ms'"), e.getMessage());
    }
}
