package io.geokafka.spark;

import java.util.function.LongSupplier;

/**
 * The link between a task's reader and its writer, which run in the same thread: while the reader waits for
 * records it lets the writer commit what it has written (a transaction per commit interval even when no more
 * records come), and learns how long it may wait before the writer wants to be asked again.
 */
final class IdleHook {
    private static final ThreadLocal<LongSupplier> HOOK = new ThreadLocal<>();

    private IdleHook() {}

    /** The writer of this thread's task: called while the reader waits; returns ms until it is due again. */
    static void register(LongSupplier writer) {
        HOOK.set(writer);
    }

    static void clear() {
        HOOK.remove();
    }

    /** Let this thread's writer commit if due; how long to wait for records at most (at most ``maxWaitMs``). */
    static long idle(long maxWaitMs) {
        LongSupplier writer = HOOK.get();
        return writer == null ? maxWaitMs : Math.max(1, Math.min(maxWaitMs, writer.getAsLong()));
    }
}
