/*
 * StreamsDlq.java — Kafka Streams writes its own dead letters (KIP-1034).
 *
 * A one-partition topic holds four records with fixed timestamps and a
 * trace-id header: two good ones, one whose value is not the 4 bytes
 * Serdes.Integer() reads (a deserialization failure: IntegerDeserializer's
 * SerializationException), and one the processor refuses (a processing
 * failure: IllegalArgumentException thrown in mapValues). The application
 * runs with errors.dead.letter.queue.topic.name and Kafka's own
 * LogAndContinueExceptionHandler and LogAndContinueProcessingExceptionHandler
 * (the LogAndFail defaults write the same dead letter, then stop the
 * thread), so both failures go to the DLQ and the good records to the
 * output. Each dead letter is read back and printed as written, with the
 * coordinates of the record it came from.
 */
package errgate.anchors;

import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.errors.LogAndContinueExceptionHandler;
import org.apache.kafka.streams.errors.LogAndContinueProcessingExceptionHandler;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Produced;

final class StreamsDlq {
    static final String IN = "anchor-streams-in", OUT = "anchor-streams-out", DLQ = "anchor-streams-dlq";
    /* the input records' CreateTime, T0 + index: an hour before the run, on a whole second (inside the
     * broker's retention, apart from any time a dead letter is written at) */
    static final long T0 = Main.T0;
    static final String REFUSED = "value 13 is refused by the processor";

    private StreamsDlq() {}

    static byte[] utf8(String s) { return s.getBytes(StandardCharsets.UTF_8); }

    static byte[] int32(int v) { return ByteBuffer.allocate(4).putInt(v).array(); }

    static void run(Kafka k, PrintStream out, Path state) throws Exception {
        k.topic(IN, 1, Map.of());
        k.topic(OUT, 1, Map.of());
        k.topic(DLQ, 1, Map.of());
        String[] cases = {"ok", "deserialization", "processing", "ok"};
        byte[][] keys = {utf8("ok-1"), utf8("bad-bytes"), utf8("refused"), utf8("ok-2")};
        byte[][] values = {int32(1), utf8("abc"), int32(13), int32(2)};
        List<ProducerRecord<byte[], byte[]>> in = new ArrayList<>();
        for (int i = 0; i < keys.length; i++) {
            ProducerRecord<byte[], byte[]> r = new ProducerRecord<>(IN, 0, T0 + i, keys[i], values[i]);
            r.headers().add(new RecordHeader("trace-id", utf8("streams-" + i)));
            in.add(r);
        }
        List<RecordMetadata> where = k.produce(in);

        Properties p = new Properties();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, "errgate-anchor-streams");
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, k.bootstrap);
        p.put(StreamsConfig.STATE_DIR_CONFIG, Files.createDirectories(state).toString());
        p.put(StreamsConfig.ERRORS_DEAD_LETTER_QUEUE_TOPIC_NAME_CONFIG, DLQ);
        p.put(StreamsConfig.DESERIALIZATION_EXCEPTION_HANDLER_CLASS_CONFIG, LogAndContinueExceptionHandler.class);
        p.put(StreamsConfig.PROCESSING_EXCEPTION_HANDLER_CLASS_CONFIG, LogAndContinueProcessingExceptionHandler.class);
        p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 100);
        p.put(StreamsConfig.consumerPrefix("auto.offset.reset"), "earliest");
        StreamsBuilder b = new StreamsBuilder();
        b.stream(IN, Consumed.with(Serdes.String(), Serdes.Integer()))
            .mapValues(v -> {
                if (v == 13) throw new IllegalArgumentException(REFUSED);
                return v * 10;
            })
            .to(OUT, Produced.with(Serdes.String(), Serdes.Integer()));
        List<ConsumerRecord<byte[], byte[]>> dlq, done;
        try (KafkaStreams app = new KafkaStreams(b.build(), p)) {
            app.start();
            done = k.read(OUT, 2, 120);
            dlq = k.read(DLQ, 2, 60);
            app.close(java.time.Duration.ofSeconds(30));
        }
        if (done.size() != 2) throw new IllegalStateException("streams: " + done.size() + " of 2 good records reached " + OUT);
        if (dlq.size() != 2) throw new IllegalStateException("streams: " + dlq.size() + " of 2 dead letters in " + DLQ);
        for (ConsumerRecord<byte[], byte[]> r : dlq) {
            int i = java.util.Arrays.equals(r.key(), keys[1]) ? 1 : java.util.Arrays.equals(r.key(), keys[2]) ? 2 : -1;
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("anchor", "streams");
            m.put("case", i < 0 ? "unknown" : cases[i]);
            if (i >= 0) m.put("source", Main.source(where.get(i), T0 + i, keys[i], values[i]));
            m.put("dlq", Out.record(r));
            Out.line(out, m);
        }
    }
}
