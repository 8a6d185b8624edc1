package io.geokafka.spark;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.util.ArrayData;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * The headers a replicated record gets (names from the contract): the user's, the origin header (the cluster
 * it was first produced in, kept from an earlier hop) and the source header (its coordinates on this hop's
 * source, replaced at every hop). A record whose origin is the target started there and must not go back.
 */
final class Provenance {
    static final String ORIGIN = Contract.ORIGIN_HEADER;
    static final String SOURCE = Contract.SOURCE_HEADER;
    private static final UTF8String ORIGIN_NAME = UTF8String.fromString(ORIGIN);
    private static final UTF8String SOURCE_NAME = UTF8String.fromString(SOURCE);
    /** Distinct header names a partition's records may carry before names stop being remembered. */
    private static final int NAMES_KEPT = 256;

    private final byte[] sourceCluster;
    private final byte[] targetCluster;
    private final byte[] srcPrefix;
    private final byte[] srcSuffix;
    /** Each header name seen, as the producer's API takes it: decoded once per name, not once per record. */
    private final Map<UTF8String, String> names = new HashMap<>();

    Provenance(String sourceCluster, String targetCluster, String topic, int partition) {
        this.sourceCluster = sourceCluster.getBytes(StandardCharsets.UTF_8);
        this.targetCluster = targetCluster.getBytes(StandardCharsets.UTF_8);
        String[] parts = Contract.sourceHeaderParts(sourceCluster, topic, partition);
        this.srcPrefix = parts[0].getBytes(StandardCharsets.UTF_8);
        this.srcSuffix = parts[1].getBytes(StandardCharsets.UTF_8);
    }

    /** A row's headers (its array of (key, value) structs; null: none) on the target, or null when it must not be
     * sent there (a cycle). */
    RecordHeaders headers(ArrayData userHeaders, long offset) {
        RecordHeaders out = new RecordHeaders();
        byte[] origin = null;
        int n = userHeaders == null ? 0 : userHeaders.numElements();
        for (int i = 0; i < n; i++) {
            InternalRow h = userHeaders.getStruct(i, 2);
            UTF8String name = h.getUTF8String(0);
            if (SOURCE_NAME.equals(name)) {
                continue;
            }
            byte[] value = h.isNullAt(1) ? null : h.getBinary(1);
            if (ORIGIN_NAME.equals(name)) {
                origin = value;
            }
            out.add(new RecordHeader(name(name), value));
        }
        return withOwn(out, origin, offset);
    }

    /** A source record's headers on the target, or null when it must not be sent there (a cycle): the user's
     * headers are passed on as the consumer read them. */
    RecordHeaders headers(Headers userHeaders, long offset) {
        RecordHeaders out = new RecordHeaders();
        byte[] origin = null;
        for (Header h : userHeaders) {
            String name = h.key();
            if (SOURCE.equals(name)) {
                continue;
            }
            if (ORIGIN.equals(name)) {
                origin = h.value();
            }
            out.add(h);
        }
        return withOwn(out, origin, offset);
    }

    /** ``out`` with the origin header (unless the record carried one: ``origin``) and this hop's source header;
     * null when the record started on the target. */
    private RecordHeaders withOwn(RecordHeaders out, byte[] origin, long offset) {
        if (origin == null) {
            out.add(new RecordHeader(ORIGIN, sourceCluster));
        } else if (Arrays.equals(origin, targetCluster)) {
            return null;
        }
        out.add(new RecordHeader(SOURCE, sourceValue(offset)));
        return out;
    }

    private String name(UTF8String name) {
        String known = names.get(name);
        if (known == null) {
            known = name.toString();
            if (names.size() < NAMES_KEPT) {
                names.put(name.copy(), known);  // the row's bytes may be reused once the row is handled
            }
        }
        return known;
    }

    /** The source header's value: the partition's prefix, the offset's decimal digits and the suffix, written
     * as bytes (no string is built per record). */
    byte[] sourceValue(long offset) {
        int digits = offset < 0 ? Long.toString(offset).length() : decimalDigits(offset);
        byte[] value = new byte[srcPrefix.length + digits + srcSuffix.length];
        System.arraycopy(srcPrefix, 0, value, 0, srcPrefix.length);
        if (offset < 0) {
            byte[] text = Long.toString(offset).getBytes(StandardCharsets.US_ASCII);
            System.arraycopy(text, 0, value, srcPrefix.length, digits);
        } else {
            long rest = offset;
            for (int at = srcPrefix.length + digits - 1; at >= srcPrefix.length; at--) {
                value[at] = (byte) ('0' + rest % 10);
                rest /= 10;
            }
        }
        System.arraycopy(srcSuffix, 0, value, srcPrefix.length + digits, srcSuffix.length);
        return value;
    }

    private static int decimalDigits(long value) {
        int digits = 1;
        for (long bound = 10; digits < 19 && value >= bound; bound *= 10) {
            digits++;
        }
        return digits;
    }
}
