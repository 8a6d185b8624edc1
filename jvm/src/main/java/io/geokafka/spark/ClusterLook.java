package io.geokafka.spark;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.DescribeConfigsOptions;
import org.apache.kafka.clients.admin.DescribeTopicsOptions;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.UnknownTopicIdException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;

/**
 * A running flow's looks at one of its clusters, asked from the Python driver through py4j: the source's topic IDs
 * (the re-created-topic watch) and the topic configs of either side (the config sync).
 *
 * <p>The Python driver's librdkafka client turns every answer into Python objects (each topic's partitions, their
 * leaders and replicas; each config entry), which over many topics costs more than the look itself: 27-35 ms of CPU
 * for the IDs of 200 topics of 10 partitions and about 43 ms for their configs, a few ms with a Java admin client. The
 * topics and the answers cross py4j as one string each way, never a Java object per topic. The admin client is
 * thread-safe; {@link #close} may come from another thread.
 */
public final class ClusterLook implements AutoCloseable {
    private static final AtomicInteger OPENED = new AtomicInteger();
    private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();

    private final Admin admin;
    private final long adminThread;
    private final AtomicLong cpuNanos = new AtomicLong();

    /** A look at the cluster of ``config`` (Java client settings: bootstrap and security). */
    public ClusterLook(Map<String, String> config) {
        Properties props = new Properties();
        props.putAll(config);
        props.put("enable.metrics.push", "false");
        String clientId = "geokafka-look-" + OPENED.incrementAndGet();
        props.put("client.id", clientId);
        try {
            this.admin = Admin.create(props);
        } catch (RuntimeException e) {
            throw KafkaErrors.of(e, "opening the cluster look's admin client");
        }
        this.adminThread = networkThread(clientId);
    }

    /**
     * ``topic TAB id`` lines of the topics of ``topics`` (one a line) that exist, each ID written as the Python
     * client writes it (standard base64, no padding); throws a {@link GeokafkaException} for any other failure, or
     * when the cluster does not answer within ``timeoutMs``.
     */
    public String topicIds(String topics, long timeoutMs) {
        return counted(() -> {
            List<String> names = lines(topics);
            if (names.isEmpty()) {
                return "";
            }
            Map<String, KafkaFuture<TopicDescription>> futures = admin
                    .describeTopics(names, new DescribeTopicsOptions().timeoutMs(clientTimeout(timeoutMs)))
                    .topicNameValues();
            StringBuilder out = new StringBuilder(names.size() * 40);
            long deadline = deadline(timeoutMs);
            for (String name : names) {
                TopicDescription description = await(futures.get(name), deadline, timeoutMs, "describing topic " + name, true);
                if (description != null) {
                    out.append(name).append('\t').append(idText(description.topicId())).append('\n');
                }
            }
            return out.toString();
        });
    }

    /**
     * The configs set on each topic of ``topics`` (one a line) itself, not inherited from the broker
     * (DYNAMIC_TOPIC_CONFIG), in the text {@link #configText} writes; throws a {@link GeokafkaException} when any topic
     * fails (a missing one included), or when the cluster does not answer within ``timeoutMs``.
     */
    public String topicConfigs(String topics, long timeoutMs) {
        return counted(() -> {
            List<ConfigResource> resources = new ArrayList<>();
            for (String name : lines(topics)) {
                resources.add(new ConfigResource(ConfigResource.Type.TOPIC, name));
            }
            if (resources.isEmpty()) {
                return "";
            }
            Map<ConfigResource, KafkaFuture<Config>> futures = admin
                    .describeConfigs(resources, new DescribeConfigsOptions().timeoutMs(clientTimeout(timeoutMs)))
                    .values();
            Map<String, Config> configs = new LinkedHashMap<>();
            long deadline = deadline(timeoutMs);
            for (ConfigResource resource : resources) {
                configs.put(resource.name(), await(futures.get(resource), deadline, timeoutMs,
                        "describing configs of " + resource.name(), false));
            }
            return configText(configs);
        });
    }

    /** ``look``'s answer, its calling thread's CPU added to what the looks cost. */
    private String counted(Supplier<String> look) {
        long started = THREADS.getCurrentThreadCpuTime();
        try {
            return look.get();
        } finally {
            cpuNanos.addAndGet(Math.max(0, THREADS.getCurrentThreadCpuTime() - started));
        }
    }

