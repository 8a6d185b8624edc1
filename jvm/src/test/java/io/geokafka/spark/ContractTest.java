package io.geokafka.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.spark.sql.catalyst.util.ArrayData;
import org.junit.jupiter.api.Test;

/**
 * The Java side of the Python-Java contract: what this module writes and reads, checked against
 * geokafka/contract.json read here on its own (not through {@link Contract}), so a name changed in the code
 * (or in the file without the code following) fails. tests/unit/test_contract.py is the Python side.
 */
class ContractTest {
    static final JsonNode SPEC = spec();

    static JsonNode spec() {
        try (InputStream in = ContractTest.class.getResourceAsStream("/geokafka/contract.json")) {
            return new ObjectMapper().readTree(new String(in.readAllBytes(), StandardCharsets.UTF_8));
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    static String at(String... path) {
        JsonNode node = SPEC;
        for (String p : path) {
            node = node.get(p);
            assertNotNull(node, "contract.json has no " + String.join(".", path));
        }
        return node.asText();
    }

    @Test
    void theProgressRecordIsTheContractsKeyAndFields() throws Exception {
        assertEquals(at("state_topic"), Contract.STATE_TOPIC);
        String key = new String(Progress.key("nyc-to-atl", "orders.eu", 7), StandardCharsets.UTF_8);
        assertEquals(at("progress", "key").replace("{flow}", "nyc-to-atl").replace("{topic}", "orders.eu")
                .replace("{partition}", "7"), key);
        JsonNode value = new ObjectMapper().readTree(Progress.value(42, 1700000000000L));
        assertEquals(Set.of(at("progress", "fields", "next"), at("progress", "fields", "last_timestamp")), fieldNames(value));
        assertEquals(42, value.get(at("progress", "fields", "next")).asLong());
        assertEquals(42, Progress.parseNext(Progress.value(42, -1)));
    }

    @Test
    void thePackedProgressRecordIsTheContractsKeyAndFields() throws Exception {
        assertEquals(at("packed_progress", "key").replace("{flow}", "nyc-to-atl").replace("{generation}", "3")
                .replace("{group}", "1").replace("{slot}", at("packed_progress", "snapshot_slot")),
                Contract.packedProgressKey("nyc-to-atl", 3, 1, Contract.SNAPSHOT_SLOT));
        assertEquals(SPEC.get("packed_progress").get("delta_slots").asInt(), Contract.DELTA_SLOTS);
        assertEquals(true, Contract.packedProgressKey("nyc-to-atl", 3, 1, "7").startsWith(Contract.packedProgressPrefix("nyc-to-atl")));
        byte[] value = Progress.packed(List.of(new Progress.Entry("orders.eu", 7, 42, 1700000000000L),
                new Progress.Entry("pay", 0, 5, -1), new Progress.Entry("orders.eu", 9, 8, 3)));
        JsonNode topics = new ObjectMapper().readTree(value).get(at("packed_progress", "fields", "topics"));
        assertEquals("[7,42,1700000000000,9,8,3]", topics.get("orders.eu").toString());
        assertEquals("[0,5,-1]", topics.get("pay").toString());
        List<Progress.Entry> back = new java.util.ArrayList<>();
        Progress.forEachPacked(value, back::add);
        assertEquals(List.of(new Progress.Entry("orders.eu", 7, 42, 1700000000000L), new Progress.Entry("orders.eu", 9, 8, 3),
                new Progress.Entry("pay", 0, 5, -1)), back);
    }

    @Test
    void provenanceHeadersAreTheContractsNames() {
        RecordHeaders headers = new Provenance("nyc", "atl", "orders", 3).headers((ArrayData) null, 99);
        assertNotNull(headers);
        Map<String, String> got = new HashMap<>();
        for (Header h : headers) {
            got.put(h.key(), new String(h.value(), StandardCharsets.UTF_8));
        }
        assertEquals("nyc", got.get(at("headers", "origin")));
        assertEquals(at("headers", "source_value").replace("{cluster}", "nyc").replace("{topic}", "orders")
                .replace("{partition}", "3").replace("{offset}", "99"), got.get(at("headers", "source")));
        assertEquals(2, got.size());
    }

    @Test
    void transactionalIdsAreTheContractsAndKeepTheFlowsPrefix() {
        String id = Contract.groupTransactionalId("nyc-to-atl", 4, 1);
        assertEquals(at("transactional_id", "group").replace("{flow}", "nyc-to-atl").replace("{generation}", "4")
                .replace("{group}", "1"), id);
        String prefix = at("transactional_id", "prefix").replace("{flow}", "nyc-to-atl");
        assertEquals(true, id.startsWith(prefix), id + " must start with " + prefix + " (what a PREFIXED ACL grants)");
    }

    @Test
    void commitSummariesCarryExactlyTheContractsFields() {
        PartitionWrites writes = new PartitionWrites(SinkOptionsTest.options(Map.of()), "orders", 0, 5);
        Map<String, Object> report = writes.report(0);
        Set<String> expected = new TreeSet<>();
        SPEC.get("commit_summary").fields().forEachRemaining(e -> expected.add(e.getValue().asText()));
        assertEquals(expected, new TreeSet<>(report.keySet()));
    }

    @Test
    void failuresCarryTheContractsFieldsAndKinds() {
        Map<String, Object> typed = SinkRegistry.typedFailure(new RuntimeException(
                new GeokafkaException(GeokafkaException.Kind.AUTH, 31, false, "refused", null)));
        assertNotNull(typed);
        Set<String> fields = new TreeSet<>();
        SPEC.get("failure").get("fields").fields().forEachRemaining(e -> fields.add(e.getValue().asText()));
        assertEquals(fields, new TreeSet<>(typed.keySet()));
        Set<String> kinds = new TreeSet<>();
        SPEC.get("failure").get("kinds").forEach(k -> kinds.add(k.asText()));
        assertEquals(kinds, Arrays.stream(GeokafkaException.Kind.values()).map(Enum::name).collect(Collectors.toCollection(TreeSet::new)));
        assertNull(SinkRegistry.typedFailure(new RuntimeException("plain")));
    }

    @Test
    void theSinkReadsEveryOptionByItsContractName() {
        Map<String, String> options = SinkOptionsTest.minimal();
        SinkOptions parsed = SinkOptions.parse(options);
        assertEquals("f", parsed.flow);
        for (String role : List.of("flow", "source_cluster", "target_cluster", "target_config", "topic_map", "groups")) {
            Map<String, String> without = new HashMap<>(options);
            without.remove(at("sink_options", role));
            IllegalArgumentException e = org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
                    () -> SinkOptions.parse(without));
            assertEquals(true, e.getMessage().contains("'" + at("sink_options", role) + "'"), e.getMessage());
        }
    }

    @Test
    void theSourceReadsEveryOptionByItsContractName() {
        Map<String, String> options = new HashMap<>();
        options.put(at("source_options", "client_prefix") + "bootstrap.servers", "127.0.0.1:9");
        options.put(at("source_options", "assign"), "{\"orders\": [0, 1]}");
        options.put(at("source_options", "groups"), "[{\"orders\": [0]}, {\"orders\": [1]}]");
        options.put(at("source_options", "starting_offsets"), "{\"orders\": {\"0\": 5}}");
        options.put(at("source_options", "max_offsets_per_trigger"), "77");
        options.put(at("source_options", "poll_timeout_ms"), "1234");
        SourceOptions parsed = SourceOptions.parse(options);
        assertEquals(2, parsed.groups.size());
        assertEquals(77, parsed.maxOffsetsPerTrigger);
        assertEquals(1234, parsed.pollTimeoutMs);
        assertEquals(5L, parsed.starting.get("orders").get(0));
        assertEquals("127.0.0.1:9", parsed.clientConfig.get("bootstrap.servers"));
    }

    private static String partitionKey(String topic, int partition) {
        return at("partition_key").replace("{topic}", topic).replace("{partition}", Integer.toString(partition));
    }

    @Test
    void thePartitionKeyIsTheContractsFormatWhereverTheSinkBuildsOrReadsOne() throws Exception {
        assertEquals(partitionKey("orders.eu", 7), Contract.partitionKey("orders.eu", 7));
        assertEquals(new org.apache.kafka.common.TopicPartition("orders.eu", 7),
                Contract.parsePartitionKey(partitionKey("orders.eu", 7)));
        org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class, () -> Contract.parsePartitionKey("orders"));
        Map<String, String> given = SinkOptionsTest.minimal();
        given.put(at("sink_options", "expected"), "{\"" + partitionKey("orders", 1) + "\": [33, 2]}");
        given.put(at("sink_options", "query_key"), "contract-partition-key");
        SinkOptions options = SinkOptions.parse(given);
        assertEquals(33, options.expectedOf("orders", 1)[0]);  // the driver's keys, read
        assertEquals(true, options.groupOf.containsKey(partitionKey("orders", 2)), options.groupOf.toString());
        assertEquals(partitionKey("pay", 1), new PartitionWrites(options, "pay", 1, 0).key());
        // a batch's commit messages become the next batch's expectations under the same keys
        SinkWrite write = new SinkWrite(options, null);
        PartitionWrites moved = new PartitionWrites(options, "orders", 1, 40);
        write.commit(1, new org.apache.spark.sql.connector.write.WriterCommitMessage[] {
            new CommitMessage(List.of(moved.report(1)), List.of())});
        assertEquals(40, SinkRegistry.EXPECTATIONS.of("contract-partition-key", Map.of()).get(partitionKey("orders", 1))[0]);
        SinkRegistry.forget("contract-partition-key");
    }

