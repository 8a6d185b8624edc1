package io.geokafka.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;

import java.time.Clock;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The generic client pool on a clock the test moves: expiry, capacity and closing, without waiting. */
class ClientPoolTest {
    /** A clock that stands still until the test moves it. */
    static final class ManualClock extends Clock {
        long now;

        void advance(long ms) {
            now += ms;
        }

        @Override
        public long millis() {
            return now;
        }

        @Override
        public Instant instant() {
            return Instant.ofEpochMilli(now);
        }

        @Override
        public ZoneId getZone() {
            return ZoneOffset.UTC;
        }

        @Override
        public Clock withZone(ZoneId zone) {
            return this;
        }
    }

    private final ManualClock clock = new ManualClock();
    private final List<String> closed = new ArrayList<>();

    private ClientPool<String, String> pool(int capacity) {
        return new ClientPool<>("test", capacity, 1_000, clock, closed::add);
    }

    @Test
    void aClientIdleLongerThanTheExpiryIsClosedAndOneIdleForLessIsKept() {
        ClientPool<String, String> pool = pool(8);
        pool.give("a", "client-a");
        clock.advance(500);
        pool.give("b", "client-b");
        clock.advance(500);
        pool.evictIdle();  // a idle for exactly the expiry: kept
        assertEquals(List.of(), closed);
        clock.advance(1);
        pool.evictIdle();
        assertEquals(List.of("client-a"), closed);
        assertEquals(1, pool.size());
        clock.advance(500);
        pool.evictIdle();
        assertEquals(List.of("client-a", "client-b"), closed);
        assertEquals(0, pool.size());
    }

    @Test
    void aClientTakenIsOutOfThePoolAndItsIdleTimeStartsAgainWhenGivenBack() {
        ClientPool<String, String> pool = pool(8);
        pool.give("a", "client-a");
        clock.advance(900);
        assertEquals("client-a", pool.take("a"));
        assertNull(pool.take("a"));  // one user at a time
        clock.advance(5_000);
        pool.evictIdle();  // in use: never closed under its user
        assertEquals(List.of(), closed);
        pool.give("a", "client-a");
        clock.advance(900);
        pool.evictIdle();
        assertEquals(List.of(), closed);
        assertSame("client-a", pool.take("a"));
    }

    @Test
    void overItsCapacityTheLongestIdleIsClosed() {
        ClientPool<String, String> pool = pool(2);
        pool.give("a", "client-a");
        clock.advance(1);
        pool.give("b", "client-b");
        clock.advance(1);
        pool.give("c", "client-c");
        assertEquals(List.of("client-a"), closed);
        assertEquals(2, pool.size());
        assertEquals(true, pool.has("b") && pool.has("c"));
    }

    @Test
    void aClientGivenForAKeyReplacesAndClosesTheOneKeptForIt() {
        ClientPool<String, String> pool = pool(8);
        pool.give("a", "old");
        pool.give("a", "old");  // the same client again: kept, not closed
        assertEquals(List.of(), closed);
        pool.give("a", "new");
        assertEquals(List.of("old"), closed);
        assertEquals("new", pool.take("a"));
    }

    @Test
    void closeIfClosesOnlyThePickedAndAFailingCloseStopsNoOther() {
        List<String> attempted = new ArrayList<>();
        ClientPool<String, String> pool = new ClientPool<>("test", 8, 1_000, clock, client -> {
            attempted.add(client);
            if (client.startsWith("q1")) {
                throw new IllegalStateException("broken");
            }
        });
        pool.give("1", "q1-a");
        pool.give("2", "q2-a");
        pool.give("3", "q1-b");
        pool.closeIf(client -> client.startsWith("q1"));
        assertEquals(List.of("q1-a", "q1-b"), attempted);
        assertEquals(1, pool.size());
        pool.closeAll();
        assertEquals(List.of("q1-a", "q1-b", "q2-a"), attempted);
        assertEquals(0, pool.size());
    }
}
