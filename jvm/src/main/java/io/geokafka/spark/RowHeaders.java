package io.geokafka.spark;

import java.util.Arrays;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.util.ArrayData;
import org.apache.spark.unsafe.types.UTF8String;

/** One source row's headers as the sink reads them from the row's header array; reused from row to row (the
 * names may be views of the row's bytes: copy one to keep it). */
final class RowHeaders {
    private UTF8String[] names = new UTF8String[4];
    private byte[][] values = new byte[4][];
    private int count;

    /** Forget the last record's headers; {@code expected} of the next are coming. */
    void clear(int expected) {
        count = 0;
        if (expected > names.length) {
            names = Arrays.copyOf(names, expected);
            values = Arrays.copyOf(values, expected);
        }
    }

    void add(UTF8String name, byte[] value) {
        if (count == names.length) {
            names = Arrays.copyOf(names, count * 2);
            values = Arrays.copyOf(values, count * 2);
        }
        names[count] = name;
        values[count] = value;
        count++;
    }

    /** The headers of a row's {@code headers} column (an array of (key, value) structs; null: none). */
    RowHeaders of(ArrayData array) {
        int n = array == null ? 0 : array.numElements();
        clear(n);
        for (int i = 0; i < n; i++) {
            InternalRow h = array.getStruct(i, 2);
            add(h.getUTF8String(0), h.isNullAt(1) ? null : h.getBinary(1));
        }
        return this;
    }

    int count() {
        return count;
    }

    UTF8String name(int i) {
        return names[i];
    }

    byte[] value(int i) {
        return values[i];
    }
}
