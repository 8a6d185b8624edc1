package io.geokafka.spark;

import org.apache.kafka.common.protocol.Errors;

/**
 * The Kafka error codes geokafka's own failures carry ({@link GeokafkaException#kafkaCode()}), by name: the
 * driver reads them as numbers, so each is Kafka's wire code, taken from the client's {@link Errors} table.
 */
final class KafkaCodes {
    /** No Kafka error behind the failure (a planning error, a gap found by geokafka, a JVM error). */
    static final int NONE = -1;
    /** A wait on the cluster ran out (Kafka's {@code REQUEST_TIMED_OUT}). */
    static final int REQUEST_TIMED_OUT = Errors.REQUEST_TIMED_OUT.code();
    /** A record larger than the topic takes (Kafka's {@code MESSAGE_TOO_LARGE}). */
    static final int MESSAGE_TOO_LARGE = Errors.MESSAGE_TOO_LARGE.code();
    /** A position no longer (or not yet) in the partition's log (Kafka's {@code OFFSET_OUT_OF_RANGE}). */
    static final int OFFSET_OUT_OF_RANGE = Errors.OFFSET_OUT_OF_RANGE.code();

    private KafkaCodes() {}

    /** The wire code of a Kafka API exception. */
    static int of(org.apache.kafka.common.errors.ApiException api) {
        return Errors.forException(api).code();
    }
}
