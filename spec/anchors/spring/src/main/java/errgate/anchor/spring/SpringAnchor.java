/*
 * SpringAnchor — Spring Kafka's own code writing dead letters for errgate to
 * read, and reading errgate's `spring` profile lane records the way a Spring
 * application does (spec/anchors/README.md). One JVM per mode; every mode
 * ends within --deadline-ms or exits 1 saying what it was waiting for.
 *
 *   produce-dlt    --bootstrap B --topic T --group G --expect N
 *       A listener container (ConcurrentMessageListenerContainer, one
 *       consumer) reads T from the start. Keys and values go through
 *       ErrorHandlingDeserializer around a String deserializer that refuses
 *       keys starting "badkey" and values starting "badvalue" (a
 *       SerializationException with a cause). The listener throws, for a
 *       value starting "fail-cause", an IllegalStateException caused by an
 *       IllegalArgumentException, and for "fail-timeout" Kafka's (unchecked)
 *       TimeoutException; anything else succeeds. DefaultErrorHandler with
 *       FixedBackOff(0, 1) (one redelivery) and DeadLetterPublishingRecoverer
 *       with its default destination T-dlt, same partition. Once T-dlt holds
 *       N records, every one is printed.
 *   produce-retry  --bootstrap B --topic T --group G --expect N
 *       Non-blocking retries: an annotation-configured ApplicationContext
 *       (@EnableKafka, RetryTopicConfigurationSupport) with a @KafkaListener
 *       on T and a RetryTopicConfiguration (fixed 200 ms back-off, 3
 *       attempts: T-retry, then T-dlt). The listener throws for values
 *       starting "fail" (IllegalStateException caused by an
 *       IllegalArgumentException), counting its calls. Once T-dlt holds N
 *       records, every record of T-retry and T-dlt is printed.
 *   read-errgate   --bootstrap B --topic L[,L2...] --group G --expect N[,N2...]
 *       A listener container reads each topic L (N records) as byte[] and
 *       converts every ConsumerRecord with Spring's MessagingMessageConverter
 *       (what a @DltHandler method's @Header arguments are resolved from);
 *       each is printed with the DLT headers read by their KafkaHeaders
 *       names in Spring's types (partition a 4-byte int, offset and
 *       timestamp 8-byte longs, strings UTF-8), or the reason one does not
 *       read. Then each record is handed to DeadLetterPublishingRecoverer
 *       twice, as a DLT consumer that failed again: its defaults (into
 *       L-dlt) and setAppendOriginalHeaders(false) (into L-dlt-first); the
 *       republished records are read back and printed with their header
 *       counts.
 *
 * Output: JSON lines on stdout, one per record: {"kind": "dead-letter" |
 * "retry" | "read" | "republished", "topic", "partition", "offset",
 * "timestamp", "key", "value" (UTF-8, or null), "headers": [[name, hex]...],
 * "counts": {name: n}, "spring": {...the DLT/retry headers decoded...}} and
 * for produce modes one {"kind": "calls", ...} line with the listener's
 * calls per source offset. Diagnostics go to stderr.
 */
package errgate.anchor.spring;

import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.SerializationException;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.Serializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.springframework.context.annotation.AnnotationConfigApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.kafka.annotation.EnableKafka;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.config.ConcurrentKafkaListenerContainerFactory;
import org.springframework.kafka.core.ConsumerFactory;
import org.springframework.kafka.core.DefaultKafkaConsumerFactory;
import org.springframework.kafka.core.DefaultKafkaProducerFactory;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.kafka.listener.ConcurrentMessageListenerContainer;
import org.springframework.kafka.listener.ContainerProperties;
import org.springframework.kafka.listener.DeadLetterPublishingRecoverer;
import org.springframework.kafka.listener.DefaultErrorHandler;
import org.springframework.kafka.listener.KafkaMessageListenerContainer;
import org.springframework.kafka.listener.ListenerExecutionFailedException;
import org.springframework.kafka.listener.MessageListener;
import org.springframework.kafka.retrytopic.RetryTopicConfiguration;
import org.springframework.kafka.retrytopic.RetryTopicConfigurationBuilder;
import org.springframework.kafka.retrytopic.RetryTopicConfigurationSupport;
import org.springframework.kafka.retrytopic.RetryTopicHeaders;
import org.springframework.kafka.support.KafkaHeaders;
import org.springframework.kafka.support.converter.MessagingMessageConverter;
import org.springframework.kafka.support.serializer.DelegatingByTypeSerializer;
import org.springframework.kafka.support.serializer.ErrorHandlingDeserializer;
import org.springframework.messaging.Message;
import org.springframework.messaging.MessageHeaders;
import org.springframework.scheduling.concurrent.ThreadPoolTaskScheduler;
import org.springframework.util.backoff.FixedBackOff;

