package io.geokafka.spark;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.security.SecureRandom;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executors;

/**
 * The driver's end of the commit reports of executors (cluster masters): tasks on other JVMs post each
 * commit here as it happens, so the driver's counts and first-records line are live as on a local master,
 * not a batch (up to {@code realtime_batch_s}) late. One per driver JVM, on the driver's host, any free port;
 * a request must carry the token handed to the tasks in the sink's options. Reports carry counts only: the
 * positions the driver plans with still come from each batch's commit messages.
 */
final class CommitReportServer {
    static final String PATH = "/geokafka/commits";
    static final String TOKEN_HEADER = "X-Geokafka-Token";
    private static final ObjectMapper JSON = new ObjectMapper();
    private static CommitReportServer running;

    final String address;
    final String token;
    private final HttpServer server;

    private CommitReportServer(String bindHost, String advertisedHost) throws IOException {
        byte[] secret = new byte[16];
        new SecureRandom().nextBytes(secret);
        token = HexFormat.of().formatHex(secret);
        server = HttpServer.create(new InetSocketAddress(bindHost, 0), 64);
        server.createContext(PATH, this::handle);
        server.setExecutor(Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "geokafka-commit-reports");
            t.setDaemon(true);
            return t;
        }));
        server.start();
        address = advertisedHost + ":" + server.getAddress().getPort();
    }

    /** This JVM's server, started on first use. */
    static synchronized CommitReportServer start(String bindHost, String advertisedHost) throws IOException {
        if (running == null) {
            running = new CommitReportServer(bindHost, advertisedHost);
        }
        return running;
    }

    private void handle(HttpExchange exchange) throws IOException {
        try (exchange; InputStream body = exchange.getRequestBody()) {
            if (!"POST".equals(exchange.getRequestMethod())
                    || !token.equals(exchange.getRequestHeaders().getFirst(TOKEN_HEADER))) {
                exchange.sendResponseHeaders(403, -1);
                return;
            }
            Map<String, Object> report = JSON.readValue(body, new TypeReference<Map<String, Object>>() {});
            @SuppressWarnings("unchecked")
            List<Map<String, Object>> rows = (List<Map<String, Object>>) report.get(Contract.text("epoch", "partitions"));
            SinkRegistry.COMMITS.record((String) report.get("query"), ((Number) report.get(Contract.text("epoch", "epoch"))).longValue(),
                    rows);
            exchange.sendResponseHeaders(204, -1);
        } catch (RuntimeException e) {
            exchange.sendResponseHeaders(400, -1);
        }
    }
}
