package io.geokafka.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;

import java.util.List;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.errors.InvalidConfigurationException;
import org.apache.kafka.common.errors.NotEnoughReplicasException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.errors.RecordTooLargeException;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.errors.TopicAuthorizationException;
import org.apache.kafka.common.errors.TransactionAbortableException;
import org.junit.jupiter.api.Test;

/** The JVM side's error table: what each Kafka exception means for a retry, bare and wrapped as the clients wrap
 * them (the innermost Kafka exception decides). */
class KafkaErrorsTest {
    private record Row(Throwable error, GeokafkaException.Kind kind, boolean retriable, int code) {}

    private static Throwable wrapped(Throwable cause) {
        return new RuntimeException("task failed", new KafkaException("Failed to send", cause));
    }

    @Test
    void theInnermostKafkaExceptionDecidesBareOrWrapped() {
        List<Row> table = List.of(
                new Row(new TimeoutException("t"), GeokafkaException.Kind.KAFKA, true, 7),
                new Row(new NotEnoughReplicasException("n"), GeokafkaException.Kind.KAFKA, true, 19),
                new Row(new InvalidConfigurationException("c"), GeokafkaException.Kind.KAFKA, false, 40),
                new Row(new TransactionAbortableException("v"), GeokafkaException.Kind.KAFKA, true, 120),
                new Row(new TopicAuthorizationException("a"), GeokafkaException.Kind.AUTH, false, 29),
                new Row(new RecordTooLargeException("r"), GeokafkaException.Kind.RECORD_TOO_LARGE, false, 10),
                new Row(new ProducerFencedException("f"), GeokafkaException.Kind.FENCED, true, 90));
        for (Row row : table) {
            for (Throwable shown : List.of(row.error(), wrapped(row.error()), new KafkaException(wrapped(row.error())))) {
                GeokafkaException got = KafkaErrors.of(shown, "writing");
                String what = row.error().getClass().getSimpleName() + " as " + shown.getClass().getSimpleName();
                assertEquals(row.kind().name(), got.kind(), what);
                assertEquals(row.retriable(), got.retriable(), what);
                assertEquals(row.code(), got.kafkaCode(), what);
            }
        }
    }

    @Test
    void aGeneralKafkaExceptionAloneIsNotRetriableAndAGeokafkaExceptionInTheChainIsTakenAsItIs() {
        GeokafkaException general = KafkaErrors.of(new KafkaException("closed"), "writing");
        assertEquals(false, general.retriable());
        assertEquals(-1, general.kafkaCode());
        GeokafkaException own = new GeokafkaException(GeokafkaException.Kind.DATA_LOSS, -1, true, "gap", null);
        assertSame(own, KafkaErrors.of(new RuntimeException(own), "reading"));
    }

    @Test
    void theNamedCodesAreKafkasWireCodes() {
        // the driver reads kafka_code as a number: each name must stay the code Kafka sends
        assertEquals(List.of(-1, 7, 10, 1), List.of(KafkaCodes.NONE, KafkaCodes.REQUEST_TIMED_OUT,
                KafkaCodes.MESSAGE_TOO_LARGE, KafkaCodes.OFFSET_OUT_OF_RANGE));
        assertEquals(KafkaCodes.REQUEST_TIMED_OUT, KafkaErrors.of(new TimeoutException("t"), "writing").kafkaCode());
    }
}
