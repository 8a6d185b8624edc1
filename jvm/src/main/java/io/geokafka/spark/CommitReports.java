package io.geokafka.spark;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * One task's commit reports to the driver's {@link CommitReportServer} (cluster masters): each commit is posted
 * in the background, in order, by one sender thread per JVM, never holding up the writer. What could not be
 * delivered by the task's end goes into its commit message instead, so the driver counts every commit once
 * (a report still in flight at that moment is the one exception: it is left to arrive on its own).
 */
final class CommitReports {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Duration REQUEST_TIMEOUT = Duration.ofSeconds(2);
    private static final ExecutorService SENDER = Executors.newSingleThreadExecutor(r -> {
        Thread t = new Thread(r, "geokafka-commit-report-sender");
        t.setDaemon(true);
        return t;
    });
    private static final HttpClient CLIENT = HttpClient.newBuilder().connectTimeout(REQUEST_TIMEOUT).build();

    private static final int QUEUED = 0;
    private static final int SENDING = 1;
    private static final int DELIVERED = 2;
    private static final int FAILED = 3;
    private static final int TAKEN_BACK = 4;

    private record Report(long epoch, List<Map<String, Object>> rows, AtomicInteger state) {}

    private final URI uri;
    private final String token;
    private final String queryKey;
    private final List<Report> sent = new ArrayList<>();

    private CommitReports(String address, String token, String queryKey) {
        this.uri = URI.create("http://" + address + CommitReportServer.PATH);
        this.token = token;
        this.queryKey = queryKey;
    }

    /** The reports of a task of ``options``' query, or null when the driver listens for none. */
    static CommitReports of(SinkOptions options) {
        return options.reportAddress.isEmpty() ? null
                : new CommitReports(options.reportAddress, options.reportToken, options.queryKey);
    }

    /** Post one commit's rows in the background. */
    void send(long epoch, List<Map<String, Object>> rows) {
        Report report = new Report(epoch, rows, new AtomicInteger(QUEUED));
        sent.removeIf(r -> r.state().get() == DELIVERED);
        sent.add(report);
        SENDER.execute(() -> {
            if (report.state().compareAndSet(QUEUED, SENDING)) {
                report.state().set(post(report) ? DELIVERED : FAILED);
            }
        });
    }

    /** Wait up to ``timeoutMs`` for the reports sent; the rows of those not delivered (for the commit message). */
    List<Map<String, Object>> finish(long timeoutMs) {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
        List<Map<String, Object>> undelivered = new ArrayList<>();
        for (Report report : sent) {
            while (report.state().get() <= SENDING && System.nanoTime() < deadline && pause()) {
                // the sender is at it
            }
            if (report.state().get() == FAILED || report.state().compareAndSet(QUEUED, TAKEN_BACK)) {
                undelivered.addAll(report.rows());
            }
        }
        sent.clear();
        return undelivered;
    }

    private boolean post(Report report) {
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("query", queryKey);
        body.put(Contract.text("epoch", "epoch"), report.epoch());
        body.put(Contract.text("epoch", "partitions"), report.rows());
        try {
            HttpRequest request = HttpRequest.newBuilder(uri).timeout(REQUEST_TIMEOUT)
                    .header(CommitReportServer.TOKEN_HEADER, token)
                    .POST(HttpRequest.BodyPublishers.ofByteArray(JSON.writeValueAsBytes(body))).build();
            return CLIENT.send(request, HttpResponse.BodyHandlers.discarding()).statusCode() == 204;
        } catch (java.io.IOException e) {
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    /** A short wait; false when the task is being interrupted (it ends now, with what it has). */
    private static boolean pause() {
        try {
            Thread.sleep(5);
            return true;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }
}