    /** Per shape of the contract: a value of that shape that fits {@link SinkOptionsTest#minimal} and
     * {@link #minimalSource}, and one that is not of it (none for text). */
    private static final Map<String, List<String>> SHAPES = Map.of(
            "string", List.of("x"),
            "long", List.of("77", "soon"),
            "bool", List.of("true", "maybe"),
            "json_strings", List.of("{\"bootstrap.servers\": \"127.0.0.1:9\"}", "[1]"),
            "json_longs", List.of("{\"nyc.orders\": 1000}", "{\"nyc.orders\": \"many\"}"),
            "json_partitions", List.of("{\"orders\": [0, 1]}", "{\"orders\": 0}"),
            "json_groups", List.of("[{\"orders\": [0]}, {\"orders\": [1]}]", "{}"),
            "json_starting", List.of("{\"orders\": {\"0\": 5}}", "[]"),
            "json_expected", List.of("{\"" + partitionKey("orders", 0) + "\": [10, 4, 1700000000000]}",
                    "{\"" + partitionKey("orders", 0) + "\": 10}"));

    static Map<String, String> minimalSource() {
        Map<String, String> options = new HashMap<>();
        options.put(at("source_options", "client_prefix") + "bootstrap.servers", "127.0.0.1:9");
        options.put(at("source_options", "assign"), "{\"orders\": [0, 1]}");
        return options;
    }

