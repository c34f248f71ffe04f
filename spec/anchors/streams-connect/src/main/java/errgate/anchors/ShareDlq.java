/*
 * ShareDlq.java — a share group's dead letters, written by the broker
 * (KIP-1191, in Apache Kafka 4.4.0: ShareGroupDLQStateManager).
 *
 * The DLQ topic carries errors.deadletterqueue.group.enable=true and, as the
 * broker requires by default, the prefix "dlq."; the group's configs name it
 * (errors.deadletterqueue.topic.name) with errors.deadletterqueue.copy.record.enable=true
 * (key and value copied; without it the dead letter holds only the
 * headers) and share.delivery.count.limit=2. A KafkaShareConsumer in
 * explicit acknowledgement mode accepts the good records, rejects one
 * (archived at its first delivery) and releases another until the limit
 * archives it. The broker writes a dead letter for each; they are read back
 * and printed as written, with their source coordinates.
 */
package errgate.anchors;

import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

final class ShareDlq {
    static final String IN = "anchor-share-in", DLQ = "dlq.anchor-share", GROUP = "errgate-anchor-share";
    static final long T0 = Main.T0 + 200;

    private ShareDlq() {}

    static void run(Kafka k, PrintStream out) throws Exception {
        k.topic(IN, 1, Map.of());
        k.topic(DLQ, 1, Map.of("errors.deadletterqueue.group.enable", "true"));
        try (Admin a = k.admin()) {
            ConfigResource g = new ConfigResource(ConfigResource.Type.GROUP, GROUP);
            List<AlterConfigOp> ops = new ArrayList<>();
            for (String[] kv : new String[][] {{"errors.deadletterqueue.topic.name", DLQ},
                                               {"errors.deadletterqueue.copy.record.enable", "true"},
                                               {"share.delivery.count.limit", "2"},
                                               {"share.auto.offset.reset", "earliest"}})
                ops.add(new AlterConfigOp(new ConfigEntry(kv[0], kv[1]), AlterConfigOp.OpType.SET));
            a.incrementalAlterConfigs(Map.of(g, ops)).all().get(60, TimeUnit.SECONDS);
        }
        String[] cases = {"ok", "rejected", "released", "ok"};
        List<ProducerRecord<byte[], byte[]>> in = new ArrayList<>();
        for (int i = 0; i < cases.length; i++) {
            ProducerRecord<byte[], byte[]> r = new ProducerRecord<>(IN, 0, T0 + i, StreamsDlq.utf8("share-" + i),
                                                                    StreamsDlq.utf8("{\"case\":\"" + cases[i] + "\"}"));
            r.headers().add(new RecordHeader("trace-id", StreamsDlq.utf8("share-" + i)));
            in.add(r);
        }
        List<RecordMetadata> where = k.produce(in);

        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, k.bootstrap);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, GROUP);
        p.put(ConsumerConfig.SHARE_ACKNOWLEDGEMENT_MODE_CONFIG, "explicit");
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
        int accepted = 0;
        List<ConsumerRecord<byte[], byte[]>> dlq = new ArrayList<>();
        try (KafkaShareConsumer<byte[], byte[]> c = new KafkaShareConsumer<>(p)) {
            c.subscribe(List.of(IN));
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
            while (System.nanoTime() < deadline && dlq.size() < 2) {
                for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(500))) {
                    String v = new String(r.value(), java.nio.charset.StandardCharsets.UTF_8);
                    if (v.contains("rejected")) c.acknowledge(r, AcknowledgeType.REJECT);
                    else if (v.contains("released")) c.acknowledge(r, AcknowledgeType.RELEASE);
                    else {
                        c.acknowledge(r, AcknowledgeType.ACCEPT);
                        accepted++;
                    }
                }
                c.commitSync(Duration.ofSeconds(30));
                if (accepted >= 2) dlq = k.read(DLQ, 2, 1);
            }
        }
        if (dlq.size() < 2) dlq = k.read(DLQ, 2, 30);
        if (accepted != 2) throw new IllegalStateException("share group: " + accepted + " of 2 good records accepted");
        if (dlq.size() != 2) throw new IllegalStateException("share group: " + dlq.size() + " of 2 dead letters in " + DLQ);
        for (ConsumerRecord<byte[], byte[]> r : dlq) {
            int i = -1;
            for (int j = 0; j < in.size(); j++)
                if (Arrays.equals(r.key(), in.get(j).key())) i = j;
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("anchor", "share-group");
            m.put("case", i < 0 ? "unknown" : cases[i]);
            if (i >= 0) m.put("source", Main.source(where.get(i), T0 + i, in.get(i).key(), in.get(i).value()));
            m.put("dlq", Out.record(r));
            Out.line(out, m);
        }
    }
}
