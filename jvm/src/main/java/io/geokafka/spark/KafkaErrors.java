package io.geokafka.spark;

import org.apache.kafka.common.errors.AuthenticationException;
import org.apache.kafka.common.errors.AuthorizationException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.errors.InvalidProducerEpochException;
import org.apache.kafka.common.errors.RecordBatchTooLargeException;
import org.apache.kafka.common.errors.RecordTooLargeException;
import org.apache.kafka.common.errors.RetriableException;
import org.apache.kafka.common.errors.TransactionAbortableException;

/** Kafka client exceptions as {@link GeokafkaException}s, by exception type (never by message text).
 *
 * <p>The innermost Kafka exception of the cause chain decides: the clients wrap the error that happened (a
 * {@code TimeoutException}, retriable) in general ones ({@code KafkaException: Failed to send}), and the wrapper's
 * type says nothing of whether trying again helps. A {@link GeokafkaException} anywhere in the chain is taken as
 * it is. A {@code TransactionAbortableException} (Kafka's {@code TRANSACTION_ABORTABLE}: a broker could not verify
 * the transaction with its coordinator) is retriable though not a {@code RetriableException}: the
 * transaction is aborted and the task's retry writes its records again in a new one. */
final class KafkaErrors {
    private static final int MAX_DEPTH = 32;

    private KafkaErrors() {}

    static GeokafkaException of(Throwable e, String what) {
        Throwable innermostKafka = null;
        Throwable last = e;
        int depth = 0;
        for (Throwable c = e; c != null && depth < MAX_DEPTH; c = c.getCause() == c ? null : c.getCause(), depth++) {
            if (c instanceof GeokafkaException s) {
                return s;
            }
            if (c instanceof org.apache.kafka.common.KafkaException) {
                innermostKafka = c;
            }
            last = c;
        }
        Throwable t = innermostKafka != null ? innermostKafka : last;
        int code = t instanceof org.apache.kafka.common.errors.ApiException api ? KafkaCodes.of(api) : KafkaCodes.NONE;
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
        boolean retriable = t instanceof RetriableException || t instanceof TransactionAbortableException;
        return new GeokafkaException(GeokafkaException.Kind.KAFKA, code, retriable, message, e);
    }
}
