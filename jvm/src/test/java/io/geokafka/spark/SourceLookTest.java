package io.geokafka.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.apache.kafka.common.Uuid;
import org.junit.jupiter.api.Test;

/** The source look's topic IDs in the text the Python driver's librdkafka client writes (geokafka/pipeline/jvm_look.py
 * compares them with IDs that client recorded). */
class SourceLookTest {
    @Test
    void aTopicIdIsWrittenAsThePythonClientWritesIt() {
        // the ID librdkafka's Python client printed as 1W/EpcgZQcOd7H0UywW38g; Kafka's own toString is URL-safe
        Uuid id = Uuid.fromString("1W_EpcgZQcOd7H0UywW38g");
        assertEquals("1W_EpcgZQcOd7H0UywW38g", id.toString());
        assertEquals("1W/EpcgZQcOd7H0UywW38g", SourceLook.idText(id));
        assertEquals("++++++++++8AAAAAAAAAAA", SourceLook.idText(new Uuid(0xfbefbefbefbefbefL, 0x0L)));
    }
}
