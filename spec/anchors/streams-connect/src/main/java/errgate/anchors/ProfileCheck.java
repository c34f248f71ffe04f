/*
 * ProfileCheck.java — errgate's connect and streams lane profiles read with
 * Kafka's own constants and value encodings.
 *
 * Every record of the lane topic is decoded the way Kafka Connect's
 * DeadLetterQueueReporter (populateContextHeaders) and Kafka Streams'
 * ExceptionHandlerUtils (buildDeadLetterQueueRecord) write their headers,
 * header names taken from those classes' constants, not retyped:
 *   connect  every ERROR_HEADER_* once; topic, connector name, stage,
 *            class names, message and stack trace UTF-8 text; partition,
 *            offset and task id String.valueOf(int/long) (decimal text,
 *            not big-endian bytes); stage a name of Connect's Stage enum;
 *            the exception a binary class name; the stack trace starts with
 *            Throwable.toString() of that exception and message.
 *   streams  every HEADER_ERRORS_* once; exception is
 *            exception.getClass().getName() (a class name alone), message
 *            getMessage(), stacktrace printStackTrace's text, partition and
 *            offset String.valueOf(int/long).
 * Both must state the same origin and exception as the record's errgate
 * headers (original.topic, .partition, .offset, error.code, error.message).
 * One JSON line per record (the decoded fields and its problems); the exit
 * status is 1 when any record has a problem or fewer records came.
 */
package errgate.anchors;

import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import javax.lang.model.SourceVersion;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.connect.runtime.errors.DeadLetterQueueReporter;
import org.apache.kafka.connect.runtime.errors.Stage;
import org.apache.kafka.streams.errors.internals.ExceptionHandlerUtils;

final class ProfileCheck {
    private ProfileCheck() {}

    /** The one value of header name in r (problems noted when absent or repeated), as text. */
    private static String one(ConsumerRecord<byte[], byte[]> r, String name, List<String> problems) {
        List<byte[]> vs = new ArrayList<>();
        for (Header h : r.headers())
            if (h.key().equals(name)) vs.add(h.value());
        if (vs.size() != 1) {
            problems.add(name + " appears " + vs.size() + " times");
            return vs.isEmpty() || vs.get(vs.size() - 1) == null ? null : utf8(vs.get(vs.size() - 1), name, problems);
        }
        if (vs.get(0) == null) {
            problems.add(name + " is null");
            return null;
        }
        return utf8(vs.get(0), name, problems);
    }

    private static String utf8(byte[] v, String name, List<String> problems) {
        String s = Out.text(v);
        if (s == null) problems.add(name + " is not UTF-8 text");
        return s;
    }

    /** s as String.valueOf(int) writes it (parse and write back must give the same text), or null. */
    private static Integer int32(String s, String name, List<String> problems) {
        try {
            int v = Integer.parseInt(s);
            if (String.valueOf(v).equals(s)) return v;
        } catch (RuntimeException e) {
            /* below */
        }
        problems.add(name + " is not String.valueOf(int): " + Out.str(s));
        return null;
    }

    private static Long int64(String s, String name, List<String> problems) {
        try {
            long v = Long.parseLong(s);
            if (String.valueOf(v).equals(s)) return v;
        } catch (RuntimeException e) {
            /* below */
        }
        problems.add(name + " is not String.valueOf(long): " + Out.str(s));
        return null;
    }

    /** A binary class name as Class.getName() returns it (identifiers joined by dots, $ allowed). */
    static boolean className(String s) {
        if (s == null || s.isEmpty()) return false;
        for (String part : s.split("\\.", -1))
            if (!SourceVersion.isIdentifier(part) || SourceVersion.isKeyword(part)) return false;
        return true;
    }

    private static String errgate(ConsumerRecord<byte[], byte[]> r, String name) {
        String v = null;
        for (Header h : r.headers())
            if (h.key().equals(name) && h.value() != null) v = new String(h.value(), StandardCharsets.UTF_8);
        return v;
    }

    private static void same(String what, Object profile, Object errgate, List<String> problems) {
        if (profile != null && !String.valueOf(profile).equals(String.valueOf(errgate)))
            problems.add(what + " " + Out.str(String.valueOf(profile)) + " is not errgate's " + Out.str(String.valueOf(errgate)));
    }

