/*
 * Kafka.java — the few client steps every scenario shares, with Kafka's own
 * clients: create topics (with configs), produce records at fixed
 * timestamps and return where they landed, and read a topic from its start
 * until a count of records or a deadline. Every wait is bounded.
 */
package errgate.anchors;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

final class Kafka {
    final String bootstrap;

    Kafka(String bootstrap) { this.bootstrap = bootstrap; }

    Admin admin() {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        return Admin.create(p);
    }

    /** Creates topic name with n partitions, replication 1 and configs (an existing one is kept). */
    void topic(String name, int n, Map<String, String> configs) throws Exception {
        try (Admin a = admin()) {
            a.createTopics(List.of(new NewTopic(name, n, (short) 1).configs(configs))).all().get(60, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            if (!(e.getCause() instanceof TopicExistsException)) throw e;
        }
    }

    /** Produces each record (acks=all) and returns where each landed, in order. */
    List<RecordMetadata> produce(Collection<ProducerRecord<byte[], byte[]>> records) throws Exception {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
        List<RecordMetadata> out = new ArrayList<>();
        try (KafkaProducer<byte[], byte[]> pr = new KafkaProducer<>(p)) {
            for (ProducerRecord<byte[], byte[]> r : records) out.add(pr.send(r).get(60, TimeUnit.SECONDS));
        }
        return out;
    }

    /** Every record of topic's partitions from the start, until `want` were read or `seconds` passed. */
    List<ConsumerRecord<byte[], byte[]>> read(String topic, int want, int seconds) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        List<ConsumerRecord<byte[], byte[]>> out = new ArrayList<>();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(p)) {
            List<TopicPartition> tps = new ArrayList<>();
            while (tps.isEmpty() && System.nanoTime() < deadline) {
                c.partitionsFor(topic, Duration.ofSeconds(10)).forEach(i -> tps.add(new TopicPartition(topic, i.partition())));
            }
            c.assign(tps);
            c.seekToBeginning(tps);
            while (out.size() < want && System.nanoTime() < deadline)
                c.poll(Duration.ofMillis(200)).forEach(out::add);
        }
        return out;
    }
}