    @Test
    void everyOptionHasADeclaredShapeAndTheSourceAndSinkReadItAsDeclared() {
        assertEquals(new TreeSet<>(SHAPES.keySet()), fieldNames(SPEC.get("option_shapes").get("shapes")));
        assertEquals(fieldNames(SPEC.get("source_options")), fieldNames(SPEC.get("option_shapes").get("source_options")));
        assertEquals(fieldNames(SPEC.get("sink_options")), fieldNames(SPEC.get("option_shapes").get("sink_options")));
        assertEquals("string", at("option_shapes", "source_options", "client_prefix"));  // each kafka.* setting as it is
        checkShapes("source_options", minimalSource(), SourceOptions::parse, Set.of("client_prefix"));
        checkShapes("sink_options", SinkOptionsTest.minimal(), SinkOptions::parse, Set.of());
    }

    private static void checkShapes(String section, Map<String, String> minimal,
                                    java.util.function.Function<Map<String, String>, Object> parse, Set<String> skip) {
        SPEC.get("option_shapes").get(section).fields().forEachRemaining(e -> {
            if (skip.contains(e.getKey())) {
                return;
            }
            String option = at(section, e.getKey());
            List<String> samples = SHAPES.get(e.getValue().asText());
            Map<String, String> right = new HashMap<>(minimal);
            right.put(option, samples.get(0));
            assertNotNull(parse.apply(right), option);
            if (samples.size() > 1) {
                Map<String, String> wrong = new HashMap<>(minimal);
                wrong.put(option, samples.get(1));
                IllegalArgumentException refused = org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
                        () -> parse.apply(wrong), option + " = " + samples.get(1) + " is not " + e.getValue().asText());
                assertEquals(true, refused.getMessage().contains("'" + option + "'"), refused.getMessage());
            }
        });
    }

    private static Set<String> fieldNames(JsonNode node) {
        Set<String> out = new TreeSet<>();
        node.fieldNames().forEachRemaining(out::add);
        return out;
    }
}
