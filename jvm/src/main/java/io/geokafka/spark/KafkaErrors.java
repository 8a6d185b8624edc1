package io.geokafka.spark;

import org.apache.kafka.common.errors.AuthenticationException;
import org.apache.kafka.common.errors.AuthorizationException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.errors.InvalidProducerEpochException;
import org.apache.kafka.common.errors.RecordBatchTooLargeException;
import org.apache.kafka.common.errors.RecordTooLargeException;
import org.apache.kafka.common.errors.RetriableException;

/** Kafka client exceptions as {@link GeokafkaException}s, by exception type (never by message text). */
final class KafkaErrors {
    private KafkaErrors() {}

    static GeokafkaException of(Throwable e, String what) {
        Throwable t = e;
        while (t.getCause() != null && !(t instanceof org.apache.kafka.common.KafkaException)) {
            t = t.getCause();
        }
        if (t instanceof GeokafkaException s) {
            return s;
        }
        int code = t instanceof org.apache.kafka.common.errors.ApiException api ? code(api) : -1;
        String message = what + ": " + t.getClass().getSimpleName() + ": " + t.getMessage();
        if (t instanceof AuthenticationException || t instanceof AuthorizationException) {
            return new GeokafkaException(GeokafkaException.Kind.AUTH, code, false, message, e);
        }
        if (t instanceof RecordTooLargeException || t instanceof RecordBatchTooLargeException) {
            return new GeokafkaException(GeokafkaException.Kind.RECORD_TOO_LARGE, code, false, message, e);
        }
        if (t instanceof ProducerFencedException || t instanceof InvalidProducerEpochException) {
            return new GeokafkaException(GeokafkaException.Kind.FENCED, code, true, message, e);
        }
        return new GeokafkaException(GeokafkaException.Kind.KAFKA, code, t instanceof RetriableException, message, e);
    }

    private static int code(org.apache.kafka.common.errors.ApiException api) {
        return org.apache.kafka.common.protocol.Errors.forException(api).code();
    }
}
