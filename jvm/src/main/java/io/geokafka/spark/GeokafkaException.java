package io.geokafka.spark;

/**
 * A failure of geokafka's source or sink, typed so the Python driver never reads message text: {@link #kind()}
 * names the geokafka error class it stands for (the kinds are the contract's {@code failure.kinds}),
 * {@link #kafkaCode()} the Kafka error code (-1: none), {@link #retriable()} whether a restart can help.
 */
public final class GeokafkaException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /** What went wrong, in geokafka's error classes. */
    public enum Kind {
        /** A record larger than the target topic accepts (geokafka RecordTooLargeError). */
        RECORD_TOO_LARGE,
        /** Credentials, authorization or TLS refused (AuthError). */
        AUTH,
        /** Another writer took over the transactional id (transient: the next start fences it back). */
        FENCED,
        /** Source records gone before they were replicated, read by geokafka's source (DataLossError). */
        DATA_LOSS,
        /** Any other Kafka failure (KafkaOperationError; retriable or not, see {@link #retriable()}). */
        KAFKA,
        /** The JVM itself failed (out of memory, ...): nothing in it can be trusted; never retried in place. */
        JVM_FATAL
    }

    private final Kind kind;
    private final int kafkaCode;
    private final boolean retriable;

    public GeokafkaException(Kind kind, int kafkaCode, boolean retriable, String message, Throwable cause) {
        super(message, cause);
        this.kind = kind;
        this.kafkaCode = kafkaCode;
        this.retriable = retriable;
    }

    public String kind() {
        return kind.name();
    }

    public int kafkaCode() {
        return kafkaCode;
    }

    public boolean retriable() {
        return retriable;
    }
}
