package io.geokafka.bench;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * The bench's "limit" contender: the plainest copy there is, one consumer feeding one producer in one
 * loop (no framework, no transactions, no exactly-once), keys, values, headers, timestamps and partitions
 * kept. What any replicator on this machine can at best approach.
 *
 * <p>{@code java -cp <kafka clients>:<this jar> io.geokafka.bench.CopyLoop SRC DST PREFIX TOPIC...}: copies
 * each TOPIC from its first offset to {@code PREFIX + TOPIC} on DST until stopped.
 */
public final class CopyLoop {
    private CopyLoop() {}

    public static void main(String[] args) {
        if (args.length < 4) {
            System.err.println("usage: CopyLoop SOURCE_BOOTSTRAP TARGET_BOOTSTRAP TARGET_PREFIX TOPIC...");
            System.exit(2);
        }
        String prefix = args[2];
        Properties consumerProps = new Properties();
        consumerProps.put("bootstrap.servers", args[0]);
        consumerProps.put("enable.auto.commit", "false");
        consumerProps.put("auto.offset.reset", "earliest");
        consumerProps.put("max.poll.records", "2000");
        consumerProps.put("fetch.max.bytes", "52428800");
        consumerProps.put("max.partition.fetch.bytes", "8388608");
        consumerProps.put("enable.metrics.push", "false");
        Properties producerProps = new Properties();
        producerProps.put("bootstrap.servers", args[1]);
        producerProps.put("acks", "all");
        producerProps.put("linger.ms", "5");
        producerProps.put("batch.size", "1000000");
        producerProps.put("compression.type", System.getProperty("geokafka.compression", "lz4"));
        producerProps.put("max.request.size", "8388608");
        producerProps.put("enable.metrics.push", "false");
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(consumerProps, new ByteArrayDeserializer(),
                new ByteArrayDeserializer());
             KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(producerProps, new ByteArraySerializer(),
                     new ByteArraySerializer())) {
            List<TopicPartition> partitions = new ArrayList<>();
            Map<String, String> targets = new TreeMap<>();
            for (int i = 3; i < args.length; i++) {
                targets.put(args[i], prefix + args[i]);
                for (PartitionInfo info : consumer.partitionsFor(args[i], Duration.ofSeconds(60))) {
                    partitions.add(new TopicPartition(info.topic(), info.partition()));
                }
            }
            consumer.assign(partitions);
            consumer.seekToBeginning(partitions);
            Runtime.getRuntime().addShutdownHook(new Thread(consumer::wakeup));
            while (true) {
                for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(100))) {
                    producer.send(new ProducerRecord<>(targets.get(r.topic()), r.partition(), r.timestamp(), r.key(),
                            r.value(), r.headers()));
                }
            }
        } catch (org.apache.kafka.common.errors.WakeupException stopped) {
            // stopped by a signal: what was sent is flushed as the producer closes
        }
    }
}
