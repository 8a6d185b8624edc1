package io.geokafka.spark;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.Map;

/** The source's and the sink's options as Spark hands them over: plain strings and JSON values, each
 * failure naming the option. */
final class OptionReader {
    private static final ObjectMapper JSON = new ObjectMapper();
    static final TypeReference<Map<String, String>> STRINGS = new TypeReference<>() {};

    private final String owner;
    private final Map<String, String> options;

    /** {@code owner} names the reader in errors ("geokafka sink", "geokafka source"). */
    OptionReader(String owner, Map<String, String> options) {
        this.owner = owner;
        this.options = options;
    }

    String required(String key) {
        String value = options.get(key);
        if (value == null) {
            throw new IllegalArgumentException(owner + ": option '" + key + "' is required");
        }
        return value;
    }

    String get(String key, String fallback) {
        return options.getOrDefault(key, fallback);
    }

    long getLong(String key, long fallback) {
        String value = options.get(key);
        try {
            return value == null ? fallback : Long.parseLong(value.trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(owner + ": option '" + key + "' is not a whole number: " + value, e);
        }
    }

    /** The option's true or false (either case); {@code fallback} when absent. */
    boolean getBool(String key, boolean fallback) {
        String value = options.get(key);
        if (value == null) {
            return fallback;
        }
        if (!value.equalsIgnoreCase("true") && !value.equalsIgnoreCase("false")) {
            throw new IllegalArgumentException(owner + ": option '" + key + "' is not true or false: " + value);
        }
        return Boolean.parseBoolean(value);
    }

    /** The option's JSON value as {@code type}; {@code fallback} (JSON text) when absent, required when null. */
    <T> T json(String key, String fallback, TypeReference<T> type) {
        String text = fallback == null ? required(key) : get(key, fallback);
        try {
            return JSON.readValue(text, type);
        } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
            throw new IllegalArgumentException(owner + ": option '" + key + "' is not valid JSON of its kind: "
                    + e.getOriginalMessage(), e);
        }
    }

    /** Options written as one JSON object of strings (as the driver hands them over py4j). */
    static Map<String, String> object(String owner, String json) {
        try {
            return JSON.readValue(json, STRINGS);
        } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
            throw new IllegalArgumentException(owner + ": options are not a JSON object of strings: "
                    + e.getOriginalMessage(), e);
        }
    }
}
