package io.geokafka.spark;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;

/** Ships the source's options to the tasks and opens a {@link GroupReader} per partition group. */
record SourceReaderFactory(SourceOptions options, String stream) implements PartitionReaderFactory {
    private static final long serialVersionUID = 1L;

    @Override
    public PartitionReader<InternalRow> createReader(InputPartition partition) {
        return new GroupReader(options, stream, (GroupRange) partition,
                CommitHandOff.ofTask(org.apache.spark.TaskContext.get()));
    }
}
