/*
 * RefusingSinkConnector.java — a sink connector that accepts every record
 * except those whose value is a JSON object with "fail": true: its task
 * reports those through Connect's ErrantRecordReporter (the one way a sink
 * task's failure reaches errors.deadletterqueue.topic.name; an exception
 * thrown from put() stops the task instead) and keeps the rest in memory
 * for the tool to see.
 */
package errgate.anchors;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;

import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.connect.connector.Task;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.sink.ErrantRecordReporter;
import org.apache.kafka.connect.sink.SinkConnector;
import org.apache.kafka.connect.sink.SinkRecord;
import org.apache.kafka.connect.sink.SinkTask;

public class RefusingSinkConnector extends SinkConnector {
    /** The values every task accepted, in order (read by ConnectDlq). */
    static final Collection<Object> ACCEPTED = new ConcurrentLinkedQueue<>();
    static final String REFUSED = "the sink refused record ";

    private Map<String, String> props;

    @Override public void start(Map<String, String> props) { this.props = props; }

    @Override public Class<? extends Task> taskClass() { return Refusing.class; }

    @Override public List<Map<String, String>> taskConfigs(int max) {
        List<Map<String, String>> l = new ArrayList<>();
        for (int i = 0; i < max; i++) l.add(props);
        return l;
    }

    @Override public void stop() {}

    @Override public ConfigDef config() { return new ConfigDef(); }

    @Override public String version() { return "1"; }

    /** The task: put() reports refused records, keeps the others. */
    public static class Refusing extends SinkTask {
        private ErrantRecordReporter reporter;

        @Override public String version() { return "1"; }

        @Override public void start(Map<String, String> props) {
            reporter = context.errantRecordReporter();
            if (reporter == null) throw new ConnectException("no ErrantRecordReporter: errors.tolerance=all and a DLQ are needed");
        }

        @Override public void put(Collection<SinkRecord> records) {
            for (SinkRecord r : records) {
                if (r.value() instanceof Map<?, ?> m && Boolean.TRUE.equals(m.get("fail"))) {
                    reporter.report(r, new IllegalStateException(REFUSED + m.get("id")));
                } else {
                    ACCEPTED.add(r.value());
                }
            }
        }

        @Override public void stop() {}
    }
}
