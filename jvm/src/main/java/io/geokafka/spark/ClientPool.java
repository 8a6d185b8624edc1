package io.geokafka.spark;

import java.time.Clock;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.function.Predicate;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Idle Kafka clients kept between tasks, by key, as Spark's {@code InternalKafkaProducerPool} and
 * {@code InternalKafkaConsumerPool} keep theirs: at most {@code capacity} idle clients (the longest idle closed
 * first), each closed once idle for {@code idleMs} by {@link #evictIdle} (run by an evictor thread in the pools of
 * this JVM, {@link #jvmWide}), every one closed at shutdown. Time is read from the {@link Clock} given to the
 * constructor, so expiry is tested without waiting.
 *
 * <p>A client in use is out of the pool: {@link #take} removes it and {@link #give} puts it back, so at most one
 * task holds a client (a transactional producer or a consumer must not be shared), and a client's reference
 * count is its being out or in.
 *
 * @param <K> what a client is kept for (a transactional id, a stream's partition group)
 * @param <V> the pooled client with what it remembers
 */
final class ClientPool<K, V> {
    private static final Logger LOG = LoggerFactory.getLogger(ClientPool.class);

    private record Idle<V>(V client, long since) {}

    private final String name;
    private final int capacity;
    private final long idleMs;
    private final Clock clock;
    private final Consumer<V> closer;
    private final Map<K, Idle<V>> idle = new LinkedHashMap<>();  // insertion order = idle since

    /** A pool of at most {@code capacity} idle clients, each closed by {@code closer} once idle for {@code idleMs}
     * by {@code clock}; {@code name} appears in its threads and logs. */
    ClientPool(String name, int capacity, long idleMs, Clock clock, Consumer<V> closer) {
        this.name = name;
        this.capacity = capacity;
        this.idleMs = idleMs;
        this.clock = clock;
        this.closer = closer;
    }

    /** A pool with an evictor thread (a daemon, every quarter of {@code idleMs}) and a shutdown hook: the one of
     * its kind in this JVM. */
    static <K, V> ClientPool<K, V> jvmWide(String name, int capacity, long idleMs, Consumer<V> closer) {
        ClientPool<K, V> pool = new ClientPool<>(name, capacity, idleMs, Clock.systemUTC(), closer);
        ScheduledExecutorService evictor = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "geokafka-" + name + "-evictor");
            t.setDaemon(true);
            return t;
        });
        evictor.scheduleWithFixedDelay(pool::evictIdle, idleMs / 4, idleMs / 4, TimeUnit.MILLISECONDS);
        Runtime.getRuntime().addShutdownHook(new Thread(pool::closeAll, "geokafka-" + name + "-pool-shutdown"));
        return pool;
    }

    /** The idle client kept for {@code key}, now out of the pool; null when there is none. */
    V take(K key) {
        synchronized (idle) {
            Idle<V> kept = idle.remove(key);
            return kept == null ? null : kept.client();
        }
    }

    /** True when an idle client is kept for {@code key}. */
    boolean has(K key) {
        synchronized (idle) {
            return idle.containsKey(key);
        }
    }

    /** Keep {@code client} for {@code key}, idle from now: one kept for it before is closed, and so is the
     * longest idle one when the pool is over its capacity. */
    void give(K key, V client) {
        List<V> closing = new ArrayList<>();
        synchronized (idle) {
            Idle<V> displaced = idle.remove(key);
            if (displaced != null && displaced.client() != client) {
                closing.add(displaced.client());
            }
            idle.put(key, new Idle<>(client, clock.millis()));
            while (idle.size() > capacity) {
                Iterator<Idle<V>> oldest = idle.values().iterator();
                closing.add(oldest.next().client());
                oldest.remove();
            }
        }
        closing.forEach(this::close);
    }

    /** Idle clients now kept (for tests and the mirror's resource count). */
    int size() {
        synchronized (idle) {
            return idle.size();
        }
    }

    /** Close every client idle for longer than the pool's {@code idleMs}. */
    void evictIdle() {
        long now = clock.millis();
        closeWhere((client, since) -> now - since > idleMs);
    }

    /** Close the idle clients {@code which} picks (e.g. those of a query that stopped). */
    void closeIf(Predicate<V> which) {
        closeWhere((client, since) -> which.test(client));
    }

    /** Close every idle client. */
    void closeAll() {
        closeWhere((client, since) -> true);
    }

    private interface Pick<V> {
        boolean test(V client, long since);
    }

    private void closeWhere(Pick<V> which) {
        List<V> closing = new ArrayList<>();
        synchronized (idle) {
            for (Iterator<Idle<V>> it = idle.values().iterator(); it.hasNext();) {
                Idle<V> kept = it.next();
                if (which.test(kept.client(), kept.since())) {
                    it.remove();
                    closing.add(kept.client());
                }
            }
        }
        closing.forEach(this::close);
    }

    private void close(V client) {
        try {
            closer.accept(client);
        } catch (RuntimeException e) {
            LOG.debug("geokafka {} pool: closing a client failed: {}", name, e.toString());
        }
    }
}
