/*
 * ConnectDlq.java — Kafka Connect standalone writes its own dead letters.
 *
 * The worker runs in this JVM (ConnectStandalone.startConnect, the code
 * connect-standalone.sh runs; its REST server on a free 127.0.0.1 port,
 * offsets in a file of the scratch dir) with JsonConverter (schemas off)
 * for values. The sink connector RefusingSinkConnector runs with
 * errors.tolerance=all, errors.deadletterqueue.topic.name and
 * errors.deadletterqueue.context.headers.enable=true. Its topic holds four
 * records: two good, one that is not JSON (a converter failure:
 * JsonConverter's DataException, stage VALUE_CONVERTER), one the task
 * refuses through ErrantRecordReporter (stage TASK_PUT). Each dead letter
 * is read back and printed as written, with its source coordinates.
 */
package errgate.anchors;

import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.connect.cli.ConnectStandalone;
import org.apache.kafka.connect.runtime.Connect;
import org.apache.kafka.connect.runtime.standalone.StandaloneHerder;
import org.apache.kafka.connect.util.FutureCallback;

final class ConnectDlq {
    static final String IN = "anchor-connect-in", DLQ = "anchor-connect-dlq", NAME = "errgate-anchor-sink";
    static final long T0 = Main.T0 + 100;

    private ConnectDlq() {}

    static void run(Kafka k, PrintStream out, Path dir) throws Exception {
        k.topic(IN, 1, Map.of());
        k.topic(DLQ, 1, Map.of());
        String[] cases = {"ok", "converter", "task_put", "ok"};
        String[] values = {"{\"id\":1}", "{not json", "{\"id\":2,\"fail\":true}", "{\"id\":3}"};
        List<ProducerRecord<byte[], byte[]>> in = new ArrayList<>();
        for (int i = 0; i < values.length; i++) {
            ProducerRecord<byte[], byte[]> r = new ProducerRecord<>(IN, 0, T0 + i, StreamsDlq.utf8("connect-" + i),
                                                                    StreamsDlq.utf8(values[i]));
            r.headers().add(new RecordHeader("trace-id", StreamsDlq.utf8("connect-" + i)));
            in.add(r);
        }
        List<RecordMetadata> where = k.produce(in);

        Files.createDirectories(dir);
        Map<String, String> worker = new HashMap<>();
        worker.put("bootstrap.servers", k.bootstrap);
        worker.put("key.converter", "org.apache.kafka.connect.storage.StringConverter");
        worker.put("value.converter", "org.apache.kafka.connect.json.JsonConverter");
        worker.put("value.converter.schemas.enable", "false");
        worker.put("offset.storage.file.filename", dir.resolve("connect.offsets").toString());
        worker.put("offset.flush.interval.ms", "1000");
        worker.put("listeners", "http://127.0.0.1:0");
        worker.put("plugin.discovery", "service_load");
        Map<String, String> conn = new HashMap<>();
        conn.put("name", NAME);
        conn.put("connector.class", RefusingSinkConnector.class.getName());
        conn.put("tasks.max", "1");
        conn.put("topics", IN);
        conn.put("errors.tolerance", "all");
        conn.put("errors.deadletterqueue.topic.name", DLQ);
        conn.put("errors.deadletterqueue.topic.replication.factor", "1");
        conn.put("errors.deadletterqueue.context.headers.enable", "true");
        conn.put("consumer.override.auto.offset.reset", "earliest");

        Connect<StandaloneHerder> connect = new ConnectStandalone().startConnect(worker);
        List<ConsumerRecord<byte[], byte[]>> dlq;
        try {
            FutureCallback<Object> created = new FutureCallback<>();
            connect.herder().putConnectorConfig(NAME, conn, false, (e, r) -> created.onCompletion(e, r));
            created.get(60, TimeUnit.SECONDS);
            dlq = k.read(DLQ, 2, 120);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (RefusingSinkConnector.ACCEPTED.size() < 2 && System.nanoTime() < deadline) Thread.sleep(50);
        } finally {
            connect.stop();
            connect.awaitStop();
        }
        if (RefusingSinkConnector.ACCEPTED.size() != 2)
            throw new IllegalStateException("connect: the sink accepted " + RefusingSinkConnector.ACCEPTED);
        if (dlq.size() != 2) throw new IllegalStateException("connect: " + dlq.size() + " of 2 dead letters in " + DLQ);
        for (ConsumerRecord<byte[], byte[]> r : dlq) {
            int i = -1;
            for (int j = 0; j < values.length; j++)
                if (Arrays.equals(r.value(), values[j].getBytes(StandardCharsets.UTF_8))) i = j;
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("anchor", "connect");
            m.put("case", i < 0 ? "unknown" : cases[i]);
            if (i >= 0) m.put("source", Main.source(where.get(i), T0 + i, in.get(i).key(), in.get(i).value()));
            m.put("dlq", Out.record(r));
            Out.line(out, m);
        }
    }
}