    /** The non-empty lines of ``text``: the topics a call names. */
    private static List<String> lines(String text) {
        List<String> out = new ArrayList<>();
        for (String line : text.split("\n")) {
            if (!line.isEmpty()) {
                out.add(line);
            }
        }
        return out;
    }

    /** The admin client's own time-out for a call of ``timeoutMs``. */
    private static int clientTimeout(long timeoutMs) {
        return (int) Math.min(Integer.MAX_VALUE, timeoutMs);
    }

    /** When a call of ``timeoutMs`` stops waiting for its answers ({@code System.nanoTime}): a second after the admin
     * client's own time-out, which answers first. */
    private static long deadline(long timeoutMs) {
        return System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs + 1000);
    }

    /**
     * ``future``'s answer by ``deadline``; with ``missingIsNull``, null for a topic that does not exist. Any other
     * failure, or no answer by then, is a {@link GeokafkaException} saying ``what`` (its innermost Kafka exception
     * decides its type).
     */
    private static <T> T await(KafkaFuture<T> future, long deadline, long timeoutMs, String what, boolean missingIsNull) {
        try {
            return future.get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
        } catch (ExecutionException e) {
            if (missingIsNull && (e.getCause() instanceof UnknownTopicOrPartitionException
                    || e.getCause() instanceof UnknownTopicIdException)) {
                return null;
            }
            throw KafkaErrors.of(e, what);
        } catch (java.util.concurrent.TimeoutException e) {
            throw KafkaErrors.of(new org.apache.kafka.common.errors.TimeoutException(
                    "no answer within " + timeoutMs + " ms"), what);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw KafkaErrors.of(e, what);
        }
    }

    /**
     * Each topic on a line of its own, then a ``name TAB value`` line for each config set on the topic itself (its
     * value not null), each line starting with a tab; a tab, a line break or a backslash in a value is written
     * {@code \t}, {@code \n} or {@code \\} (topic and config names hold none).
     */
    static String configText(Map<String, Config> configs) {
        StringBuilder out = new StringBuilder(configs.size() * 64);
        for (Map.Entry<String, Config> topic : configs.entrySet()) {
            out.append(topic.getKey()).append('\n');
            for (ConfigEntry entry : topic.getValue().entries()) {
                if (entry.source() != ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG || entry.value() == null) {
                    continue;
                }
                out.append('\t').append(entry.name()).append('\t');
                String value = entry.value();
                for (int i = 0; i < value.length(); i++) {
                    char c = value.charAt(i);
                    switch (c) {
                        case '\t' -> out.append("\\t");
                        case '\n' -> out.append("\\n");
                        case '\\' -> out.append("\\\\");
                        default -> out.append(c);
                    }
                }
                out.append('\n');
            }
        }
        return out.toString();
    }

    /** CPU seconds the callers' threads spent in this look's calls so far and the admin client's network thread
     * (where the answers are read): what the looks cost the JVM. */
    public double cpuSeconds() {
        long network = adminThread < 0 ? 0 : Math.max(0, THREADS.getThreadCpuTime(adminThread));
        return (cpuNanos.get() + network) / 1e9;
    }

    @Override
    public void close() {
        admin.close(Duration.ZERO);
    }

    /** The ID of the admin client's network thread, named after its client id by Kafka's client (-1: not found). */
    private static long networkThread(String clientId) {
        for (Thread t : Thread.getAllStackTraces().keySet()) {
            if (t.getName().endsWith("| " + clientId)) {
                return t.getId();
            }
        }
        return -1;
    }

    /** A topic ID as librdkafka's Python client prints it: its 16 bytes in standard base64 without padding (Kafka's
     * own {@code Uuid.toString} uses the URL-safe alphabet). */
    static String idText(Uuid id) {
        ByteBuffer bytes = ByteBuffer.allocate(16);
        bytes.putLong(id.getMostSignificantBits()).putLong(id.getLeastSignificantBits());
        return Base64.getEncoder().withoutPadding().encodeToString(bytes.array());
    }
}