public final class SpringAnchor {

    private SpringAnchor() {
    }

    // ---------------------------------------------------------------- args

    static final class Args {
        String mode, bootstrap, topic, group = "spring-anchor";
        String expect = "1";
        long deadlineMs = 90_000;
    }

    static Args parse(String[] argv) {
        if (argv.length < 1) {
            usage("a mode is needed");
        }
        Args a = new Args();
        a.mode = argv[0];
        for (int i = 1; i < argv.length; i += 2) {
            if (i + 1 >= argv.length) {
                usage(argv[i] + " needs a value");
            }
            String v = argv[i + 1];
            switch (argv[i]) {
                case "--bootstrap" -> a.bootstrap = v;
                case "--topic" -> a.topic = v;
                case "--group" -> a.group = v;
                case "--expect" -> a.expect = v;
                case "--deadline-ms" -> a.deadlineMs = Long.parseLong(v);
                default -> usage("unknown option " + argv[i]);
            }
        }
        if (a.bootstrap == null || a.topic == null) {
            usage("--bootstrap and --topic are needed");
        }
        return a;
    }

    static void usage(String why) {
        System.err.println("spring-anchor: " + why);
        System.err.println("usage: SpringAnchor produce-dlt|produce-retry|read-errgate --bootstrap B --topic T"
                + " [--group G] [--expect N] [--deadline-ms MS]");
        System.exit(2);
    }

    public static void main(String[] argv) throws Exception {
        Args a = parse(argv);
        int rc;
        switch (a.mode) {
            case "produce-dlt" -> rc = produceDlt(a);
            case "produce-retry" -> rc = produceRetry(a);
            case "read-errgate" -> rc = readErrgate(a);
            default -> {
                usage("unknown mode " + a.mode);
                rc = 2;
            }
        }
        System.out.flush();
        // kafka-clients' and Spring's non-daemon threads are stopped; exit at once
        Runtime.getRuntime().halt(rc);
    }

    // ------------------------------------------------------------ factories

