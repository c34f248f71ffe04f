/*
 * Out.java — the tool's JSON lines: one object per dead letter read back
 * (or per lane record checked), written in a fixed key order with every
 * byte string as hex (header values, keys and values are bytes: the test
 * compares them exactly) and, where the bytes are UTF-8, as text too.
 */
package errgate.anchors;

import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.Header;

final class Out {
    private Out() {}

    /** A JSON string literal of s (null: JSON null). */
    static String str(String s) {
        if (s == null) return "null";
        StringBuilder b = new StringBuilder("\"");
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '"' || c == '\\') b.append('\\').append(c);
            else if (c < 0x20 || c == 0x7f) b.append(String.format("\\u%04x", (int) c));
            else b.append(c);
        }
        return b.append('"').toString();
    }

    /** bytes as lower-case hex, or null. */
    static String hex(byte[] v) { return v == null ? null : HexFormat.of().formatHex(v); }

    /** bytes as text when they are valid UTF-8, else null. */
    static String text(byte[] v) {
        if (v == null) return null;
        try {
            return StandardCharsets.UTF_8.newDecoder().decode(ByteBuffer.wrap(v)).toString();
        } catch (CharacterCodingException e) {
            return null;
        }
    }

    /** A JSON value of o: String, Number, Boolean, null, Map (kept order), List. */
    static String json(Object o) {
        if (o == null) return "null";
        if (o instanceof String s) return str(s);
        if (o instanceof Number || o instanceof Boolean) return o.toString();
        if (o instanceof Map<?, ?> m) {
            StringBuilder b = new StringBuilder("{");
            for (Map.Entry<?, ?> e : m.entrySet()) {
                if (b.length() > 1) b.append(',');
                b.append(str(String.valueOf(e.getKey()))).append(':').append(json(e.getValue()));
            }
            return b.append('}').toString();
        }
        if (o instanceof List<?> l) {
            StringBuilder b = new StringBuilder("[");
            for (Object x : l) {
                if (b.length() > 1) b.append(',');
                b.append(json(x));
            }
            return b.append(']').toString();
        }
        throw new IllegalArgumentException("no JSON form for " + o.getClass());
    }

    /** The record as read back: coordinates, timestamp, key, value, headers in order. */
    static Map<String, Object> record(ConsumerRecord<byte[], byte[]> r) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("topic", r.topic());
        m.put("partition", r.partition());
        m.put("offset", r.offset());
        m.put("timestamp", r.timestamp());
        m.put("timestamp_type", r.timestampType().toString());
        m.put("key", text(r.key()));
        m.put("key_hex", hex(r.key()));
        m.put("value", text(r.value()));
        m.put("value_hex", hex(r.value()));
        List<Object> hs = new ArrayList<>();
        for (Header h : r.headers()) hs.add(Arrays.asList(h.key(), hex(h.value())));
        m.put("headers", hs);
        return m;
    }

    static void line(PrintStream out, Map<String, Object> m) {
        out.println(json(m));
        out.flush();
    }
}
