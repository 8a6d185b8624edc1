package io.geokafka.spark;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.write.DataWriter;
import org.apache.spark.sql.connector.write.streaming.StreamingDataWriterFactory;
import org.apache.spark.sql.types.StructType;

/** Shipped to executors with each batch: the options and the driver's expectations for it. */
final class WriterFactory implements StreamingDataWriterFactory {
    private static final long serialVersionUID = 1L;
    private final SinkOptions options;
    private final StructType schema;

    WriterFactory(SinkOptions options, StructType schema) {
        this.options = options;
        this.schema = schema;
    }

    @Override
    public DataWriter<InternalRow> createWriter(int partitionId, long taskId, long epochId) {
        return new TaskWriter(options, schema, epochId, CommitHandOff.ofTask(org.apache.spark.TaskContext.get()));
    }
}
