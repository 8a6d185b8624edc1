package io.geokafka.spark;

import java.util.Map;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableProvider;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.sources.DataSourceRegister;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * {@code writeStream.format("geokafka")}: geokafka's exactly-once Kafka writer as a Spark DataSource V2
 * streaming sink. Per partition group, records and the progress records of the partitions they move are
 * committed in one Kafka transaction on the target under the group's transactional id (docs: how exactly-once works).
 */
public final class GeokafkaSinkProvider implements TableProvider, DataSourceRegister {
    @Override
    public String shortName() {
        return "geokafka";
    }

    @Override
    public StructType inferSchema(CaseInsensitiveStringMap options) {
        return new StructType();
    }

    @Override
    public boolean supportsExternalMetadata() {
        return true;
    }

    @Override
    public Table getTable(StructType schema, Transform[] partitioning, Map<String, String> properties) {
        return new SinkTable(schema);
    }
}