    static Map<String, Object> consumerProps(Args a, String group) {
        Map<String, Object> p = new HashMap<>();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, a.bootstrap);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        p.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, 6000);
        p.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, 500);
        return p;
    }

    /** A template that writes byte[] (a deserialization failure's raw data) and String alike. */
    static KafkaTemplate<Object, Object> template(Args a) {
        Map<String, Object> p = new HashMap<>();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, a.bootstrap);
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        Map<Class<?>, Serializer<?>> by = new LinkedHashMap<>();
        by.put(byte[].class, new ByteArraySerializer());
        by.put(String.class, new StringSerializer());
        DelegatingByTypeSerializer keys = new DelegatingByTypeSerializer(by);
        DelegatingByTypeSerializer values = new DelegatingByTypeSerializer(by);
        return new KafkaTemplate<>(new DefaultKafkaProducerFactory<Object, Object>(p, keys, values));
    }

    /** A String deserializer that refuses data starting with `refuse` (a deserialization failure with a cause). */
    public static final class Strict extends StringDeserializer {
        private final String refuse;

        public Strict(String refuse) {
            this.refuse = refuse;
        }

        @Override
        public String deserialize(String topic, byte[] data) {
            String s = super.deserialize(topic, data);
            if (s != null && s.startsWith(this.refuse)) {
                throw new SerializationException("cannot read '" + s + "' from " + topic,
                        new NumberFormatException("For input string: \"" + s + "\""));
            }
            return s;
        }
    }

    // ----------------------------------------------------------- produce-dlt

    static int produceDlt(Args a) throws Exception {
        int expect = Integer.parseInt(a.expect);
        Map<String, Object> p = consumerProps(a, a.group);
        ErrorHandlingDeserializer<String> keys = new ErrorHandlingDeserializer<>(new Strict("badkey"));
        ErrorHandlingDeserializer<String> values = new ErrorHandlingDeserializer<>(new Strict("badvalue"));
        ConsumerFactory<String, String> cf = new DefaultKafkaConsumerFactory<>(p, keys, values);
        ContainerProperties props = new ContainerProperties(a.topic);
        Calls calls = new Calls();
        props.setMessageListener((MessageListener<String, String>) r -> {
            calls.add(r);
            String v = r.value() == null ? "" : r.value();
            if (v.startsWith("fail-cause")) {
                throw new IllegalStateException("order " + r.key() + " rejected",
                        new IllegalArgumentException("amount must be positive"));
            }
            if (v.startsWith("fail-timeout")) {
                throw new TimeoutException("inventory service did not answer in 30000 ms");
            }
        });
        ConcurrentMessageListenerContainer<String, String> c = new ConcurrentMessageListenerContainer<>(cf, props);
        c.setConcurrency(1);
        KafkaTemplate<Object, Object> t = template(a);
        DeadLetterPublishingRecoverer dlpr = new DeadLetterPublishingRecoverer(t);
        c.setCommonErrorHandler(new DefaultErrorHandler(dlpr, new FixedBackOff(0L, 1L)));
        c.start();
        List<ConsumerRecord<byte[], byte[]>> dlt;
        try {
            dlt = readAll(a, List.of(a.topic + "-dlt"), List.of(expect));
        } finally {
            c.stop();
            t.destroy();
        }
        if (dlt == null) {
            return 1;
        }
        for (ConsumerRecord<byte[], byte[]> r : dlt) {
            System.out.println(recordJson("dead-letter", r, springFields(r.headers())));
        }
        System.out.println(calls.json());
        return 0;
    }

    /** The listener's calls per source record. */
    static final class Calls {
        final Map<String, AtomicInteger> n = new ConcurrentHashMap<>();

        void add(ConsumerRecord<?, ?> r) {
            n.computeIfAbsent(r.topic() + "/" + r.partition() + "/" + r.offset(), k -> new AtomicInteger())
                    .incrementAndGet();
        }

        String json() {
            StringBuilder b = new StringBuilder("{\"kind\":\"calls\",\"calls\":{");
            int i = 0;
            for (Map.Entry<String, AtomicInteger> e : new java.util.TreeMap<>(this.n).entrySet()) {
                if (i++ > 0) {
                    b.append(',');
                }
                b.append(str(e.getKey())).append(':').append(e.getValue().get());
            }
            return b.append("}}").toString();
        }
    }

    // --------------------------------------------------------- produce-retry

    /** The non-blocking retry application: its listener and beans. */
    @Configuration
    @EnableKafka
    public static class RetryApp extends RetryTopicConfigurationSupport {
        static Args args;
        static final Calls CALLS = new Calls();

        @Bean
        public ConsumerFactory<String, String> consumerFactory() {
            return new DefaultKafkaConsumerFactory<>(consumerProps(args, args.group), new StringDeserializer(),
                    new StringDeserializer());
        }

        @Bean
        public ConcurrentKafkaListenerContainerFactory<String, String> kafkaListenerContainerFactory(
                ConsumerFactory<String, String> cf) {
            ConcurrentKafkaListenerContainerFactory<String, String> f = new ConcurrentKafkaListenerContainerFactory<>();
            f.setConsumerFactory(cf);
            return f;
        }

        @Bean
        public KafkaTemplate<Object, Object> retryTemplate() {
            return template(args);
        }

        @Bean
        public RetryTopicConfiguration retryTopics(KafkaTemplate<Object, Object> retryTemplate) {
            return RetryTopicConfigurationBuilder.newInstance()
                    .fixedBackOff(200)
                    .maxAttempts(3)
                    .autoCreateTopics(false, 1, (short) 1)
                    .includeTopic(args.topic)
                    .create(retryTemplate);
        }

        /** Retry topics pause partitions until their back-off timestamps: a scheduler resumes them. */
        @Bean
        public ThreadPoolTaskScheduler taskScheduler() {
            ThreadPoolTaskScheduler s = new ThreadPoolTaskScheduler();
            s.setPoolSize(1);
            return s;
        }

        @Bean
        public Listener listener() {
            return new Listener();
        }
    }

    public static class Listener {
        @KafkaListener(id = "spring-anchor-retry", topics = "#{systemProperties['errgate.anchor.topic']}")
        public void onRecord(ConsumerRecord<String, String> r) {
            RetryApp.CALLS.add(r);
            String v = r.value() == null ? "" : r.value();
            if (v.startsWith("fail")) {
                throw new IllegalStateException("payment for " + r.key() + " declined",
                        new IllegalArgumentException("card expired"));
            }
        }
    }

    static int produceRetry(Args a) throws Exception {
        int expect = Integer.parseInt(a.expect);
        RetryApp.args = a;
        System.setProperty("errgate.anchor.topic", a.topic);
        AnnotationConfigApplicationContext ctx = new AnnotationConfigApplicationContext(RetryApp.class);
        List<ConsumerRecord<byte[], byte[]>> dlt;
        try {
            dlt = readAll(a, List.of(a.topic + "-dlt"), List.of(expect));
            if (dlt == null) {
                return 1;
            }
        } finally {
            ctx.close();
        }
        // every copy on the retry topic: read to its end
        List<ConsumerRecord<byte[], byte[]>> retry = readToEnd(a, a.topic + "-retry");
        if (retry == null) {
            return 1;
        }
        for (ConsumerRecord<byte[], byte[]> r : retry) {
            System.out.println(recordJson("retry", r, springFields(r.headers())));
        }
        for (ConsumerRecord<byte[], byte[]> r : dlt) {
            System.out.println(recordJson("dead-letter", r, springFields(r.headers())));
        }
        System.out.println(RetryApp.CALLS.json());
        return 0;
    }

    // ---------------------------------------------------------- read-errgate

    static int readErrgate(Args a) throws Exception {
        String[] topics = a.topic.split(",");
        String[] counts = a.expect.split(",");
        if (topics.length != counts.length) {
            usage("--topic and --expect need as many entries");
        }
        Map<String, Integer> want = new LinkedHashMap<>();
        for (int i = 0; i < topics.length; i++) {
            want.put(topics[i], Integer.parseInt(counts[i]));
        }
        Map<String, Object> p = consumerProps(a, a.group);
        ConsumerFactory<byte[], byte[]> cf = new DefaultKafkaConsumerFactory<>(p, new ByteArrayDeserializer(),
                new ByteArrayDeserializer());
        ContainerProperties props = new ContainerProperties(topics);
        List<ConsumerRecord<byte[], byte[]>> got = java.util.Collections.synchronizedList(new ArrayList<>());
        MessagingMessageConverter converter = new MessagingMessageConverter();
        List<String> lines = java.util.Collections.synchronizedList(new ArrayList<>());
        props.setMessageListener((MessageListener<byte[], byte[]>) r -> {
            got.add(r);
            // what a @DltHandler's @Header(KafkaHeaders.DLT_...) arguments are resolved from
            Message<?> m = converter.toMessage(r, null, null, byte[].class);
            lines.add(recordJson("read", r, dltHandlerFields(m.getHeaders())));
        });
        KafkaMessageListenerContainer<byte[], byte[]> c = new KafkaMessageListenerContainer<>(cf, props);
        c.start();
        long deadline = System.currentTimeMillis() + a.deadlineMs;
        try {
            while (!enough(got, want)) {
                if (System.currentTimeMillis() > deadline) {
                    System.err.println("spring-anchor: read " + got.size() + " records of " + want + " before the deadline");
                    return 1;
                }
                Thread.sleep(50);
            }
        } finally {
            c.stop();
        }
        for (String l : lines) {
            System.out.println(l);
        }
        // the DLT consumer fails again: Spring's recoverer republishes each record
        KafkaTemplate<Object, Object> t = template(a);
        DeadLetterPublishingRecoverer appending = new DeadLetterPublishingRecoverer(t,
                (r, e) -> new TopicPartition(r.topic() + "-dlt", -1));
        DeadLetterPublishingRecoverer first = new DeadLetterPublishingRecoverer(t,
                (r, e) -> new TopicPartition(r.topic() + "-dlt-first", -1));
        first.setAppendOriginalHeaders(false);
        first.setFailIfSendResultIsError(true);
        appending.setFailIfSendResultIsError(true);
        List<ConsumerRecord<byte[], byte[]>> snapshot;
        synchronized (got) {
            snapshot = new ArrayList<>(got);
        }
        for (ConsumerRecord<byte[], byte[]> r : snapshot) {
            Exception again = new ListenerExecutionFailedException("DLT handler failed", a.group,
                    new IllegalStateException("still failing after triage"));
            appending.accept(r, again);
            first.accept(r, again);
        }
        t.flush();
        List<String> outTopics = new ArrayList<>();
        List<Integer> outCounts = new ArrayList<>();
        for (Map.Entry<String, Integer> e : want.entrySet()) {
            int n = 0;
            for (ConsumerRecord<byte[], byte[]> r : snapshot) {
                n += r.topic().equals(e.getKey()) ? 1 : 0;
            }
            outTopics.add(e.getKey() + "-dlt");
            outCounts.add(n);
            outTopics.add(e.getKey() + "-dlt-first");
            outCounts.add(n);
        }
        t.destroy();
        List<ConsumerRecord<byte[], byte[]>> again = readAll(a, outTopics, outCounts);
        if (again == null) {
            return 1;
        }
        for (ConsumerRecord<byte[], byte[]> r : again) {
            System.out.println(recordJson("republished", r, springFields(r.headers())));
        }
        return 0;
    }

    static boolean enough(List<ConsumerRecord<byte[], byte[]>> got, Map<String, Integer> want) {
        Map<String, Integer> n = new HashMap<>();
        synchronized (got) {
            for (ConsumerRecord<byte[], byte[]> r : got) {
                n.merge(r.topic(), 1, Integer::sum);
            }
        }
        for (Map.Entry<String, Integer> e : want.entrySet()) {
            if (n.getOrDefault(e.getKey(), 0) < e.getValue()) {
                return false;
            }
        }
        return true;
    }

    // ------------------------------------------------------------- readers

    /** Every record of each topic until it holds its count (a plain consumer, no group); null after the deadline. */
    static List<ConsumerRecord<byte[], byte[]>> readAll(Args a, List<String> topics, List<Integer> counts)
            throws InterruptedException {
        Map<String, Object> p = consumerProps(a, "unused");
        p.remove(ConsumerConfig.GROUP_ID_CONFIG);
        long deadline = System.currentTimeMillis() + a.deadlineMs;
        List<ConsumerRecord<byte[], byte[]>> out = new ArrayList<>();
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(p, new ByteArrayDeserializer(),
                new ByteArrayDeserializer())) {
            for (int i = 0; i < topics.size(); i++) {
                String topic = topics.get(i);
                int want = counts.get(i);
                List<TopicPartition> parts = null;
                while (parts == null || parts.isEmpty()) {
                    if (System.currentTimeMillis() > deadline) {
                        System.err.println("spring-anchor: topic " + topic + " never appeared");
                        return null;
                    }
                    try {
                        parts = c.partitionsFor(topic, Duration.ofSeconds(2)).stream()
                                .map(pi -> new TopicPartition(pi.topic(), pi.partition())).toList();
                    } catch (org.apache.kafka.common.KafkaException e) {
                        parts = null;
                        Thread.sleep(200);
                    }
                }
                c.assign(parts);
                c.seekToBeginning(parts);
                int n = 0;
                while (n < want) {
                    if (System.currentTimeMillis() > deadline) {
                        System.err.println("spring-anchor: " + topic + " held " + n + " of " + want
                                + " records at the deadline");
                        return null;
                    }
                    for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(200))) {
                        out.add(r);
                        n++;
                    }
                }
            }
        }
        out.sort((x, y) -> x.topic().equals(y.topic())
                ? (x.partition() != y.partition() ? Integer.compare(x.partition(), y.partition())
                        : Long.compare(x.offset(), y.offset()))
                : x.topic().compareTo(y.topic()));
        return out;
    }

    /** Every record of topic up to its end offsets now. */
    static List<ConsumerRecord<byte[], byte[]>> readToEnd(Args a, String topic) {
        Map<String, Object> p = consumerProps(a, "unused");
        p.remove(ConsumerConfig.GROUP_ID_CONFIG);
        long deadline = System.currentTimeMillis() + a.deadlineMs;
        List<ConsumerRecord<byte[], byte[]>> out = new ArrayList<>();
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(p, new ByteArrayDeserializer(),
                new ByteArrayDeserializer())) {
            List<TopicPartition> parts = c.partitionsFor(topic, Duration.ofSeconds(10)).stream()
                    .map(pi -> new TopicPartition(pi.topic(), pi.partition())).toList();
            c.assign(parts);
            c.seekToBeginning(parts);
            Map<TopicPartition, Long> end = c.endOffsets(parts);
            while (parts.stream().anyMatch(tp -> c.position(tp) < end.get(tp))) {
                if (System.currentTimeMillis() > deadline) {
                    System.err.println("spring-anchor: " + topic + " not read to its end by the deadline");
                    return null;
                }
                c.poll(Duration.ofMillis(200)).forEach(out::add);
            }
        }
        out.sort((x, y) -> x.partition() != y.partition() ? Integer.compare(x.partition(), y.partition())
                : Long.compare(x.offset(), y.offset()));
        return out;
    }

    // ------------------------------------------------ Spring's header types

    /** The DLT and retry-topic headers of h (their last values, as Spring's readers take them), decoded. */
    static Map<String, Object> springFields(Headers h) {
        Map<String, Object> f = new LinkedHashMap<>();
        f.put("original_topic", text(last(h, KafkaHeaders.DLT_ORIGINAL_TOPIC)));
        f.put("original_partition", int4(last(h, KafkaHeaders.DLT_ORIGINAL_PARTITION)));
        f.put("original_offset", long8(last(h, KafkaHeaders.DLT_ORIGINAL_OFFSET)));
        f.put("original_timestamp", long8(last(h, KafkaHeaders.DLT_ORIGINAL_TIMESTAMP)));
        f.put("original_timestamp_type", text(last(h, KafkaHeaders.DLT_ORIGINAL_TIMESTAMP_TYPE)));
        f.put("original_consumer_group", text(last(h, KafkaHeaders.DLT_ORIGINAL_CONSUMER_GROUP)));
        f.put("exception_fqcn", text(last(h, KafkaHeaders.DLT_EXCEPTION_FQCN)));
        f.put("exception_cause_fqcn", text(last(h, KafkaHeaders.DLT_EXCEPTION_CAUSE_FQCN)));
        f.put("exception_message", text(last(h, KafkaHeaders.DLT_EXCEPTION_MESSAGE)));
        f.put("key_exception_fqcn", text(last(h, KafkaHeaders.DLT_KEY_EXCEPTION_FQCN)));
        f.put("key_exception_message", text(last(h, KafkaHeaders.DLT_KEY_EXCEPTION_MESSAGE)));
        // the retry topics' names (KafkaHeaders.ORIGINAL_* and EXCEPTION_*, no "dlt-")
        f.put("retry_original_topic", text(last(h, KafkaHeaders.ORIGINAL_TOPIC)));
        f.put("retry_original_partition", int4(last(h, KafkaHeaders.ORIGINAL_PARTITION)));
        f.put("retry_original_offset", long8(last(h, KafkaHeaders.ORIGINAL_OFFSET)));
        f.put("retry_original_timestamp_long", long8(last(h, KafkaHeaders.ORIGINAL_TIMESTAMP)));
        f.put("retry_exception_fqcn", text(last(h, KafkaHeaders.EXCEPTION_FQCN)));
        f.put("retry_exception_cause_fqcn", text(last(h, KafkaHeaders.EXCEPTION_CAUSE_FQCN)));
        f.put("retry_exception_message", text(last(h, KafkaHeaders.EXCEPTION_MESSAGE)));
        f.put("attempts", int4(last(h, RetryTopicHeaders.DEFAULT_HEADER_ATTEMPTS)));
        f.put("retry_original_timestamp", bigint(last(h, RetryTopicHeaders.DEFAULT_HEADER_ORIGINAL_TIMESTAMP)));
        f.put("backoff_timestamp", bigint(last(h, RetryTopicHeaders.DEFAULT_HEADER_BACKOFF_TIMESTAMP)));
        return f;
    }

    /** The same fields as a @DltHandler method sees them: from the converted Message's headers. */
    static Map<String, Object> dltHandlerFields(MessageHeaders mh) {
        Map<String, Object> f = new LinkedHashMap<>();
        f.put("original_topic", text(bytes(mh, KafkaHeaders.DLT_ORIGINAL_TOPIC)));
        f.put("original_partition", int4(bytes(mh, KafkaHeaders.DLT_ORIGINAL_PARTITION)));
        f.put("original_offset", long8(bytes(mh, KafkaHeaders.DLT_ORIGINAL_OFFSET)));
        f.put("original_timestamp", long8(bytes(mh, KafkaHeaders.DLT_ORIGINAL_TIMESTAMP)));
        f.put("original_timestamp_type", text(bytes(mh, KafkaHeaders.DLT_ORIGINAL_TIMESTAMP_TYPE)));
        f.put("original_consumer_group", text(bytes(mh, KafkaHeaders.DLT_ORIGINAL_CONSUMER_GROUP)));
        f.put("exception_fqcn", text(bytes(mh, KafkaHeaders.DLT_EXCEPTION_FQCN)));
        f.put("exception_cause_fqcn", text(bytes(mh, KafkaHeaders.DLT_EXCEPTION_CAUSE_FQCN)));
        f.put("exception_message", text(bytes(mh, KafkaHeaders.DLT_EXCEPTION_MESSAGE)));
        f.put("exception_stacktrace", text(bytes(mh, KafkaHeaders.DLT_EXCEPTION_STACKTRACE)));
        f.put("received_topic", mh.get(KafkaHeaders.RECEIVED_TOPIC));
        f.put("received_partition", mh.get(KafkaHeaders.RECEIVED_PARTITION));
        f.put("offset", mh.get(KafkaHeaders.OFFSET));
        return f;
    }

    static byte[] last(Headers h, String name) {
        Header x = h.lastHeader(name);
        return x == null ? null : x.value();
    }

    /** A Message header as bytes: a byte[] as mapped, a String's UTF-8, else absent. */
    static Object bytes(MessageHeaders mh, String name) {
        Object v = mh.get(name);
        if (v == null || v instanceof byte[]) {
            return v;
        }
        if (v instanceof String s) {
            return s.getBytes(StandardCharsets.UTF_8);
        }
        return new Bad("mapped to " + v.getClass().getName());
    }

    /** A value that does not read as its Spring type, and why. */
    record Bad(String why) {
    }

    static Object text(Object v) {
        if (v == null || v instanceof Bad) {
            return v;
        }
        try {
            return StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                    .decode(ByteBuffer.wrap((byte[]) v)).toString();
        } catch (CharacterCodingException e) {
            return new Bad("not UTF-8");
        }
    }

    /** ByteBuffer.getInt of exactly 4 bytes (how Spring writes and reads a partition). */
    static Object int4(Object v) {
        if (v == null || v instanceof Bad) {
            return v;
        }
        byte[] b = (byte[]) v;
        return b.length == Integer.BYTES ? (Object) ByteBuffer.wrap(b).getInt()
                : new Bad(b.length + " bytes, not " + Integer.BYTES);
    }

    /** ByteBuffer.getLong of exactly 8 bytes (an offset or timestamp). */
    static Object long8(Object v) {
        if (v == null || v instanceof Bad) {
            return v;
        }
        byte[] b = (byte[]) v;
        return b.length == Long.BYTES ? (Object) ByteBuffer.wrap(b).getLong()
                : new Bad(b.length + " bytes, not " + Long.BYTES);
    }

    /** new BigInteger(bytes).longValue() (the retry topics' time headers). */
    static Object bigint(Object v) {
        if (v == null || v instanceof Bad) {
            return v;
        }
        byte[] b = (byte[]) v;
        return b.length == 0 || b.length > Long.BYTES ? new Bad(b.length + " bytes")
                : (Object) new BigInteger(b).longValue();
    }

    // ---------------------------------------------------------------- JSON

    static String recordJson(String kind, ConsumerRecord<byte[], byte[]> r, Map<String, Object> fields) {
        StringBuilder b = new StringBuilder("{");
        b.append("\"kind\":").append(str(kind));
        b.append(",\"topic\":").append(str(r.topic()));
        b.append(",\"partition\":").append(r.partition());
        b.append(",\"offset\":").append(r.offset());
        b.append(",\"timestamp\":").append(r.timestamp());
        b.append(",\"key\":").append(value(text(r.key())));
        b.append(",\"value\":").append(value(text(r.value())));
        b.append(",\"headers\":[");
        Map<String, Integer> counts = new LinkedHashMap<>();
        int i = 0;
        for (Header h : r.headers()) {
            if (i++ > 0) {
                b.append(',');
            }
            b.append('[').append(str(h.key())).append(',').append(h.value() == null ? "null" : str(hex(h.value())))
                    .append(']');
            counts.merge(h.key(), 1, Integer::sum);
        }
        b.append("],\"counts\":{");
        i = 0;
        for (Map.Entry<String, Integer> e : counts.entrySet()) {
            if (i++ > 0) {
                b.append(',');
            }
            b.append(str(e.getKey())).append(':').append(e.getValue());
        }
        b.append("},\"spring\":{");
        i = 0;
        for (Map.Entry<String, Object> e : fields.entrySet()) {
            if (i++ > 0) {
                b.append(',');
            }
            b.append(str(e.getKey())).append(':').append(value(e.getValue()));
        }
        return b.append("}}").toString();
    }

    static String value(Object v) {
        if (v == null) {
            return "null";
        }
        if (v instanceof Bad bad) {
            return "{\"error\":" + str(bad.why()) + "}";
        }
        if (v instanceof Number) {
            return v.toString();
        }
        return str(v.toString());
    }

    static String hex(byte[] b) {
        StringBuilder s = new StringBuilder(b.length * 2);
        for (byte x : b) {
            s.append(Character.forDigit((x >> 4) & 0xf, 16)).append(Character.forDigit(x & 0xf, 16));
        }
        return s.toString();
    }

    static String str(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (int i = 0; i < s.length(); i++) {
            char ch = s.charAt(i);
            switch (ch) {
                case '"' -> b.append("\\\"");
                case '\\' -> b.append("\\\\");
                case '\n' -> b.append("\\n");
                case '\r' -> b.append("\\r");
                case '\t' -> b.append("\\t");
                default -> {
                    if (ch < 0x20) {
                        b.append(String.format("\\u%04x", (int) ch));
                    } else {
                        b.append(ch);
                    }
                }
            }
        }
        return b.append('"').toString();
    }
}
