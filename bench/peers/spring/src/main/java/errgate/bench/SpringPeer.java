/*
 * SpringPeer — the Spring Kafka peer of errgate's benchmark (bench/README.md).
 *
 * What a team running Spring Kafka writes instead of errgate, one mode per run,
 * each a ConcurrentMessageListenerContainer built in code (no Spring Boot: the
 * same objects Boot's auto-configuration would make) consuming records as
 * byte[] in a fresh consumer group from the earliest offset, committing with
 * the container's default AckMode.BATCH:
 *
 *   happy  a record listener that does nothing (container concurrency 1, the
 *          Spring default: one consumer, like errgate's and kcat's rows);
 *   dlq    a record listener that throws for every record, handled by a
 *          DefaultErrorHandler with no retries (FixedBackOff(0, 0)) whose
 *          recoverer is a DeadLetterPublishingRecoverer writing to DLT, same
 *          partition, through a KafkaTemplate on an idempotent acks=all
 *          producer (the recoverer waits for each send's result, its default);
 *          container concurrency C, one consumer thread per partition. The
 *          handler does not seek after an error (setSeekAfterError(false):
 *          the rest of the poll is handed to the listener again from memory);
 *          Spring's default seeks every partition back after each failure and
 *          fetches the rest again, one fetch per dead letter: 2 to 10 times
 *          slower on a real broker (bench/README.md), so the peer is measured
 *          at its better setting; -Derrgate.bench.seekAfterError=true
 *          measures the default;
 *   http   a record listener POSTing the record's value to URL with the JDK's
 *          java.net.http.HttpClient (HTTP/1.1, keep-alive pool, 5 s timeout)
 *          and throwing on a non-2xx answer (the default error handler
 *          retries); container concurrency C = one consumer thread per
 *          partition, each waiting for its request, so C requests are in
 *          flight, in partition order, as errgate's partition ordering does.
 *
 * Usage: java -cp ... errgate.bench.SpringPeer MODE BOOTSTRAP GROUP TOPIC N
 *            CONCURRENCY [DLT | URL]
 * It stops once N records are done (happy: the listener returned; dlq: the
 * DLT write was acknowledged, seen by a RetryListener's recovered callback;
 * http: a 2xx came back), stops the container (which commits) and prints:
 *   peer records=N first_ns=T0 last_ns=T1
 * T0 when the listener first saw a record, T1 when the N-th was done
 * (CLOCK_REALTIME ns): the JVM's start-up and the group join are left out,
 * as errgate's summary leaves out its own. Exit 1 when N records are not
 * done within DEADLINE_S seconds of the start, 2 on usage.
 */
package errgate.bench;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.springframework.kafka.core.DefaultKafkaConsumerFactory;
import org.springframework.kafka.core.DefaultKafkaProducerFactory;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.kafka.listener.ConcurrentMessageListenerContainer;
import org.springframework.kafka.listener.ContainerProperties;
import org.springframework.kafka.listener.DeadLetterPublishingRecoverer;
import org.springframework.kafka.listener.DefaultErrorHandler;
import org.springframework.kafka.listener.MessageListener;
import org.springframework.kafka.listener.RetryListener;
import org.springframework.util.backoff.FixedBackOff;

public final class SpringPeer {
    private static final long DEADLINE_S = 900;

    private final long n;
    private final AtomicLong done = new AtomicLong();
    private final AtomicLong firstNs = new AtomicLong();
    private volatile long lastNs;
    private final CountDownLatch finished = new CountDownLatch(1);

    private SpringPeer(long n) {
        this.n = n;
    }

    /** Wall-clock nanoseconds (CLOCK_REALTIME, as errgate's and stamp's). */
    private static long nowNs() {
        Instant t = Instant.now();
        return t.getEpochSecond() * 1_000_000_000L + t.getNano();
    }

    /** Called when the listener first sees a record: starts the window once. */
    private void seen() {
        if (firstNs.get() == 0) firstNs.compareAndSet(0, nowNs());
    }

    /** One record done; the N-th ends the window. */
    private void oneDone() {
        if (done.incrementAndGet() == n) {
            lastNs = nowNs();
            finished.countDown();
        }
    }

    private static Map<String, Object> consumerProps(String bootstrap, String group) {
        Map<String, Object> p = new HashMap<>();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        return p;
    }