    static Map<String, Object> connect(ConsumerRecord<byte[], byte[]> r, List<String> problems) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("topic", one(r, DeadLetterQueueReporter.ERROR_HEADER_ORIG_TOPIC, problems));
        String s = one(r, DeadLetterQueueReporter.ERROR_HEADER_ORIG_PARTITION, problems);
        m.put("partition", s == null ? null : int32(s, DeadLetterQueueReporter.ERROR_HEADER_ORIG_PARTITION, problems));
        s = one(r, DeadLetterQueueReporter.ERROR_HEADER_ORIG_OFFSET, problems);
        m.put("offset", s == null ? null : int64(s, DeadLetterQueueReporter.ERROR_HEADER_ORIG_OFFSET, problems));
        m.put("connector", one(r, DeadLetterQueueReporter.ERROR_HEADER_CONNECTOR_NAME, problems));
        s = one(r, DeadLetterQueueReporter.ERROR_HEADER_TASK_ID, problems);
        m.put("task", s == null ? null : int32(s, DeadLetterQueueReporter.ERROR_HEADER_TASK_ID, problems));
        s = one(r, DeadLetterQueueReporter.ERROR_HEADER_STAGE, problems);
        try {
            m.put("stage", s == null ? null : Stage.valueOf(s).name());
        } catch (IllegalArgumentException e) {
            problems.add(DeadLetterQueueReporter.ERROR_HEADER_STAGE + " is no Stage: " + Out.str(s));
        }
        m.put("executing_class", one(r, DeadLetterQueueReporter.ERROR_HEADER_EXECUTING_CLASS, problems));
        String ex = one(r, DeadLetterQueueReporter.ERROR_HEADER_EXCEPTION, problems);
        if (ex != null && !className(ex)) problems.add(DeadLetterQueueReporter.ERROR_HEADER_EXCEPTION + " is no class name: " + Out.str(ex));
        m.put("exception", ex);
        String msg = one(r, DeadLetterQueueReporter.ERROR_HEADER_EXCEPTION_MESSAGE, problems);
        m.put("message", msg);
        String trace = one(r, DeadLetterQueueReporter.ERROR_HEADER_EXCEPTION_STACK_TRACE, problems);
        String head = ex + (msg != null ? ": " + msg : "");
        if (trace != null && ex != null && !trace.startsWith(head))
            problems.add(DeadLetterQueueReporter.ERROR_HEADER_EXCEPTION_STACK_TRACE + " does not start with Throwable.toString() " + Out.str(head));
        m.put("stacktrace", trace);
        return m;
    }

    static Map<String, Object> streams(ConsumerRecord<byte[], byte[]> r, List<String> problems) {
        Map<String, Object> m = new LinkedHashMap<>();
        String ex = one(r, ExceptionHandlerUtils.HEADER_ERRORS_EXCEPTION_NAME, problems);
        if (ex != null && !className(ex))
            problems.add(ExceptionHandlerUtils.HEADER_ERRORS_EXCEPTION_NAME + " is not getClass().getName(): " + Out.str(ex));
        m.put("exception", ex);
        String msg = one(r, ExceptionHandlerUtils.HEADER_ERRORS_EXCEPTION_MESSAGE_NAME, problems);
        m.put("message", msg);
        String trace = one(r, ExceptionHandlerUtils.HEADER_ERRORS_STACKTRACE_NAME, problems);
        String head = ex + (msg != null ? ": " + msg : "");
        if (trace != null && ex != null && !trace.startsWith(head))
            problems.add(ExceptionHandlerUtils.HEADER_ERRORS_STACKTRACE_NAME + " does not start with Throwable.toString() " + Out.str(head));
        m.put("stacktrace", trace);
        m.put("topic", one(r, ExceptionHandlerUtils.HEADER_ERRORS_TOPIC_NAME, problems));
        String s = one(r, ExceptionHandlerUtils.HEADER_ERRORS_PARTITION_NAME, problems);
        m.put("partition", s == null ? null : int32(s, ExceptionHandlerUtils.HEADER_ERRORS_PARTITION_NAME, problems));
        s = one(r, ExceptionHandlerUtils.HEADER_ERRORS_OFFSET_NAME, problems);
        m.put("offset", s == null ? null : int64(s, ExceptionHandlerUtils.HEADER_ERRORS_OFFSET_NAME, problems));
        return m;
    }

    /** Checks the first `want` records of topic; returns the exit status. */
    static int run(Kafka k, String topic, int want, PrintStream out) {
        List<ConsumerRecord<byte[], byte[]>> rs = k.read(topic, want, 60);
        int bad = rs.size() == want ? 0 : 1;
        for (ConsumerRecord<byte[], byte[]> r : rs) {
            List<String> problems = new ArrayList<>();
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("partition", r.partition());
            m.put("offset", r.offset());
            m.put("key", Out.text(r.key()));
            Map<String, Object> c = connect(r, problems), s = streams(r, problems);
            m.put("connect", c);
            m.put("streams", s);
            for (Map<String, Object> p : List.of(c, s)) {
                String who = p == c ? "connect" : "streams";
                same(who + " topic", p.get("topic"), errgate(r, "original.topic"), problems);
                same(who + " partition", p.get("partition"), errgate(r, "original.partition"), problems);
                same(who + " offset", p.get("offset"), errgate(r, "original.offset"), problems);
                same(who + " message", p.get("message"), errgate(r, "error.message"), problems);
                same(who + " exception", p.get("exception"), errgate(r, "error.code"), problems);
            }
            m.put("problems", new ArrayList<Object>(problems));
            if (!problems.isEmpty()) bad = 1;
            Out.line(out, m);
        }
        if (rs.size() != want) System.err.println("check-profiles: " + rs.size() + " of " + want + " records in " + topic);
        return bad;
    }
}
