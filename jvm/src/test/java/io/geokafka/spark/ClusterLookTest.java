package io.geokafka.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.common.Uuid;
import org.junit.jupiter.api.Test;

/** The cluster look's answers in the text the Python driver reads (geokafka/pipeline/jvm_look.py compares topic IDs
 * with IDs its librdkafka client recorded, and reads the configs back into what that client's look returns). */
class ClusterLookTest {
    @Test
    void aTopicIdIsWrittenAsThePythonClientWritesIt() {
        // the ID librdkafka's Python client printed as 1W/EpcgZQcOd7H0UywW38g; Kafka's own toString is URL-safe
        Uuid id = Uuid.fromString("1W_EpcgZQcOd7H0UywW38g");
        assertEquals("1W_EpcgZQcOd7H0UywW38g", id.toString());
        assertEquals("1W/EpcgZQcOd7H0UywW38g", ClusterLook.idText(id));
        assertEquals("++++++++++8AAAAAAAAAAA", ClusterLook.idText(new Uuid(0xfbefbefbefbefbefL, 0x0L)));
    }

    @Test
    void onlyTheConfigsSetOnATopicItselfAreWrittenEachValueEscaped() {
        Map<String, Config> configs = new LinkedHashMap<>();
        configs.put("orders", new Config(List.of(
                entry("retention.ms", "86400000", ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG),
                entry("cleanup.policy", "delete", ConfigEntry.ConfigSource.DEFAULT_CONFIG),
                entry("segment.bytes", "1048576", ConfigEntry.ConfigSource.STATIC_BROKER_CONFIG),
                entry("message.timestamp.type", null, ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG),
                entry("odd", "a\tb\nc\\d", ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG))));
        configs.put("plain", new Config(List.of(entry("cleanup.policy", "delete", ConfigEntry.ConfigSource.DEFAULT_CONFIG))));
        assertEquals("orders\n\tretention.ms\t86400000\n\todd\ta\\tb\\nc\\\\d\nplain\n", ClusterLook.configText(configs));
    }

    private static ConfigEntry entry(String name, String value, ConfigEntry.ConfigSource source) {
        return new ConfigEntry(name, value, source, false, false, List.of(), ConfigEntry.ConfigType.STRING, null);
    }
}
