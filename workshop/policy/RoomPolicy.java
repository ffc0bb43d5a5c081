package workshop.policy;

import java.util.Map;

import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.PolicyViolationException;
import org.apache.kafka.server.policy.AlterConfigPolicy;
import org.apache.kafka.server.policy.CreateTopicPolicy;

/**
 * Caps on the topics learners create on the room's broker (workshop/kafka.py compiles and loads it).
 *
 * Why: Kafka bounds a user's bytes per second (quotas) but not what one topic may hold or cost the broker: one
 * request could ask for 9,000 partitions (files and memory maps the whole room's broker shares), and a learner could
 * set retention.ms=-1 and 50 MB records on her own topics, so only the produce quota bounded her disk use. Kafka
 * enforces such caps only through these two policy interfaces, which see the topic and its configs but not who asks:
 * so the admin is told apart by name, as only the admin (a super user) may create topics named admin-* (the hub
 * never makes a learner called admin), and internal topics (__*) are Kafka's own.
 *
 * The limits come from the broker's config (streamlab.policy.* keys written by kafka.py), with these defaults.
 */
public class RoomPolicy implements CreateTopicPolicy, AlterConfigPolicy {
    private int maxPartitions = 32;
    private long maxRetentionMs = 7L * 24 * 3600 * 1000;
    private long maxRetentionBytes = 256L << 20;
    private long maxMessageBytes = 1L << 20;
    private long minSegmentBytes = 16L << 20;
    private long minSegmentMs = 3600L * 1000;

    @Override
    public void configure(Map<String, ?> configs) {
        maxPartitions = (int) number(configs, "streamlab.policy.max.partitions", maxPartitions);
        maxRetentionMs = number(configs, "streamlab.policy.max.retention.ms", maxRetentionMs);
        maxRetentionBytes = number(configs, "streamlab.policy.max.retention.bytes", maxRetentionBytes);
        maxMessageBytes = number(configs, "streamlab.policy.max.message.bytes", maxMessageBytes);
        minSegmentBytes = number(configs, "streamlab.policy.min.segment.bytes", minSegmentBytes);
        minSegmentMs = number(configs, "streamlab.policy.min.segment.ms", minSegmentMs);
    }

    private static long number(Map<String, ?> configs, String key, long fallback) {
        Object value = configs.get(key);
        return value == null ? fallback : Long.parseLong(value.toString().trim());
    }

    static boolean exempt(String topic) {
        return topic.startsWith("__") || topic.startsWith("admin-");
    }

    @Override
    public void validate(CreateTopicPolicy.RequestMetadata request) throws PolicyViolationException {
        if (exempt(request.topic())) {
            return;
        }
        int partitions = request.numPartitions() != null ? request.numPartitions()
                : request.replicasAssignments() == null ? 0 : request.replicasAssignments().size();
        if (partitions > maxPartitions) {
            throw new PolicyViolationException("topic " + request.topic() + ": " + partitions + " partitions is more "
                    + "than this room's broker allows a learner's topic (" + maxPartitions + "): use fewer");
        }
        check(request.topic(), request.configs());
    }

    @Override
    public void validate(AlterConfigPolicy.RequestMetadata request) throws PolicyViolationException {
        ConfigResource resource = request.resource();
        if (resource.type() != ConfigResource.Type.TOPIC || exempt(resource.name())) {
            return;
        }
        check(resource.name(), request.configs());
    }

    private void check(String topic, Map<String, String> configs) {
        if (configs == null) {
            return;
        }
        for (Map.Entry<String, String> entry : configs.entrySet()) {
            String key = entry.getKey();
            String value = entry.getValue();
            if (value == null) {
                continue;  // back to the broker's default, which is within the caps
            }
            long v;
            try {
                v = Long.parseLong(value.trim());
            } catch (NumberFormatException notNumber) {
                continue;  // Kafka's own validation answers for the value
            }
            switch (key) {
                case "retention.ms":
                    within(topic, key, v, 1, maxRetentionMs);
                    break;
                case "retention.bytes":
                    within(topic, key, v, 1, maxRetentionBytes);
                    break;
                case "max.message.bytes":
                    within(topic, key, v, 0, maxMessageBytes);
                    break;
                case "segment.bytes":
                    within(topic, key, v, minSegmentBytes, Long.MAX_VALUE);
                    break;
                case "segment.ms":
                    within(topic, key, v, minSegmentMs, Long.MAX_VALUE);
                    break;
                case "flush.messages":
                case "flush.ms":
                    throw new PolicyViolationException("topic " + topic + ": " + key + " is not for learners on "
                            + "this room's broker (a forced flush per record costs every learner disk time): "
                            + "leave it to the broker's default");
                default:
                    break;
            }
        }
    }

    private static void within(String topic, String key, long value, long low, long high) {
        if (value < low || value > high) {
            throw new PolicyViolationException("topic " + topic + ": " + key + "=" + value + " is not allowed on "
                    + "this room's broker: use " + low + ".." + (high == Long.MAX_VALUE ? "" : String.valueOf(high)));
        }
    }

    @Override
    public void close() {
    }
}
