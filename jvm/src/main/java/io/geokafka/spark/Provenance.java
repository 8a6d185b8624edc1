package io.geokafka.spark;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.util.ArrayData;

/**
 * The headers a replicated record gets (names from the contract): the user's, the origin header (the cluster
 * it was first produced in, kept from an earlier hop) and the source header (its coordinates on this hop's
 * source, replaced at every hop). A record whose origin is the target started there and must not go back.
 */
final class Provenance {
    static final String ORIGIN = Contract.ORIGIN_HEADER;
    static final String SOURCE = Contract.SOURCE_HEADER;

    private final byte[] sourceCluster;
    private final byte[] targetCluster;
    private final String srcPrefix;
    private final String srcSuffix;

    Provenance(String sourceCluster, String targetCluster, String topic, int partition) {
        this.sourceCluster = sourceCluster.getBytes(StandardCharsets.UTF_8);
        this.targetCluster = targetCluster.getBytes(StandardCharsets.UTF_8);
        String[] parts = Contract.sourceHeaderParts(sourceCluster, topic, partition);
        this.srcPrefix = parts[0];
        this.srcSuffix = parts[1];
    }

    /** The record's headers on the target, or null when it must not be sent there (a cycle). */
    RecordHeaders headers(ArrayData userHeaders, long offset) {
        RecordHeaders out = new RecordHeaders();
        byte[] origin = null;
        int n = userHeaders == null ? 0 : userHeaders.numElements();
        for (int i = 0; i < n; i++) {
            InternalRow h = userHeaders.getStruct(i, 2);
            String name = h.getUTF8String(0).toString();
            if (SOURCE.equals(name)) {
                continue;
            }
            byte[] value = h.isNullAt(1) ? null : h.getBinary(1);
            if (ORIGIN.equals(name)) {
                origin = value;
            }
            out.add(new RecordHeader(name, value));
        }
        if (origin == null) {
            out.add(new RecordHeader(ORIGIN, sourceCluster));
        } else if (Arrays.equals(origin, targetCluster)) {
            return null;
        }
        out.add(new RecordHeader(SOURCE, (srcPrefix + offset + srcSuffix).getBytes(StandardCharsets.UTF_8)));
        return out;
    }
}
