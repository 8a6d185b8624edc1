package io.geokafka.spark;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;

/**
 * The Python-Java contract ({@code geokafka/contract.json}, copied into this jar by the build): every name
 * the driver and this module both read or write, declared once. {@code ContractTest} fails when this
 * module's code drifts from it; {@code tests/unit/test_contract.py} does the same for Python.
 */
final class Contract {
    static final String RESOURCE = "/geokafka/contract.json";
    private static final JsonNode SPEC = load();

    static final String STATE_TOPIC = SPEC.get("state_topic").asText();
    static final String ORIGIN_HEADER = text("headers", "origin");
    static final String SOURCE_HEADER = text("headers", "source");

    private Contract() {}

    /** A top-level text of the contract ({@code partition_key}). */
    static String text(String entry) {
        JsonNode value = SPEC.get(entry);
        if (value == null || !value.isTextual()) {
            throw new IllegalStateException("geokafka contract: no " + entry + " in " + RESOURCE);
        }
        return value.asText();
    }

    /** The wire name of {@code role} in {@code section} (e.g. {@code name("commit_summary", "next_offset")}). */
    static String text(String section, String role) {
        JsonNode value = SPEC.path(section).get(role);
        if (value == null || !value.isTextual()) {
            throw new IllegalStateException("geokafka contract: no " + section + "." + role + " in " + RESOURCE);
        }
        return value.asText();
    }

    /** A field name of a section that maps roles to names ({@code progress.fields}, {@code failure.fields}). */
    static String field(String section, String role) {
        JsonNode value = SPEC.path(section).path("fields").get(role);
        if (value == null || !value.isTextual()) {
            throw new IllegalStateException("geokafka contract: no " + section + ".fields." + role + " in " + RESOURCE);
        }
        return value.asText();
    }

    /** Key of one source partition's progress record. */
    static String progressKey(String flow, String topic, int partition) {
        return SPEC.path("progress").get("key").asText()
                .replace("{flow}", flow).replace("{topic}", topic).replace("{partition}", Integer.toString(partition));
    }

    /** The packed progress record's slot that holds every partition of a group. */
    static final String SNAPSHOT_SLOT = text("packed_progress", "snapshot_slot");
    /** Commits of a writer between two of its snapshots: its delta records take these slots in turn. */
    static final int DELTA_SLOTS = SPEC.path("packed_progress").path("delta_slots").asInt();

    /** Key of one slot of a partition group's packed progress record. */
    static String packedProgressKey(String flow, long generation, int group, String slot) {
        return text("packed_progress", "key").replace("{flow}", flow).replace("{generation}", Long.toString(generation))
                .replace("{group}", Integer.toString(group)).replace("{slot}", slot);
    }

    /** What every packed progress key of ``flow`` starts with (whatever its generation and group). */
    static String packedProgressPrefix(String flow) {
        String format = text("packed_progress", "key").replace("{flow}", flow);
        return format.substring(0, format.indexOf('{'));
    }

    /** A source partition's key in the sink's options and commit hand-over (the contract's partition_key). */
    static String partitionKey(String topic, int partition) {
        return text("partition_key").replace("{topic}", topic).replace("{partition}", Integer.toString(partition));
    }

    /** The source partition a {@link #partitionKey} names. */
    static org.apache.kafka.common.TopicPartition parsePartitionKey(String key) {
        String format = text("partition_key");
        int topicAt = format.indexOf("{topic}");
        int partitionAt = format.indexOf("{partition}");
        if (topicAt < 0 || partitionAt < topicAt) {
            throw new IllegalStateException("geokafka contract: partition_key must name {topic}, then {partition}");
        }
        String prefix = format.substring(0, topicAt);
        String separator = format.substring(topicAt + "{topic}".length(), partitionAt);
        String suffix = format.substring(partitionAt + "{partition}".length());
        int at = key.lastIndexOf(separator, key.length() - suffix.length());
        if (!key.startsWith(prefix) || !key.endsWith(suffix) || separator.isEmpty() || at < prefix.length()) {
            throw new IllegalArgumentException("not a partition key (" + format + "): " + key);
        }
        try {
            return new org.apache.kafka.common.TopicPartition(key.substring(prefix.length(), at),
                    Integer.parseInt(key.substring(at + separator.length(), key.length() - suffix.length())));
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("not a partition key (" + format + "): " + key, e);
        }
    }

    /** The source header's value of a record: its coordinates on this hop's source. */
    static String sourceHeaderValue(String cluster, String topic, int partition, long offset) {
        String[] parts = sourceHeaderParts(cluster, topic, partition);
        return parts[0] + offset + parts[1];
    }

    /** The source header's value of one partition's records, before and after their offset. */
    static String[] sourceHeaderParts(String cluster, String topic, int partition) {
        String format = text("headers", "source_value").replace("{cluster}", cluster).replace("{topic}", topic)
                .replace("{partition}", Integer.toString(partition));
        int at = format.indexOf("{offset}");
        if (at < 0) {
            throw new IllegalStateException("geokafka contract: headers.source_value has no {offset}");
        }
        return new String[] {format.substring(0, at), format.substring(at + "{offset}".length())};
    }

    /** The transactional id of one partition group of a flow's generation. */
    static String groupTransactionalId(String flow, long generation, int group) {
        return text("transactional_id", "group").replace("{flow}", flow)
                .replace("{generation}", Long.toString(generation)).replace("{group}", Integer.toString(group));
    }

    /** The failure kinds the driver maps to its error classes. */
    static java.util.List<String> failureKinds() {
        java.util.List<String> out = new java.util.ArrayList<>();
        SPEC.path("failure").path("kinds").forEach(kind -> out.add(kind.asText()));
        return out;
    }

    private static JsonNode load() {
        try (InputStream in = Contract.class.getResourceAsStream(RESOURCE)) {
            if (in == null) {
                throw new IllegalStateException("geokafka contract: " + RESOURCE + " is not in the jar (built without it?)");
            }
            return new ObjectMapper().readTree(new String(in.readAllBytes(), StandardCharsets.UTF_8));
        } catch (IOException e) {
            throw new IllegalStateException("geokafka contract: " + RESOURCE + " cannot be read", e);
        }
    }
}
