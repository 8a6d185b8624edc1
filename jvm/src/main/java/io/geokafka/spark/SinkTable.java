package io.geokafka.spark;

import java.util.EnumSet;
import java.util.Set;
import org.apache.spark.sql.connector.catalog.SupportsWrite;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.Write;
import org.apache.spark.sql.connector.write.WriteBuilder;
import org.apache.spark.sql.internal.connector.SupportsStreamingUpdateAsAppend;
import org.apache.spark.sql.types.StructType;

/** The sink as Spark sees it: a table that takes streaming writes only. Real-time mode runs its queries
 * in update output mode; for a stateless replication query an update is an append, as Spark's own Kafka
 * sink also declares. */
final class SinkTable implements SupportsWrite {
    private final StructType schema;

    SinkTable(StructType schema) {
        this.schema = schema;
    }

    @Override
    public String name() {
        return "geokafka";
    }

    @Override
    public StructType schema() {
        return schema;
    }

    @Override
    public Set<TableCapability> capabilities() {
        return EnumSet.of(TableCapability.STREAMING_WRITE);
    }

    @Override
    public WriteBuilder newWriteBuilder(LogicalWriteInfo info) {
        SinkOptions options = SinkOptions.parse(info.options().asCaseSensitiveMap());
        StructType input = info.schema();
        return new Builder(options, input);
    }

    private record Builder(SinkOptions options, StructType input) implements SupportsStreamingUpdateAsAppend {
        @Override
        public Write build() {
            return new SinkWrite(options, input);
        }
    }
}
