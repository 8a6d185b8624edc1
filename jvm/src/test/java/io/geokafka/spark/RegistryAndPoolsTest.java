package io.geokafka.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertSame;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;

/** The driver's registry and the JVM's client pools (real clients, never connected: no broker needed). */
class RegistryAndPoolsTest {
    @Test
    void aQuerysCommitsAreKeptFromRegisterToForgetAndNeverAfter() throws Exception {
        SinkRegistry.register("q1");
        SinkRegistry.record("q1", 4, List.of(Map.of("topic", "a", "partition", 0)));
        JsonNode drained = new ObjectMapper().readTree(SinkRegistry.drain("q1"));
        assertEquals(1, drained.size());
        assertEquals(4, drained.get(0).get("epoch").asInt());
        assertEquals("[]", SinkRegistry.drain("q1"));
        SinkRegistry.forget("q1");
        SinkRegistry.record("q1", 5, List.of(Map.of("topic", "a", "partition", 0)));  // a task still finishing
        assertEquals("[]", SinkRegistry.drain("q1"));
        assertEquals(false, SinkRegistry.registered("q1"));
    }

    @Test
    void recordsRacingForgetNeitherFailNorLeak() throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(4);
        CountDownLatch go = new CountDownLatch(1);
        for (int i = 0; i < 200; i++) {
            String key = "race-" + i;
            SinkRegistry.register(key);
            pool.submit(() -> {
                go.await();
                SinkRegistry.record(key, 1, List.of());
                return null;
            });
            pool.submit(() -> {
                go.await();
                SinkRegistry.forget(key);
                return null;
            });
        }
        go.countDown();
        pool.shutdown();
        assertEquals(true, pool.awaitTermination(30, TimeUnit.SECONDS));
        for (int i = 0; i < 200; i++) {
            assertEquals(false, SinkRegistry.registered("race-" + i));
        }
    }

    @Test
    void anOutOfMemoryErrorAnywhereInTheChainIsTheFailure() {
        Map<String, Object> typed = SinkRegistry.typedFailure(new RuntimeException("task failed",
                new GeokafkaException(GeokafkaException.Kind.KAFKA, -1, true, "send failed", new OutOfMemoryError("Java heap space"))));
        assertNotNull(typed);
        assertEquals("JVM_FATAL", typed.get("kind"));
        assertEquals(false, typed.get("retriable"));
        assertEquals(true, ((String) typed.get("message")).contains("OutOfMemoryError"));
    }

    @Test
    void theConsumerPoolKeepsAtMostItsCapacityAndClosesAStreamsConsumersWhenItStops() {
        Map<String, String> config = Map.of("bootstrap.servers", "127.0.0.1:9");
        TopicPartition tp = new TopicPartition("t", 0);
        int before = ConsumerPool.idle();
        for (int g = 0; g < ConsumerPool.CAPACITY + 3; g++) {
            ConsumerPool.Lease lease = ConsumerPool.borrow("s1", g, config, List.of(tp), Map.of(tp, new long[] {0, 10}));
            ConsumerPool.giveBack(lease);
        }
        assertEquals(ConsumerPool.CAPACITY, ConsumerPool.idle());
        ConsumerPool.closeStream("s1");
        assertEquals(before, ConsumerPool.idle());
    }

    @Test
    void aPartitionIsAssignedOnceItHasARangeSoThatEveryAssignedPartitionHasAPosition() {
        Map<String, String> config = Map.of("bootstrap.servers", "127.0.0.1:9");
        TopicPartition a = new TopicPartition("t", 0);
        TopicPartition b = new TopicPartition("u", 0);
        // the first batch has records of a only: b, empty, must not be assigned without a position
        ConsumerPool.Lease lease = ConsumerPool.borrow("s3", 0, config, List.of(a, b), Map.of(a, new long[] {5, 10}));
        assertEquals(java.util.Set.of(a), lease.consumer.assignment());
        assertEquals(true, lease.cursors.get(b).done);
        ConsumerPool.giveBack(lease);
        // the next one has records of b only: both assigned, a paused where it stopped
        ConsumerPool.Lease next = ConsumerPool.borrow("s3", 0, config, List.of(a, b), Map.of(b, new long[] {0, 4}));
        assertEquals(java.util.Set.of(a, b), next.consumer.assignment());
        assertEquals(java.util.Set.of(a), next.consumer.paused());
        assertEquals(false, next.cursors.get(b).done);
        ConsumerPool.close(next);
        ConsumerPool.closeStream("s3");
    }

    @Test
    void aConsumerThatStoppedWhereTheNextBatchStartsKeepsItsRecords() {
        Map<String, String> config = Map.of("bootstrap.servers", "127.0.0.1:9");
        TopicPartition tp = new TopicPartition("t", 0);
        ConsumerPool.Lease lease = ConsumerPool.borrow("s2", 0, config, List.of(tp), Map.of(tp, new long[] {0, 10}));
        ConsumerPool.Cursor cursor = lease.cursors.get(tp);
        cursor.records = List.of(new org.apache.kafka.clients.consumer.ConsumerRecord<>("t", 0, 10, new byte[0], new byte[0]));
        cursor.next = 10;
        ConsumerPool.giveBack(lease);
        ConsumerPool.Lease again = ConsumerPool.borrow("s2", 0, config, List.of(tp), Map.of(tp, new long[] {10, 20}));
        assertEquals(1, again.cursors.get(tp).records.size());  // continues: kept, no seek
        ConsumerPool.giveBack(again);
        ConsumerPool.Lease elsewhere = ConsumerPool.borrow("s2", 0, config, List.of(tp), Map.of(tp, new long[] {3, 20}));
        assertEquals(0, elsewhere.cursors.get(tp).records.size());  // another start: seek, nothing kept
        ConsumerPool.close(elsewhere);
        ConsumerPool.closeStream("s2");
    }

    @Test
    void aWarmUpOpensEveryGroupsProducerAheadAndForgettingTheQueryClosesThem() {
        List<org.apache.kafka.clients.producer.MockProducer<byte[], byte[]>> opened =
                java.util.Collections.synchronizedList(new java.util.ArrayList<>());
        ProducerPool producers = new ProducerPool(new ClientPool<>("test", 8, 1_000, new ClientPoolTest.ManualClock(),
                session -> ProducerPool.closeQuietly(session.producer())), (options, txnId) -> {
                    var producer = new org.apache.kafka.clients.producer.MockProducer<>(true,
                            new org.apache.kafka.common.serialization.ByteArraySerializer(),
                            new org.apache.kafka.common.serialization.ByteArraySerializer());
                    opened.add(producer);
                    return producer;
                });
        ProducerWarmup warmup = new ProducerWarmup(producers);
        SinkOptions options = SinkOptionsTest.options(Map.of("query_key", "warm-q"));
        warmup.start(options);
        assertEquals(true, warmup.firstEpoch("warm-q"));
        assertEquals(false, warmup.firstEpoch("warm-q"));
        warmup.await("warm-q");
        assertEquals(options.groupCount, producers.pooled());
        warmup.forget("warm-q");
        assertEquals(0, producers.pooled());
        assertEquals(options.groupCount, opened.size());
        assertEquals(true, opened.stream().allMatch(org.apache.kafka.clients.producer.MockProducer::closed));
        assertEquals(true, warmup.firstEpoch("warm-q"));  // a restart of the query waits for its own warm-up
    }

    @Test
    void eachQuerysWritersAndExpectationsAreItsOwnUntilItIsForgotten() {
        QueryWriters writers = new QueryWriters();
        writers.started("a");
        writers.started("a");
        assertEquals(2, writers.count("a"));
        assertEquals(0, writers.count("b"));
        writers.forget("a");
        assertEquals(0, writers.count("a"));
        QueryExpectations expectations = new QueryExpectations();
        Map<String, long[]> first = expectations.of("a", Map.of("t/0", new long[] {5, 0}));
        assertSame(first, expectations.of("a", Map.of()));  // every batch's write of the query shares them
        assertEquals(5, first.get("t/0")[0]);
        expectations.forget("a");
        assertEquals(true, expectations.of("a", Map.of()).isEmpty());
    }

    /** A new producer learns its topics' partitions side by side: each answer here comes only once every topic
     * was asked (within 10 s), so topics asked one after another would learn nothing. */
    @Test
    @SuppressWarnings("unchecked")
    void aNewProducerAsksForItsTopicsSideBySide() throws Exception {
        List<String> topics = List.of("nyc.a", "nyc.b", "nyc.c", "nyc.d", "nyc.e");
        CountDownLatch allAsked = new CountDownLatch(topics.size());
        java.util.Set<String> learnt = java.util.concurrent.ConcurrentHashMap.newKeySet();
        org.apache.kafka.clients.producer.MockProducer<byte[], byte[]> producer =
                new org.apache.kafka.clients.producer.MockProducer<>(true,
                        new org.apache.kafka.common.serialization.ByteArraySerializer(),
                        new org.apache.kafka.common.serialization.ByteArraySerializer());
        org.apache.kafka.clients.producer.Producer<byte[], byte[]> waiting =
                (org.apache.kafka.clients.producer.Producer<byte[], byte[]>) java.lang.reflect.Proxy.newProxyInstance(
                        getClass().getClassLoader(), new Class<?>[] {org.apache.kafka.clients.producer.Producer.class},
                        (proxy, method, args) -> {
                            if (method.getName().equals("partitionsFor")) {
                                allAsked.countDown();
                                if (allAsked.await(10, TimeUnit.SECONDS)) {
                                    learnt.add((String) args[0]);
                                }
                                return List.of();
                            }
                            return method.invoke(producer, args);
                        });
        ProducerPool.learnTopics(waiting, topics);
        assertEquals(new java.util.TreeSet<>(topics), new java.util.TreeSet<>(learnt), "no topic waited for another");
        assertEquals(new java.util.TreeSet<>(List.of("__geokafka_state", "nyc.orders", "nyc.pay")),
                SinkOptionsTest.options(Map.of()).targetTopicsOf(0));
    }
}
