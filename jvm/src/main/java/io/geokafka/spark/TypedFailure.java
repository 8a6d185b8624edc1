package io.geokafka.spark;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The typed failure of the source or the sink in an error's cause chain, as the contract's failure fields
 * {kind, kafka_code, retriable, message}: how the Python driver tells a failure's class without reading its
 * message.
 */
final class TypedFailure {
    private TypedFailure() {}

    /** The failure fields of ``error``, or null when its chain holds no typed failure. A JVM error (out of memory,
     * ...) anywhere in the chain comes first: nothing in that JVM can be trusted any more. */
    static Map<String, Object> of(Throwable error) {
        for (Throwable t = error; t != null; t = t.getCause()) {
            if (t instanceof VirtualMachineError vm) {
                return fields("JVM_FATAL", KafkaCodes.NONE, false, vm.getClass().getName() + ": " + vm.getMessage());
            }
            if (t.getCause() == t) {
                break;
            }
        }
        for (Throwable t = error; t != null; t = t.getCause()) {
            if (t instanceof GeokafkaException s) {
                return fields(s.kind(), s.kafkaCode(), s.retriable(), s.getMessage());
            }
            if (t.getCause() == t) {
                break;
            }
        }
        return null;
    }

    private static Map<String, Object> fields(String kind, int code, boolean retriable, String message) {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put(Contract.field("failure", "kind"), kind);
        out.put(Contract.field("failure", "kafka_code"), code);
        out.put(Contract.field("failure", "retriable"), retriable);
        out.put(Contract.field("failure", "message"), message);
        return out;
    }
}
