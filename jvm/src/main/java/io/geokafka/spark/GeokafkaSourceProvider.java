package io.geokafka.spark;

import java.util.EnumSet;
import java.util.Map;
import java.util.Set;
import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.catalog.TableProvider;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.read.streaming.MicroBatchStream;
import org.apache.spark.sql.sources.DataSourceRegister;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * {@code readStream.format("geokafka-source")}: geokafka's Kafka source as a Spark DataSource V2
 * micro-batch stream, with the columns and options of Spark's own Kafka source (headers always
 * included) but one offset lookup per batch instead of two per poll (see {@link SourceReader}).
 */
public final class GeokafkaSourceProvider implements TableProvider, DataSourceRegister {
    /** The columns of Spark's Kafka source with includeHeaders. */
    static final StructType SCHEMA = new StructType()
            .add("key", DataTypes.BinaryType)
            .add("value", DataTypes.BinaryType)
            .add("topic", DataTypes.StringType)
            .add("partition", DataTypes.IntegerType)
            .add("offset", DataTypes.LongType)
            .add("timestamp", DataTypes.TimestampType)
            .add("timestampType", DataTypes.IntegerType)
            .add("headers", ArrayType.apply(new StructType()
                    .add("key", DataTypes.StringType)
                    .add("value", DataTypes.BinaryType)));

    /** The columns with option {@code handOver}: a chunk of a source partition's records, handed to the task's
     * writer apart from the row ({@link CommitHandOff#offer}). */
    static final StructType HANDED = new StructType()
            .add("topic", DataTypes.StringType)
            .add("partition", DataTypes.IntegerType)
            .add("chunk", DataTypes.LongType);

    @Override
    public String shortName() {
        return "geokafka-source";
    }

    @Override
    public StructType inferSchema(CaseInsensitiveStringMap options) {
        return SourceOptions.handOver(options.asCaseSensitiveMap()) ? HANDED : SCHEMA;
    }

    @Override
    public Table getTable(StructType schema, Transform[] partitioning, Map<String, String> properties) {
        return new SourceTable(schema);
    }

    /** The source as Spark sees it: a table read as a micro-batch stream only. */
    static final class SourceTable implements SupportsRead {
        private final StructType schema;

        SourceTable(StructType schema) {
            this.schema = schema;
        }

        @Override
        public String name() {
            return "geokafka-source";
        }

        @Override
        public StructType schema() {
            return schema;
        }

        @Override
        public Set<TableCapability> capabilities() {
            return EnumSet.of(TableCapability.MICRO_BATCH_READ);
        }

        @Override
        public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
            SourceOptions parsed = SourceOptions.parse(options.asCaseSensitiveMap());
            return () -> new Scan() {
                @Override
                public StructType readSchema() {
                    return schema;
                }

                @Override
                public String description() {
                    return "geokafka-source " + parsed.assign;  // shown in plans: never the client settings
                }

                @Override
                public MicroBatchStream toMicroBatchStream(String checkpointLocation) {
                    return new SourceStream(parsed);
                }
            };
        }
    }
}
