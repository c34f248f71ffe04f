/*
 * Main.java — the anchor tool's entry point (spec/anchors/README.md).
 *
 *   produce BOOTSTRAP SCRATCH_DIR [streams|connect|share ...]
 *       runs the scenarios (all three by default) on the cluster at
 *       BOOTSTRAP, one after the other in this one JVM, and prints one JSON
 *       line per dead letter the anchor wrote: {anchor, case, source:
 *       {topic, partition, offset, timestamp, key, value} of the record it
 *       came from, dlq: the dead letter as read back}
 *   check-profiles BOOTSTRAP TOPIC COUNT
 *       reads COUNT errgate lane records of TOPIC with Kafka's own Connect
 *       and Streams header constants (ProfileCheck) and prints one JSON line
 *       per record; exit 1 on any problem
 * Exit status: 0 done, 1 failure (the reason on stderr), 2 usage.
 */
package errgate.anchors;

import java.io.PrintStream;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.apache.kafka.clients.producer.RecordMetadata;

public final class Main {
    /** The scenarios' base CreateTime: an hour before the run, on a whole second. */
    static final long T0 = System.currentTimeMillis() / 1000 * 1000 - 3_600_000L;

    private Main() {}

    /** Where an input record landed, with what it held. */
    static Map<String, Object> source(RecordMetadata md, long timestamp, byte[] key, byte[] value) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("topic", md.topic());
        m.put("partition", md.partition());
        m.put("offset", md.offset());
        m.put("timestamp", timestamp);
        m.put("key", Out.text(key));
        m.put("key_hex", Out.hex(key));
        m.put("value_hex", Out.hex(value));
        return m;
    }

    private static int usage() {
        System.err.println("usage: produce BOOTSTRAP SCRATCH_DIR [streams|connect|share ...] | check-profiles BOOTSTRAP TOPIC COUNT");
        return 2;
    }

    static int run(String[] args) throws Exception {
        PrintStream out = System.out;
        if (args.length >= 3 && args[0].equals("produce")) {
            Kafka k = new Kafka(args[1]);
            Path dir = Path.of(args[2]);
            List<String> which = args.length > 3 ? Arrays.asList(args).subList(3, args.length) : List.of("streams", "connect", "share");
            for (String w : which) {
                switch (w) {
                    case "streams" -> StreamsDlq.run(k, out, dir.resolve("streams-state"));
                    case "connect" -> ConnectDlq.run(k, out, dir.resolve("connect"));
                    case "share" -> ShareDlq.run(k, out);
                    default -> { return usage(); }
                }
            }
            return 0;
        }
        if (args.length == 4 && args[0].equals("check-profiles"))
            return ProfileCheck.run(new Kafka(args[1]), args[2], Integer.parseInt(args[3]), out);
        return usage();
    }

    public static void main(String[] args) {
        int rc;
        try {
            rc = run(args);
        } catch (Exception e) {
            System.err.println("anchor: " + e);
            e.printStackTrace();
            rc = 1;
        }
        System.out.flush();
        /* Connect's and Streams' non-daemon threads must not keep the JVM */
        Runtime.getRuntime().halt(rc);
    }
}