    private static Map<String, Object> producerProps(String bootstrap) {
        Map<String, Object> p = new HashMap<>();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
        return p;
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 6 || (!args[0].equals("happy") && args.length < 7)) {
            System.err.println("usage: SpringPeer happy|dlq|http BOOTSTRAP GROUP TOPIC N CONCURRENCY [DLT|URL]");
            System.exit(2);
        }
        String mode = args[0], bootstrap = args[1], group = args[2], topic = args[3];
        long n = Long.parseLong(args[4]);
        int concurrency = Integer.parseInt(args[5]);
        SpringPeer peer = new SpringPeer(n);

        DefaultKafkaConsumerFactory<byte[], byte[]> cf = new DefaultKafkaConsumerFactory<>(
                consumerProps(bootstrap, group), new ByteArrayDeserializer(), new ByteArrayDeserializer());
        ContainerProperties props = new ContainerProperties(topic);
        DefaultKafkaProducerFactory<byte[], byte[]> pf = null;
        DefaultErrorHandler handler;

        switch (mode) {
            case "happy" -> {
                props.setMessageListener((MessageListener<byte[], byte[]>) r -> {
                    peer.seen();
                    peer.oneDone();
                });
                handler = new DefaultErrorHandler();
            }
            case "dlq" -> {
                String dlt = args[6];
                pf = new DefaultKafkaProducerFactory<>(producerProps(bootstrap), new ByteArraySerializer(),
                        new ByteArraySerializer());
                KafkaTemplate<byte[], byte[]> template = new KafkaTemplate<>(pf);
                DeadLetterPublishingRecoverer recoverer = new DeadLetterPublishingRecoverer(template,
                        (r, e) -> new TopicPartition(dlt, r.partition()));
                handler = new DefaultErrorHandler(recoverer, new FixedBackOff(0L, 0L));
                handler.setSeekAfterError(Boolean.getBoolean("errgate.bench.seekAfterError"));
                handler.setRetryListeners(new RetryListener() {
                    @Override
                    public void failedDelivery(ConsumerRecord<?, ?> r, Exception e, int attempt) {
                    }

                    @Override
                    public void recovered(ConsumerRecord<?, ?> r, Exception e) {
                        peer.oneDone();
                    }
                });
                props.setMessageListener((MessageListener<byte[], byte[]>) r -> {
                    peer.seen();
                    throw new IllegalStateException("bench: permanent");
                });
            }
            case "http" -> {
                URI url = URI.create(args[6]);
                HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
                        .connectTimeout(Duration.ofSeconds(5)).build();
                props.setMessageListener((MessageListener<byte[], byte[]>) r -> {
                    peer.seen();
                    HttpRequest req = HttpRequest.newBuilder(url).timeout(Duration.ofSeconds(5))
                            .header("Content-Type", "application/json")
                            .POST(HttpRequest.BodyPublishers.ofByteArray(r.value() == null ? new byte[0] : r.value()))
                            .build();
                    HttpResponse<Void> resp;
                    try {
                        resp = client.send(req, HttpResponse.BodyHandlers.discarding());
                    } catch (java.io.IOException e) {
                        throw new IllegalStateException("bench: " + e, e);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        throw new IllegalStateException("bench: interrupted", e);
                    }
                    if (resp.statusCode() / 100 != 2) throw new IllegalStateException("bench: HTTP " + resp.statusCode());
                    peer.oneDone();
                });
                handler = new DefaultErrorHandler();
            }
            default -> {
                System.err.println("SpringPeer: unknown mode '" + mode + "'");
                System.exit(2);
                return;
            }
        }

        ConcurrentMessageListenerContainer<byte[], byte[]> container = new ConcurrentMessageListenerContainer<>(cf, props);
        container.setBeanName("bench-" + mode);
        container.setConcurrency(concurrency);
        container.setCommonErrorHandler(handler);
        container.start();
        boolean ok = peer.finished.await(DEADLINE_S, TimeUnit.SECONDS);
        container.stop();
        if (pf != null) pf.destroy();
        if (!ok) {
            System.err.println("SpringPeer: " + peer.done.get() + " of " + n + " records done within " + DEADLINE_S + " s");
            System.exit(1);
        }
        System.out.println("peer records=" + n + " first_ns=" + peer.firstNs.get() + " last_ns=" + peer.lastNs);
        System.out.flush();
        System.exit(0);
    }
}
