/*
 * Compatibility check: the official Apache RocketMQ Java client (rocketmq-client 4.9.x) producing
 * to and consuming from an rmq nameserver + broker (SPEC section 4).
 *
 * Phases (--mode, comma-separated, default "all"):
 *   produce       sync send, async send (SendCallback), sendOneway and batch send(Collection) of
 *                 --count messages; every SendResult is checked (SEND_OK, msgId, offsetMsgId,
 *                 queue, queue offset, no two sends sharing an offset).
 *   admin         GET_MAX/MIN_OFFSET, SEARCH_OFFSET_BY_TIMESTAMP, VIEW_MESSAGE_BY_ID and
 *                 QUERY_MESSAGE (by key and by unique id) through the client's admin API.
 *   consume-push  DefaultMQPushConsumer, "*" (every message) and, at the same time, a second
 *                 group subscribed to "TagA" (exactly the TagA messages); committed offsets.
 *   consume-lite  DefaultLitePullConsumer with poll() + commitSync(); committed offsets.
 *
 * Every message is a pure function of (run id, sequence number): body (binary, some bodies large
 * enough to be compressed by the client), tag, keys and user properties, so a consumer can verify
 * each message it gets byte for byte without the producer's help. When the producer ran in the
 * same process (or --state names its record), consumers also check broker name, queue id, queue
 * offset, msgId and offsetMsgId against what SendResult said.
 *
 * Output: progress on stderr; the last line on stdout is a one-line JSON summary. Exit status 0
 * when every requested phase passed, 1 when a check failed, 2 on a usage or setup error (nothing
 * listening, nameserver silent, ...). A watchdog ends the JVM if the whole run overruns, so it
 * never hangs.
 */
package rmq.compat;

import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.IOException;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ConcurrentSkipListSet;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.IntPredicate;

import org.apache.rocketmq.client.QueryResult;
import org.apache.rocketmq.client.consumer.DefaultLitePullConsumer;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.exception.MQBrokerException;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.impl.MQClientAPIImpl;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendCallback;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.MQVersion;
import org.apache.rocketmq.common.MixAll;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.common.constant.PermName;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageAccessor;
import org.apache.rocketmq.common.message.MessageClientExt;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageDecoder;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageId;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.common.protocol.ResponseCode;
import org.apache.rocketmq.common.protocol.header.QueryConsumerOffsetRequestHeader;
import org.apache.rocketmq.common.protocol.heartbeat.MessageModel;
import org.apache.rocketmq.common.protocol.route.BrokerData;
import org.apache.rocketmq.common.protocol.route.QueueData;
import org.apache.rocketmq.common.protocol.route.TopicRouteData;
import org.apache.rocketmq.common.topic.TopicValidator;

// The admin calls (maxOffset, viewMessage, queryMessage, ...) are deprecated on DefaultMQProducer
// in 4.9.x but are exactly what applications use to reach those request codes.
@SuppressWarnings("deprecation")
public final class CompatCheck {

    static final String[] TAGS = {"TagA", "TagB", "TagC"};
    static final String BODY_MAGIC = "rmq-compat";
    static final int FIRST_ITEMS = 20;
    static final List<String> ALL_PHASES = List.of("produce", "admin", "consume-push", "consume-lite");

    static final PrintStream OUT = System.out;
    static final PrintStream ERR = System.err;

    // ------------------------------------------------------------------------------------------
    // Options
    // ------------------------------------------------------------------------------------------

    static final class Options {
        String namesrv;
        String topic;
        int count = 10_000;
        String group;
        final Set<String> phases = new LinkedHashSet<>();
        String createTopicBroker;
        int queues = 4;
        long timeoutMs = 120_000;
        String logDir;
        String logLevel = "INFO";
        String runId;
        Path stateFile;
        int batchSize = 50;
        int asyncInFlight = 256;
        String serializeType = "JSON";
        boolean help;
    }

    static final String USAGE = String.join("\n",
        "usage: java -jar rmq-compat.jar --namesrv HOST:PORT [options]",
        "",
        "Checks an rmq nameserver + broker with the official RocketMQ Java client ("
            + "rocketmq-client " + clientVersion() + ").",
        "",
        "  --namesrv ADDR         nameserver address(es), 'host:port[;host:port]' (required)",
        "  --topic T              topic (default compat_<millis>; a fresh topic per run)",
        "  --count N              messages to produce / expect (default 10000)",
        "  --group G              prefix for producer/consumer group names (default compat_<millis>)",
        "  --mode M[,M...]        produce | admin | consume-push | consume-lite | all (default all)",
        "  --create-topic ADDR    create the topic on broker ADDR (UPDATE_AND_CREATE_TOPIC) before",
        "                         producing; default: rely on the broker's autoCreateTopicEnable",
        "                         (the producer's TBW102 path)",
        "  --queues N             queues for --create-topic and the producer's defaultTopicQueueNums"
            + " (default 4)",
        "  --timeout SECONDS      wait per consume phase for all messages (default 120)",
        "  --batch-size N         messages per batch send (default 50)",
        "  --run-id ID            identifies this run's bodies (default: the topic name); consume-only",
        "                         runs must use the producing run's id and --count",
        "  --state FILE           produce writes every SendResult here; consume-only runs read it to",
        "                         also check queue offsets and message ids",
        "  --serialize-type T     remoting header encoding the client sends: JSON (default) or",
        "                         ROCKETMQ (binary); responses must use the request's type",
        "  --log-dir DIR          RocketMQ client log directory (default $TMPDIR/rmq-compat-logs/<run>)",
        "  --client-log-level L   RocketMQ client log level: DEBUG, INFO, WARN, ERROR (default INFO)",
        "  --help                 this text",
        "",
        "The last stdout line is a JSON summary. Exit 0: all checks passed; 1: a check failed;",
        "2: usage or setup error (e.g. nothing listens on the nameserver address).");

    static Options parse(String[] args) {
        Options o = new Options();
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            String v = null;
            int eq = a.indexOf('=');
            if (a.startsWith("--") && eq > 0) {
                v = a.substring(eq + 1);
                a = a.substring(0, eq);
            }
            if (a.equals("--help") || a.equals("-h")) {
                o.help = true;
                continue;
            }
            if (v == null) {
                if (i + 1 >= args.length) {
                    throw new UsageError("missing value for " + a);
                }
                v = args[++i];
            }
            switch (a) {
                case "--namesrv" -> o.namesrv = v;
                case "--topic" -> o.topic = v;
                case "--count" -> o.count = parseInt(a, v, 1, 10_000_000);
                case "--group" -> o.group = v;
                case "--mode" -> {
                    for (String m : v.split(",")) {
                        m = m.trim();
                        if (m.equals("all")) {
                            o.phases.addAll(ALL_PHASES);
                        } else if (ALL_PHASES.contains(m)) {
                            o.phases.add(m);
                        } else {
                            throw new UsageError("unknown mode '" + m + "'; expected one of "
                                + String.join(", ", ALL_PHASES) + ", all");
                        }
                    }
                }
                case "--create-topic" -> o.createTopicBroker = v;
                case "--queues" -> o.queues = parseInt(a, v, 1, 1024);
                case "--timeout" -> o.timeoutMs = (long) (parseDouble(a, v) * 1000);
                case "--batch-size" -> o.batchSize = parseInt(a, v, 1, 1000);
                case "--run-id" -> o.runId = v;
                case "--state" -> o.stateFile = Paths.get(v);
                case "--log-dir" -> o.logDir = v;
                case "--client-log-level" -> o.logLevel = v.toUpperCase(Locale.ROOT);
                case "--async-in-flight" -> o.asyncInFlight = parseInt(a, v, 1, 65_535);
                case "--serialize-type" -> {
                    o.serializeType = v.toUpperCase(Locale.ROOT);
                    if (!o.serializeType.equals("JSON") && !o.serializeType.equals("ROCKETMQ")) {
                        throw new UsageError("--serialize-type must be JSON or ROCKETMQ, got '" + v + "'");
                    }
                }
                default -> throw new UsageError("unknown option " + a + " (see --help)");
            }
        }
        if (o.help) {
            return o;
        }
        if (o.namesrv == null || o.namesrv.isBlank()) {
            // Never let the client fall back to its HTTP nameserver lookup.
            throw new UsageError("--namesrv is required");
        }
        long now = System.currentTimeMillis();
        if (o.topic == null) {
            o.topic = "compat_" + now;
        }
        if (o.group == null) {
            o.group = "compat_" + now;
        }
        if (o.runId == null) {
            o.runId = o.topic;
        }
        if (o.phases.isEmpty()) {
            o.phases.addAll(ALL_PHASES);
        }
        if (!o.topic.matches("^[%|a-zA-Z0-9_-]{1,127}$")) {
            throw new UsageError("invalid topic name '" + o.topic + "'");
        }
        if (!o.group.matches("^[%|a-zA-Z0-9_-]{1,200}$")) {
            throw new UsageError("invalid group prefix '" + o.group + "'");
        }
        if (o.runId.contains(" ") || o.runId.contains("\n") || o.runId.isEmpty()) {
            throw new UsageError("--run-id must be non-empty and contain no whitespace");
        }
        if (o.timeoutMs < 1000) {
            throw new UsageError("--timeout must be at least 1 second");
        }
        if (o.logDir == null) {
            o.logDir = Paths.get(System.getProperty("java.io.tmpdir"), "rmq-compat-logs", o.runId)
                .toString();
        }
        return o;
    }

    static int parseInt(String name, String v, int min, int max) {
        try {
            int n = Integer.parseInt(v.trim());
            if (n < min || n > max) {
                throw new UsageError(name + " must be in [" + min + ", " + max + "], got " + v);
            }
            return n;
        } catch (NumberFormatException e) {
            throw new UsageError(name + " expects an integer, got '" + v + "'");
        }
    }

    static double parseDouble(String name, String v) {
        try {
            return Double.parseDouble(v.trim());
        } catch (NumberFormatException e) {
            throw new UsageError(name + " expects a number, got '" + v + "'");
        }
    }

    static final class UsageError extends RuntimeException {
        private static final long serialVersionUID = 1L;

        UsageError(String message) {
            super(message);
        }
    }

    /** A setup problem (nothing listening, silent nameserver, no route): exit status 2. */
    static final class SetupError extends RuntimeException {
        private static final long serialVersionUID = 1L;

        SetupError(String message) {
            super(message);
        }
    }

    static String clientVersion() {
        return MQVersion.getVersionDesc(MQVersion.CURRENT_VERSION);
    }

    // ------------------------------------------------------------------------------------------
    // What is sent: every property of message #seq is a function of (runId, seq).
    // ------------------------------------------------------------------------------------------

    static final class Plan {
        final String topic;
        final String runId;
        final int count;
        final int batchSize;
        final int syncEnd;
        final int asyncEnd;
        final int onewayEnd;

        Plan(String topic, String runId, int count, int batchSize) {
            this.topic = topic;
            this.runId = runId;
            this.count = count;
            this.batchSize = batchSize;
            // 40 % sync, 20 % async, 10 % oneway, the rest in batches.
            this.syncEnd = count * 4 / 10;
            this.asyncEnd = syncEnd + count * 2 / 10;
            this.onewayEnd = asyncEnd + count / 10;
        }

        String mode(int seq) {
            if (seq < syncEnd) {
                return "sync";
            } else if (seq < asyncEnd) {
                return "async";
            } else if (seq < onewayEnd) {
                return "oneway";
            }
            return "batch";
        }

        static String tag(int seq) {
            return TAGS[seq % TAGS.length];
        }

        /** Unique per message; every tenth message carries two keys (space-separated). */
        static String keys(int seq) {
            return seq % 10 == 3 ? "key-" + seq + " alt-" + seq : "key-" + seq;
        }

        static String uniProperty(int seq) {
            return "\u00fcn\u00ef-\u4e16\u754c-" + (seq % 10);
        }

        /** Large enough for the client to zlib-compress it (sync and async only: batches never are). */
        boolean large(int seq) {
            String m = mode(seq);
            return (m.equals("sync") || m.equals("async")) && seq % 50 == 7;
        }

        byte[] body(int seq) {
            byte[] head = (BODY_MAGIC + " " + runId + " " + seq + " " + mode(seq) + "\n")
                .getBytes(StandardCharsets.UTF_8);
            byte[] payload;
            if (large(seq)) {
                StringBuilder sb = new StringBuilder();
                while (sb.length() < 6000) {
                    sb.append("The quick brown fox #").append(seq).append(" jumps over the lazy dog. ");
                }
                payload = sb.toString().getBytes(StandardCharsets.UTF_8);
            } else {
                int n = (int) ((seq * 7919L) % 300);
                payload = new byte[n];
                long x = 0x9E3779B97F4A7C15L ^ (seq + 1L);
                for (int i = 0; i < n; i++) {
                    x ^= x << 13;
                    x ^= x >>> 7;
                    x ^= x << 17;
                    payload[i] = (byte) x;
                }
            }
            byte[] out = Arrays.copyOf(head, head.length + payload.length);
            System.arraycopy(payload, 0, out, head.length, payload.length);
            return out;
        }

        Message message(int seq) {
            Message m = new Message(topic, tag(seq), keys(seq), body(seq));
            m.putUserProperty("seq", Integer.toString(seq));
            m.putUserProperty("mode", mode(seq));
            m.putUserProperty("uni", uniProperty(seq));
            return m;
        }

        /** seq of a body of this run, -1 for a foreign body (another run, another producer), -2 if garbled. */
        int parseSeq(byte[] body) {
            if (body == null) {
                return -2;
            }
            int nl = -1;
            for (int i = 0; i < Math.min(body.length, 512); i++) {
                if (body[i] == '\n') {
                    nl = i;
                    break;
                }
            }
            if (nl < 0) {
                return -1;
            }
            String[] f = new String(body, 0, nl, StandardCharsets.UTF_8).split(" ");
            if (f.length != 4 || !f[0].equals(BODY_MAGIC)) {
                return -1;
            }
            if (!f[1].equals(runId)) {
                return -1;
            }
            try {
                return Integer.parseInt(f[2]);
            } catch (NumberFormatException e) {
                return -2;
            }
        }
    }

    /** What SendResult said about message #seq (oneway: only the mode). */
    record SendRecord(int seq, String mode, String brokerName, int queueId, long queueOffset,
                      String msgId, String offsetMsgId) {
        String queueKey() {
            return brokerName + ":" + queueId;
        }

        boolean known() {
            return brokerName != null;
        }
    }

    // ------------------------------------------------------------------------------------------
    // Bounded list of problems: the total count and the first few descriptions.
    // ------------------------------------------------------------------------------------------

    static final class Problems {
        final AtomicInteger total = new AtomicInteger();
        final ConcurrentLinkedQueue<String> first = new ConcurrentLinkedQueue<>();

        void add(String what) {
            if (total.incrementAndGet() <= FIRST_ITEMS) {
                first.add(what);
            }
        }

        int count() {
            return total.get();
        }

        List<String> firstItems() {
            return new ArrayList<>(first);
        }
    }

    // ------------------------------------------------------------------------------------------
    // Consumer-side recorder and per-message verification.
    // ------------------------------------------------------------------------------------------

    record Seen(String queueKey, long queueOffset, String msgId, String offsetMsgId) {
    }

    static final class Recorder {
        final String name;
        final Plan plan;
        final Map<Integer, SendRecord> sends;
        final IntPredicate expected;
        final int expectedCount;
        /** Queue offsets must have no holes: true unless the subscription filters by tag. */
        final boolean contiguous;
        final long runStartMillis;
        final ConcurrentHashMap<Integer, Seen> seen = new ConcurrentHashMap<>();
        final AtomicInteger received = new AtomicInteger();
        final AtomicInteger uniqueExpected = new AtomicInteger();
        final AtomicInteger duplicates = new AtomicInteger();
        final AtomicInteger foreign = new AtomicInteger();
        final AtomicInteger unexpected = new AtomicInteger();
        final Problems mismatches = new Problems();
        /** Every queue offset delivered (ours and foreign), per "broker:queueId". */
        final ConcurrentHashMap<String, ConcurrentSkipListSet<Long>> offsets = new ConcurrentHashMap<>();
        final AtomicLong firstMessageAt = new AtomicLong();
        volatile long startedAt;

        Recorder(String name, Plan plan, Map<Integer, SendRecord> sends, IntPredicate expected,
                 boolean contiguous, long runStartMillis) {
            this.name = name;
            this.contiguous = contiguous;
            this.plan = plan;
            this.sends = sends;
            this.expected = expected;
            this.runStartMillis = runStartMillis;
            int n = 0;
            for (int s = 0; s < plan.count; s++) {
                if (expected.test(s)) {
                    n++;
                }
            }
            this.expectedCount = n;
        }

        boolean complete() {
            return uniqueExpected.get() >= expectedCount;
        }

        void accept(MessageExt m) {
            received.incrementAndGet();
            firstMessageAt.compareAndSet(0, System.currentTimeMillis());
            String queueKey = m.getBrokerName() + ":" + m.getQueueId();
            offsets.computeIfAbsent(queueKey, k -> new ConcurrentSkipListSet<>()).add(m.getQueueOffset());
            try {
                verify(m, queueKey);
            } catch (RuntimeException e) {
                mismatches.add(name + ": exception verifying " + queueKey + "@" + m.getQueueOffset()
                    + ": " + e);
            }
        }

        private void verify(MessageExt m, String queueKey) {
            String where = queueKey + "@" + m.getQueueOffset();
            if (!plan.topic.equals(m.getTopic())) {
                mismatches.add(name + ": " + where + " topic '" + m.getTopic() + "' != '" + plan.topic + "'");
            }
            int seq = plan.parseSeq(m.getBody());
            if (seq == -1) {
                foreign.incrementAndGet();
                return;
            }
            if (seq < 0 || seq >= plan.count) {
                mismatches.add(name + ": " + where + " garbled body or seq out of range: " + describe(m.getBody()));
                return;
            }
            String offsetMsgId = m instanceof MessageClientExt ce ? ce.getOffsetMsgId() : m.getMsgId();
            Seen now = new Seen(queueKey, m.getQueueOffset(), m.getMsgId(), offsetMsgId);
            Seen before = seen.putIfAbsent(seq, now);
            if (before != null) {
                duplicates.incrementAndGet();
                if (before.queueOffset() != now.queueOffset() || !before.queueKey().equals(now.queueKey())) {
                    mismatches.add(name + ": seq " + seq + " delivered twice at different positions: "
                        + before.queueKey() + "@" + before.queueOffset() + " and " + where);
                }
                return;
            }
            if (!expected.test(seq)) {
                unexpected.incrementAndGet();
                mismatches.add(name + ": seq " + seq + " (tag " + m.getTags() + ") should not have been delivered");
            } else {
                uniqueExpected.incrementAndGet();
            }
            String p = name + ": seq " + seq + " (" + plan.mode(seq) + ", " + where + ")";

            byte[] want = plan.body(seq);
            if (!Arrays.equals(want, m.getBody())) {
                mismatches.add(p + " body differs: " + bodyDiff(want, m.getBody()));
            }
            check(p, "tags", Plan.tag(seq), m.getTags());
            check(p, "keys", Plan.keys(seq), m.getKeys());
            check(p, "property seq", Integer.toString(seq), m.getUserProperty("seq"));
            check(p, "property mode", plan.mode(seq), m.getUserProperty("mode"));
            check(p, "property uni", Plan.uniProperty(seq), m.getUserProperty("uni"));
            String uniq = m.getProperty(MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX);
            if (uniq == null || uniq.isEmpty()) {
                mismatches.add(p + " has no UNIQ_KEY property (client message id)");
            } else {
                check(p, "msgId", uniq, m.getMsgId());
            }
            if (m.getReconsumeTimes() != 0) {
                mismatches.add(p + " reconsumeTimes " + m.getReconsumeTimes() + " != 0");
            }
            long born = m.getBornTimestamp();
            long stored = m.getStoreTimestamp();
            long nowMs = System.currentTimeMillis();
            if (runStartMillis > 0 && (born < runStartMillis - 60_000 || born > nowMs + 60_000)) {
                mismatches.add(p + " bornTimestamp " + born + " is not a millisecond time near now");
            }
            if (stored < born - 5_000 || stored > nowMs + 60_000) {
                mismatches.add(p + " storeTimestamp " + stored + " vs bornTimestamp " + born);
            }
            if (offsetMsgId == null || offsetMsgId.isEmpty()) {
                mismatches.add(p + " has no offsetMsgId");
            }
            SendRecord r = sends == null ? null : sends.get(seq);
            if (r != null && r.known()) {
                check(p, "queue", r.queueKey(), queueKey);
                if (r.queueOffset() != m.getQueueOffset()) {
                    mismatches.add(p + " queueOffset " + m.getQueueOffset() + " != SendResult queueOffset "
                        + r.queueOffset());
                }
                if (r.msgId() != null) {
                    check(p, "msgId vs SendResult", r.msgId(), m.getMsgId());
                }
                if (r.offsetMsgId() != null) {
                    check(p, "offsetMsgId vs SendResult (store host + commit log offset)", r.offsetMsgId(),
                        offsetMsgId);
                }
            }
        }

        private void check(String p, String what, String want, String got) {
            if (!java.util.Objects.equals(want, got)) {
                mismatches.add(p + " " + what + ": expected '" + want + "', got '" + got + "'");
            }
        }

        List<Integer> missing() {
            List<Integer> out = new ArrayList<>();
            for (int s = 0; s < plan.count; s++) {
                if (expected.test(s) && !seen.containsKey(s)) {
                    out.add(s);
                }
            }
            return out;
        }

        /** Queue offsets must be delivered without holes between the smallest and largest seen. */
        List<String> offsetGaps() {
            List<String> gaps = new ArrayList<>();
            if (!contiguous) {
                return gaps;
            }
            for (Map.Entry<String, ConcurrentSkipListSet<Long>> e : new TreeMap<>(offsets).entrySet()) {
                long expect = e.getValue().first();
                for (long off : e.getValue()) {
                    if (off != expect) {
                        gaps.add(e.getKey() + " offsets " + expect + ".." + (off - 1) + " never delivered");
                    }
                    expect = off + 1;
                }
            }
            return gaps;
        }

        String progress() {
            return String.format(Locale.ROOT, "[%s] %d/%d expected messages, %d received, %d duplicates, %d foreign, %d mismatches",
                name, uniqueExpected.get(), expectedCount, received.get(), duplicates.get(), foreign.get(),
                mismatches.count());
        }

        Map<String, Object> summary(long elapsedMs) {
            Map<String, Object> s = new LinkedHashMap<>();
            List<Integer> missing = missing();
            List<String> gaps = offsetGaps();
            s.put("expected", expectedCount);
            s.put("received", received.get());
            s.put("unique", uniqueExpected.get());
            s.put("duplicates", duplicates.get());
            s.put("foreign", foreign.get());
            s.put("unexpected", unexpected.get());
            s.put("missing", missing.size());
            s.put("missingFirst", describeMissing(missing));
            s.put("mismatches", mismatches.count());
            s.put("mismatchFirst", mismatches.firstItems());
            s.put("offsetGaps", gaps.size() > FIRST_ITEMS ? gaps.subList(0, FIRST_ITEMS) : gaps);
            s.put("elapsedMs", elapsedMs);
            long first = firstMessageAt.get();
            s.put("firstMessageMs", first == 0 ? null : first - startedAt);
            Map<String, Object> perQueue = new TreeMap<>();
            for (Map.Entry<String, ConcurrentSkipListSet<Long>> e : offsets.entrySet()) {
                perQueue.put(e.getKey(), e.getValue().size());
            }
            s.put("perQueue", perQueue);
            return s;
        }

        boolean ok() {
            return missing().isEmpty() && mismatches.count() == 0 && offsetGaps().isEmpty();
        }

        List<String> describeMissing(List<Integer> missing) {
            List<String> out = new ArrayList<>();
            for (int seq : missing) {
                if (out.size() >= FIRST_ITEMS) {
                    break;
                }
                SendRecord r = sends == null ? null : sends.get(seq);
                String pos = r != null && r.known() ? " sent to " + r.queueKey() + "@" + r.queueOffset() : "";
                out.add(seq + " (" + plan.mode(seq) + ", " + Plan.tag(seq) + pos + ")");
            }
            return out;
        }
    }

    static String describe(byte[] body) {
        if (body == null) {
            return "null";
        }
        int n = Math.min(body.length, 60);
        return body.length + " bytes starting '"
            + new String(body, 0, n, StandardCharsets.ISO_8859_1).replaceAll("[^\\x20-\\x7e]", ".") + "'";
    }

    static String bodyDiff(byte[] want, byte[] got) {
        if (got == null) {
            return "got null, expected " + want.length + " bytes";
        }
        int i = 0;
        while (i < want.length && i < got.length && want[i] == got[i]) {
            i++;
        }
        return "expected " + want.length + " bytes, got " + got.length + ", first difference at byte " + i;
    }

    // ------------------------------------------------------------------------------------------
    // Client construction: explicit nameserver, no VIP channel, unique instance names.
    // ------------------------------------------------------------------------------------------

    static final AtomicInteger INSTANCES = new AtomicInteger();

    static String instanceName(String role) {
        return "rmqcompat-" + ProcessHandle.current().pid() + "-" + role + "-" + INSTANCES.incrementAndGet();
    }

    static void configure(org.apache.rocketmq.client.ClientConfig c, Options o, String role) {
        c.setNamesrvAddr(o.namesrv);
        c.setInstanceName(instanceName(role));
        c.setClientIP("127.0.0.1");
        c.setVipChannelEnabled(false);
        c.setPollNameServerInterval(1000);
        c.setHeartbeatBrokerInterval(10_000);
        c.setPersistConsumerOffsetInterval(1000);
        c.setMqClientApiTimeout(5000);
    }

    static DefaultMQProducer newProducer(Options o, String group, String role) {
        DefaultMQProducer p = new DefaultMQProducer(group);
        configure(p, o, role);
        p.setSendMsgTimeout(10_000);
        p.setRetryTimesWhenSendFailed(0);
        p.setRetryTimesWhenSendAsyncFailed(0);
        p.setRetryAnotherBrokerWhenNotStoreOK(false);
        p.setDefaultTopicQueueNums(o.queues);
        p.setCreateTopicKey(TopicValidator.AUTO_CREATE_TOPIC_KEY_TOPIC);
        return p;
    }

    // ------------------------------------------------------------------------------------------
    // Run state and summary
    // ------------------------------------------------------------------------------------------

    final Options opt;
    final Plan plan;
    final Map<String, Object> summary = Collections.synchronizedMap(new LinkedHashMap<>());
    final List<String> errors = Collections.synchronizedList(new ArrayList<>());
    final List<String> warnings = Collections.synchronizedList(new ArrayList<>());
    final long runStart = System.currentTimeMillis();
    /** seq -> SendResult record; filled by produce or loaded from --state. */
    Map<Integer, SendRecord> sends;
    boolean freshTopic;
    DefaultMQProducer admin;
    MQClientAPIImpl api;

    CompatCheck(Options opt) {
        this.opt = opt;
        this.plan = new Plan(opt.topic, opt.runId, opt.count, opt.batchSize);
    }

    static void log(String fmt, Object... args) {
        ERR.println("[rmq-compat] " + String.format(Locale.ROOT, fmt, args));
        ERR.flush();
    }

    synchronized String summaryJson(boolean ok, String fatal) {
        Map<String, Object> s = new LinkedHashMap<>();
        s.put("ok", ok);
        if (fatal != null) {
            s.put("error", fatal);
        }
        Map<String, Object> client = new LinkedHashMap<>();
        client.put("artifact", "org.apache.rocketmq:rocketmq-client");
        client.put("version", clientVersion());
        client.put("versionCode", MQVersion.CURRENT_VERSION);
        s.put("client", client);
        s.put("namesrv", opt.namesrv);
        s.put("topic", opt.topic);
        s.put("runId", opt.runId);
        s.put("count", opt.count);
        s.put("modes", new ArrayList<>(opt.phases));
        s.put("serializeType", opt.serializeType);
        s.put("freshTopic", freshTopic);
        synchronized (summary) {
            s.putAll(summary);
        }
        s.put("errors", new ArrayList<>(errors));
        s.put("warnings", new ArrayList<>(warnings));
        s.put("logDir", opt.logDir);
        s.put("elapsedMs", System.currentTimeMillis() - runStart);
        return Json.write(s);
    }

    // ------------------------------------------------------------------------------------------
    // main
    // ------------------------------------------------------------------------------------------

    public static void main(String[] args) {
        Options o;
        try {
            o = parse(args);
        } catch (UsageError e) {
            ERR.println("rmq-compat: " + e.getMessage());
            ERR.println(USAGE);
            OUT.println(Json.write(Map.of("ok", false, "error", "usage: " + e.getMessage())));
            System.exit(2);
            return;
        }
        if (o.help) {
            OUT.println(USAGE);
            System.exit(0);
            return;
        }
        setClientSystemProperties(o);
        CompatCheck c = new CompatCheck(o);
        int status;
        String fatal = null;
        c.startWatchdog();
        try {
            status = c.run() ? 0 : 1;
        } catch (SetupError e) {
            fatal = e.getMessage();
            status = 2;
        } catch (Throwable e) {
            fatal = "unexpected " + e;
            e.printStackTrace(ERR);
            status = 1;
        }
        if (fatal != null) {
            log("FAILED: %s", fatal);
        }
        c.closeAdmin();
        OUT.println(c.summaryJson(status == 0, fatal));
        OUT.flush();
        log("%s (client log: %s)", status == 0 ? "PASSED" : "FAILED", o.logDir);
        // Netty and the client's schedulers are non-daemon threads; leave without waiting for them.
        Runtime.getRuntime().halt(status);
    }

    /** Must run before any RocketMQ class logs: ClientLogger reads these once. */
    static void setClientSystemProperties(Options o) {
        try {
            Files.createDirectories(Paths.get(o.logDir));
        } catch (IOException e) {
            throw new UsageError("cannot create --log-dir " + o.logDir + ": " + e);
        }
        setDefault("rocketmq.client.logUseSlf4j", "false");
        setDefault("rocketmq.client.logRoot", o.logDir);
        setDefault("rocketmq.client.logLevel", o.logLevel);
        setDefault("rocketmq.client.logFileMaxIndex", "3");
        setDefault("rocketmq.client.logFileMaxSize", Long.toString(64L << 20));
        // The client only consults these when no nameserver address is set, which never happens
        // here; point them at loopback anyway so nothing can ever look up the default domain.
        setDefault("rocketmq.namesrv.domain", "127.0.0.1");
        setDefault("com.rocketmq.sendMessageWithVIPChannel", "false");
        // RemotingCommand reads this once, when the class initialises.
        System.setProperty("rocketmq.serialize.type", o.serializeType);
    }

    static void setDefault(String key, String value) {
        if (System.getProperty(key) == null) {
            System.setProperty(key, value);
        }
    }

    void startWatchdog() {
        int consumePhases = (opt.phases.contains("consume-push") ? 1 : 0) + (opt.phases.contains("consume-lite") ? 1 : 0);
        long budget = opt.timeoutMs * (consumePhases + 1) + 90_000 + 20L * opt.count;
        Thread t = new Thread(() -> {
            try {
                Thread.sleep(budget);
            } catch (InterruptedException e) {
                return;
            }
            String msg = "watchdog: the run exceeded " + budget / 1000 + " s; giving up";
            log("%s", msg);
            OUT.println(summaryJson(false, msg));
            OUT.flush();
            Runtime.getRuntime().halt(1);
        }, "rmq-compat-watchdog");
        t.setDaemon(true);
        t.start();
    }

    boolean run() throws Exception {
        log("rocketmq-client %s, namesrv %s, topic %s, count %d, phases %s, %s headers", clientVersion(),
            opt.namesrv, opt.topic, opt.count, opt.phases, opt.serializeType);
        preflightTcp();
        admin = newProducer(opt, opt.group + "_admin", "admin");
        admin.start();
        api = admin.getDefaultMQProducerImpl().getmQClientFactory().getMQClientAPIImpl();
        TopicRouteData existing = probeRoute();
        freshTopic = existing == null;
        if (opt.createTopicBroker != null) {
            createTopic();
        }
        if (opt.stateFile != null && !opt.phases.contains("produce")) {
            sends = loadState(opt.stateFile);
        }

        boolean ok = true;
        if (opt.phases.contains("produce")) {
            boolean produced = produce();
            ok = produced;
            if (!produced) {
                for (String ph : opt.phases) {
                    if (!ph.equals("produce")) {
                        summary.put(ph, Map.of("ok", false, "skipped", "produce failed"));
                    }
                }
                return false;
            }
        }
        TopicRouteData route = waitForRoute(Math.min(opt.timeoutMs, 30_000));
        if (opt.phases.contains("admin")) {
            ok &= adminPhase(route);
        }
        if (opt.phases.contains("consume-push")) {
            ok &= pushPhase(route);
        }
        if (opt.phases.contains("consume-lite")) {
            ok &= litePhase(route);
        }
        return ok && errors.isEmpty();
    }

    void closeAdmin() {
        if (admin != null) {
            try {
                admin.shutdown();
            } catch (RuntimeException e) {
                // best effort
            }
        }
    }

    // ------------------------------------------------------------------------------------------
    // Setup: reachability, route probe, topic creation
    // ------------------------------------------------------------------------------------------

    void preflightTcp() {
        for (String addr : opt.namesrv.split(";")) {
            addr = addr.trim();
            int colon = addr.lastIndexOf(':');
            if (colon <= 0) {
                throw new SetupError("bad nameserver address '" + addr + "' (expected host:port)");
            }
            String host = addr.substring(0, colon);
            int port;
            try {
                port = Integer.parseInt(addr.substring(colon + 1));
            } catch (NumberFormatException e) {
                throw new SetupError("bad nameserver port in '" + addr + "'");
            }
            try (Socket s = new Socket()) {
                s.connect(new InetSocketAddress(host, port), 3000);
            } catch (IOException e) {
                throw new SetupError("cannot connect to nameserver " + addr + ": " + e.getMessage()
                    + " (is `python -m rmq.namesrv -p " + port + "` running?)");
            }
        }
    }

    /** GET_ROUTEINFO_BY_TOPIC once: null when the topic does not exist yet (TOPIC_NOT_EXIST). */
    TopicRouteData probeRoute() {
        try {
            return api.getTopicRouteInfoFromNameServer(opt.topic, 5000);
        } catch (MQClientException e) {
            if (e.getResponseCode() == ResponseCode.TOPIC_NOT_EXIST) {
                return null;
            }
            throw new SetupError("nameserver answered GET_ROUTEINFO_BY_TOPIC(" + opt.topic + ") with code "
                + e.getResponseCode() + " (" + e.getErrorMessage() + "); expected SUCCESS or TOPIC_NOT_EXIST (17)");
        } catch (Exception e) {
            throw new SetupError("nameserver " + opt.namesrv + " did not answer GET_ROUTEINFO_BY_TOPIC within 5 s: " + e);
        }
    }

    void createTopic() throws Exception {
        TopicConfig tc = new TopicConfig(opt.topic, opt.queues, opt.queues, PermName.PERM_READ | PermName.PERM_WRITE);
        log("creating topic %s with %d queues on broker %s (UPDATE_AND_CREATE_TOPIC)", opt.topic, opt.queues,
            opt.createTopicBroker);
        try {
            api.createTopic(opt.createTopicBroker, TopicValidator.AUTO_CREATE_TOPIC_KEY_TOPIC, tc, 5000);
        } catch (MQClientException | MQBrokerException e) {
            throw new SetupError("UPDATE_AND_CREATE_TOPIC on " + opt.createTopicBroker + " failed: " + e);
        } catch (Exception e) {
            throw new SetupError("broker " + opt.createTopicBroker + " unreachable for UPDATE_AND_CREATE_TOPIC: " + e);
        }
        TopicRouteData r = waitForRoute(30_000);
        int writeQueues = r.getQueueDatas().stream().mapToInt(QueueData::getWriteQueueNums).sum();
        if (writeQueues != opt.queues) {
            warnings.add("created topic with " + opt.queues + " queues, route says " + writeQueues + " write queues");
        }
    }

    /** Polls GET_ROUTEINFO_BY_TOPIC until the topic has a route with brokers and queues. */
    TopicRouteData waitForRoute(long timeoutMs) {
        long deadline = System.currentTimeMillis() + timeoutMs;
        String last = "";
        while (true) {
            try {
                TopicRouteData r = api.getTopicRouteInfoFromNameServer(opt.topic, 5000);
                if (r != null && r.getQueueDatas() != null && !r.getQueueDatas().isEmpty()
                    && r.getBrokerDatas() != null && !r.getBrokerDatas().isEmpty()) {
                    return r;
                }
                last = "route without queues or brokers: " + r;
            } catch (MQClientException e) {
                last = "code " + e.getResponseCode() + " " + e.getErrorMessage();
            } catch (Exception e) {
                last = e.toString();
            }
            if (System.currentTimeMillis() > deadline) {
                throw new SetupError("nameserver has no usable route for topic " + opt.topic + " after "
                    + timeoutMs / 1000 + " s (last answer: " + last + "); the broker must register the topic"
                    + " (REGISTER_BROKER with its topicConfigTable) after creating it");
            }
            sleep(200);
        }
    }

    static List<MessageQueue> readQueues(TopicRouteData route, String topic) {
        List<MessageQueue> out = new ArrayList<>();
        for (QueueData qd : route.getQueueDatas()) {
            if (PermName.isReadable(qd.getPerm())) {
                for (int i = 0; i < qd.getReadQueueNums(); i++) {
                    out.add(new MessageQueue(topic, qd.getBrokerName(), i));
                }
            }
        }
        Collections.sort(out);
        return out;
    }

    static String masterAddr(TopicRouteData route, String brokerName) {
        for (BrokerData bd : route.getBrokerDatas()) {
            if (bd.getBrokerName().equals(brokerName)) {
                return bd.getBrokerAddrs().get(MixAll.MASTER_ID);
            }
        }
        return null;
    }

    static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    // ------------------------------------------------------------------------------------------
    // Produce
    // ------------------------------------------------------------------------------------------

    boolean produce() throws Exception {
        Map<Integer, SendRecord> recs = new ConcurrentHashMap<>();
        sends = recs;
        Problems problems = new Problems();
        Map<String, Object> ps = new LinkedHashMap<>();
        summary.put("produce", ps);
        DefaultMQProducer p = newProducer(opt, opt.group + "_producer", "producer");
        p.start();
        long t0 = System.currentTimeMillis();
        String failure = null;
        int[] sent = new int[4];
        int batches = 0;
        try {
            // sync: one at a time; offsets per queue and commit log offsets must grow.
            Map<String, Long> lastQueueOffset = new HashMap<>();
            Map<String, Long> lastCommitOffset = new HashMap<>();
            for (int seq = 0; seq < plan.syncEnd; seq++) {
                Message m = plan.message(seq);
                SendResult r;
                try {
                    r = p.send(m);
                } catch (Exception e) {
                    throw new SendFailure(seq, "sync", e);
                }
                SendRecord rec = record(seq, "sync", r, m, problems);
                recs.put(seq, rec);
                Long prev = lastQueueOffset.put(rec.queueKey(), rec.queueOffset());
                if (prev != null && rec.queueOffset() <= prev) {
                    problems.add("sync seq " + seq + ": queueOffset " + rec.queueOffset() + " on " + rec.queueKey()
                        + " not above the previous sync send's " + prev);
                }
                MessageId id = decodeId(rec.offsetMsgId());
                if (id != null) {
                    Long prevPhys = lastCommitOffset.put(String.valueOf(id.getAddress()), id.getOffset());
                    if (prevPhys != null && id.getOffset() <= prevPhys) {
                        problems.add("sync seq " + seq + ": commit log offset " + id.getOffset()
                            + " (from offsetMsgId) not above the previous sync send's " + prevPhys);
                    }
                }
                sent[0]++;
                if (seq == 0) {
                    log("first sync send OK: %s@%d msgId=%s offsetMsgId=%s", rec.queueKey(), rec.queueOffset(),
                        rec.msgId(), rec.offsetMsgId());
                }
            }
            log("sync: %d sent", sent[0]);

            // async: bounded number in flight; wait for every callback.
            int nAsync = plan.asyncEnd - plan.syncEnd;
            CountDownLatch done = new CountDownLatch(nAsync);
            Semaphore inFlight = new Semaphore(opt.asyncInFlight);
            ConcurrentLinkedQueue<String> asyncErrors = new ConcurrentLinkedQueue<>();
            AtomicInteger asyncOk = new AtomicInteger();
            for (int seq = plan.syncEnd; seq < plan.asyncEnd; seq++) {
                if (!asyncErrors.isEmpty()) {
                    break;
                }
                final int s = seq;
                final Message m = plan.message(seq);
                inFlight.acquire();
                try {
                    p.send(m, new SendCallback() {
                        @Override
                        public void onSuccess(SendResult r) {
                            try {
                                recs.put(s, record(s, "async", r, m, problems));
                                asyncOk.incrementAndGet();
                            } catch (RuntimeException e) {
                                asyncErrors.add("async seq " + s + ": " + e.getMessage());
                            } finally {
                                inFlight.release();
                                done.countDown();
                            }
                        }

                        @Override
                        public void onException(Throwable e) {
                            asyncErrors.add(new SendFailure(s, "async", e).getMessage());
                            inFlight.release();
                            done.countDown();
                        }
                    });
                } catch (Exception e) {
                    inFlight.release();
                    done.countDown();
                    asyncErrors.add(new SendFailure(s, "async", e).getMessage());
                }
            }
            if (asyncErrors.isEmpty() && !done.await(p.getSendMsgTimeout() + 60_000L, TimeUnit.MILLISECONDS)) {
                asyncErrors.add("async: " + done.getCount() + " callbacks never came (neither onSuccess nor onException)");
            }
            if (!asyncErrors.isEmpty()) {
                throw new IllegalStateException(asyncErrors.peek() + (asyncErrors.size() > 1
                    ? " (+" + (asyncErrors.size() - 1) + " more async errors)" : ""));
            }
            sent[1] = asyncOk.get();
            log("async: %d sent, all callbacks OK", sent[1]);

            // oneway: no result at all; accounted for by sequence number on the consumer side.
            for (int seq = plan.asyncEnd; seq < plan.onewayEnd; seq++) {
                try {
                    p.sendOneway(plan.message(seq));
                } catch (Exception e) {
                    throw new SendFailure(seq, "oneway", e);
                }
                recs.put(seq, new SendRecord(seq, "oneway", null, -1, -1, null, null));
                sent[2]++;
            }
            log("oneway: %d sent", sent[2]);

            // batch: send(Collection<Message>), SEND_BATCH_MESSAGE.
            for (int start = plan.onewayEnd; start < plan.count; start += plan.batchSize) {
                int end = Math.min(plan.count, start + plan.batchSize);
                List<Message> batch = new ArrayList<>();
                for (int seq = start; seq < end; seq++) {
                    batch.add(plan.message(seq));
                }
                SendResult r;
                try {
                    r = p.send(batch);
                } catch (Exception e) {
                    throw new SendFailure(start, "batch of " + batch.size(), e);
                }
                recordBatch(start, batch, r, recs, problems);
                sent[3] += batch.size();
                batches++;
            }
            log("batch: %d sent in %d batches", sent[3], batches);
        } catch (SendFailure | IllegalStateException e) {
            failure = e.getMessage();
        } finally {
            p.shutdown();
        }
        long elapsed = System.currentTimeMillis() - t0;

        // Two sends must never share a queue offset.
        Map<String, Integer> seenPos = new HashMap<>();
        Map<String, Integer> perQueue = new TreeMap<>();
        for (SendRecord r : new TreeMap<>(recs).values()) {
            if (!r.known()) {
                continue;
            }
            perQueue.merge(r.queueKey(), 1, Integer::sum);
            Integer other = seenPos.put(r.queueKey() + "@" + r.queueOffset(), r.seq());
            if (other != null) {
                problems.add("seq " + other + " and seq " + r.seq() + " both got queue offset " + r.queueKey() + "@"
                    + r.queueOffset());
            }
        }
        ps.put("ok", failure == null && problems.count() == 0);
        ps.put("sync", sent[0]);
        ps.put("async", sent[1]);
        ps.put("oneway", sent[2]);
        ps.put("batch", sent[3]);
        ps.put("batches", batches);
        ps.put("error", failure);
        ps.put("mismatches", problems.count());
        ps.put("mismatchFirst", problems.firstItems());
        ps.put("perQueue", perQueue);
        ps.put("elapsedMs", elapsed);
        if (failure != null) {
            errors.add("produce: " + failure);
            log("produce FAILED: %s", failure);
        } else {
            log("produce: %d messages in %d ms, %d SendResult problems", opt.count, elapsed, problems.count());
        }
        if (opt.stateFile != null) {
            saveState(opt.stateFile, recs);
        }
        return failure == null && problems.count() == 0;
    }

    static final class SendFailure extends RuntimeException {
        private static final long serialVersionUID = 1L;

        SendFailure(int seq, String mode, Throwable e) {
            super(mode + " send of seq " + seq + " failed: " + explain(e), e);
        }
    }

    static String explain(Throwable e) {
        StringBuilder sb = new StringBuilder(e.getClass().getSimpleName());
        if (e instanceof MQBrokerException be) {
            sb.append(" responseCode=").append(be.getResponseCode()).append(" remark=").append(be.getErrorMessage())
                .append(" broker=").append(be.getBrokerAddr());
        } else if (e instanceof MQClientException ce) {
            sb.append(" responseCode=").append(ce.getResponseCode()).append(" ").append(ce.getErrorMessage());
        } else {
            sb.append(": ").append(e.getMessage());
        }
        Throwable cause = e.getCause();
        int depth = 0;
        while (cause != null && depth++ < 4) {
            sb.append(" <- ").append(cause.getClass().getSimpleName()).append(": ").append(cause.getMessage());
            cause = cause.getCause();
        }
        return sb.toString().replace('\n', ' ');
    }

    static MessageId decodeId(String offsetMsgId) {
        if (offsetMsgId == null || (offsetMsgId.length() != 32 && offsetMsgId.length() != 56)) {
            return null;
        }
        try {
            return MessageDecoder.decodeMessageId(offsetMsgId);
        } catch (Exception e) {
            return null;
        }
    }

    /** Checks one SendResult of a single-message send; throws on a hard failure. */
    SendRecord record(int seq, String mode, SendResult r, Message m, Problems problems) {
        if (r == null) {
            throw new IllegalStateException(mode + " seq " + seq + ": null SendResult");
        }
        if (r.getSendStatus() != SendStatus.SEND_OK) {
            throw new IllegalStateException(mode + " seq " + seq + ": status " + r.getSendStatus() + " (" + r + ")");
        }
        MessageQueue q = r.getMessageQueue();
        String p = mode + " seq " + seq + ": ";
        if (q == null || !opt.topic.equals(q.getTopic()) || q.getBrokerName() == null || q.getBrokerName().isEmpty()) {
            problems.add(p + "bad messageQueue " + q);
        }
        String uniq = m.getProperty(MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX);
        if (r.getMsgId() == null || !r.getMsgId().equals(uniq)) {
            problems.add(p + "msgId '" + r.getMsgId() + "' != client id '" + uniq + "'");
        }
        if (decodeId(r.getOffsetMsgId()) == null) {
            problems.add(p + "offsetMsgId '" + r.getOffsetMsgId()
                + "' is not 32 hex digits (store IPv4 + port + commit log offset)");
        }
        if (r.getQueueOffset() < 0) {
            problems.add(p + "queueOffset " + r.getQueueOffset() + " < 0");
        }
        return new SendRecord(seq, mode, q == null ? "?" : q.getBrokerName(), q == null ? -1 : q.getQueueId(),
            r.getQueueOffset(), r.getMsgId(), r.getOffsetMsgId());
    }

    void recordBatch(int start, List<Message> batch, SendResult r, Map<Integer, SendRecord> recs,
                     Problems problems) {
        String p = "batch at seq " + start + ": ";
        if (r == null || r.getSendStatus() != SendStatus.SEND_OK) {
            throw new IllegalStateException(p + "status " + (r == null ? "null" : r.getSendStatus() + " (" + r + ")"));
        }
        MessageQueue q = r.getMessageQueue();
        String[] ids = r.getMsgId() == null ? new String[0] : r.getMsgId().split(",");
        String[] offIds = r.getOffsetMsgId() == null ? new String[0] : r.getOffsetMsgId().split(",");
        if (ids.length != batch.size()) {
            problems.add(p + ids.length + " msgIds for " + batch.size() + " messages");
        }
        if (offIds.length != batch.size()) {
            problems.add(p + "offsetMsgId has " + offIds.length + " comma-separated ids for " + batch.size()
                + " messages (RocketMQ returns one per message)");
        }
        if (r.getQueueOffset() < 0) {
            problems.add(p + "queueOffset " + r.getQueueOffset() + " < 0");
        }
        long prevPhys = -1;
        for (int i = 0; i < batch.size(); i++) {
            int seq = start + i;
            String uniq = batch.get(i).getProperty(MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX);
            String id = i < ids.length ? ids[i] : null;
            if (id != null && !id.equals(uniq)) {
                problems.add(p + "msgId #" + i + " '" + id + "' != client id '" + uniq + "'");
            }
            String offId = offIds.length == batch.size() ? offIds[i] : null;
            MessageId decoded = decodeId(offId);
            if (offId != null && decoded == null) {
                problems.add(p + "offsetMsgId #" + i + " '" + offId + "' does not decode");
            }
            if (decoded != null) {
                if (decoded.getOffset() <= prevPhys) {
                    problems.add(p + "commit log offsets in offsetMsgId not increasing at #" + i);
                }
                prevPhys = decoded.getOffset();
            }
            recs.put(seq, new SendRecord(seq, "batch", q.getBrokerName(), q.getQueueId(), r.getQueueOffset() + i, uniq,
                offId));
        }
    }

    void saveState(Path file, Map<Integer, SendRecord> recs) throws IOException {
        Path parent = file.toAbsolutePath().getParent();
        if (parent != null) {
            Files.createDirectories(parent);
        }
        try (BufferedWriter w = Files.newBufferedWriter(file, StandardCharsets.UTF_8)) {
            w.write("# seq\tmode\tbroker\tqueue\tqueueOffset\tmsgId\toffsetMsgId  (run " + opt.runId + ")\n");
            for (SendRecord r : new TreeMap<>(recs).values()) {
                w.write(r.seq() + "\t" + r.mode() + "\t" + dash(r.brokerName()) + "\t" + r.queueId() + "\t"
                    + r.queueOffset() + "\t" + dash(r.msgId()) + "\t" + dash(r.offsetMsgId()) + "\n");
            }
        }
    }

    static String dash(String s) {
        return s == null ? "-" : s;
    }

    static String undash(String s) {
        return s.equals("-") ? null : s;
    }

    static Map<Integer, SendRecord> loadState(Path file) throws IOException {
        Map<Integer, SendRecord> out = new HashMap<>();
        try (BufferedReader r = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
            String line;
            while ((line = r.readLine()) != null) {
                if (line.startsWith("#") || line.isBlank()) {
                    continue;
                }
                String[] f = line.split("\t");
                int seq = Integer.parseInt(f[0]);
                out.put(seq, new SendRecord(seq, f[1], undash(f[2]), Integer.parseInt(f[3]), Long.parseLong(f[4]),
                    undash(f[5]), undash(f[6])));
            }
        }
        return out;
    }

    // ------------------------------------------------------------------------------------------
    // Admin API: max/min offset, search offset, view by id, query by key / unique id
    // ------------------------------------------------------------------------------------------

    boolean adminPhase(TopicRouteData route) throws Exception {
        Map<String, Object> as = new LinkedHashMap<>();
        summary.put("admin", as);
        Problems problems = new Problems();
        long t0 = System.currentTimeMillis();
        List<MessageQueue> queues = readQueues(route, opt.topic);
        Map<String, Object> offsets = new TreeMap<>();

        // Highest queue offset each queue must have reached, from SendResult.
        Map<String, Long> needMax = new HashMap<>();
        if (sends != null) {
            for (SendRecord r : sends.values()) {
                if (r.known()) {
                    needMax.merge(r.queueKey(), r.queueOffset() + 1, Math::max);
                }
            }
        }
        // Oneway sends may still be in flight: poll until the totals add up (fresh topic) or 10 s.
        long deadline = System.currentTimeMillis() + 10_000;
        long total;
        Map<MessageQueue, long[]> minMax = new HashMap<>();
        while (true) {
            total = 0;
            for (MessageQueue mq : queues) {
                try {
                    long max = admin.maxOffset(mq);
                    long min = admin.minOffset(mq);
                    minMax.put(mq, new long[] {min, max});
                    total += max - min;
                } catch (MQClientException e) {
                    problems.add("GET_MAX/MIN_OFFSET " + mq.getBrokerName() + ":" + mq.getQueueId() + " failed: "
                        + explain(e));
                    minMax.put(mq, new long[] {-1, -1});
                }
            }
            if (!freshTopic || total >= opt.count || System.currentTimeMillis() > deadline || problems.count() > 0) {
                break;
            }
            sleep(200);
        }
        for (MessageQueue mq : queues) {
            long[] mm = minMax.get(mq);
            String key = mq.getBrokerName() + ":" + mq.getQueueId();
            offsets.put(key, List.of(mm[0], mm[1]));
            Long need = needMax.get(key);
            if (need != null && mm[1] < need) {
                problems.add("GET_MAX_OFFSET " + key + " = " + mm[1] + " but SendResult gave offset " + (need - 1));
            }
            if (freshTopic && mm[0] != 0) {
                problems.add("GET_MIN_OFFSET " + key + " = " + mm[0] + " on a fresh topic (expected 0)");
            }
        }
        as.put("queueMinMax", offsets);
        if (freshTopic && opt.phases.contains("produce") && total != opt.count) {
            problems.add("sum over queues of (maxOffset - minOffset) = " + total + ", expected " + opt.count
                + " messages on a fresh topic");
        }

        // SEARCH_OFFSET_BY_TIMESTAMP: any answer within [min, max] is acceptable.
        for (MessageQueue mq : queues) {
            long[] mm = minMax.get(mq);
            try {
                long off = admin.searchOffset(mq, System.currentTimeMillis());
                if (off < mm[0] || off > mm[1]) {
                    problems.add("SEARCH_OFFSET_BY_TIMESTAMP(now) " + mq.getBrokerName() + ":" + mq.getQueueId()
                        + " = " + off + ", outside [" + mm[0] + ", " + mm[1] + "]");
                }
            } catch (MQClientException e) {
                problems.add("SEARCH_OFFSET_BY_TIMESTAMP failed: " + explain(e));
            }
            break; // one queue is enough
        }

        // VIEW_MESSAGE_BY_ID, QUERY_MESSAGE by key and by unique key, on a sample of known sends.
        Recorder view = new Recorder("admin", plan, sends, s -> true, false, 0);
        int viewed = 0;
        int byKey = 0;
        int byUniq = 0;
        if (sends != null) {
            List<SendRecord> sample = new ArrayList<>();
            for (SendRecord r : new TreeMap<>(sends).values()) {
                if (r.offsetMsgId() != null && (r.seq() % Math.max(1, opt.count / 12) == 0 || plan.large(r.seq()))
                    && sample.size() < 16) {
                    sample.add(r);
                }
            }
            long begin = runStart - 60_000;
            for (SendRecord r : sample) {
                try {
                    MessageExt m = admin.viewMessage(r.offsetMsgId());
                    view.accept(toClientView(m, r.brokerName()));
                    viewed++;
                } catch (Exception e) {
                    problems.add("VIEW_MESSAGE_BY_ID seq " + r.seq() + " (" + r.offsetMsgId() + ") failed: " + explain(e));
                }
            }
            for (SendRecord r : sample.subList(0, Math.min(6, sample.size()))) {
                String key = "key-" + r.seq();
                List<MessageExt> found = queryByKey(key, begin, problems);
                if (found == null) {
                    continue;
                }
                if (found.size() != 1) {
                    problems.add("QUERY_MESSAGE key " + key + " found " + found.size() + " messages, expected 1");
                }
                for (MessageExt m : found) {
                    if (plan.parseSeq(m.getBody()) != r.seq()) {
                        problems.add("QUERY_MESSAGE key " + key + " returned " + describe(m.getBody()));
                    }
                }
                byKey++;
            }
            for (SendRecord r : sample.subList(0, Math.min(3, sample.size()))) {
                try {
                    // Straight to QUERY_MESSAGE with _UNIQUE_KEY_QUERY=true: viewMessage(topic, id)
                    // would first try the unique id as an offset id, i.e. a bogus broker address.
                    MessageExt m = admin.getDefaultMQProducerImpl().queryMessageByUniqKey(opt.topic, r.msgId());
                    if (plan.parseSeq(m.getBody()) != r.seq()) {
                        problems.add("viewMessage(topic, uniqId) seq " + r.seq() + " returned " + describe(m.getBody()));
                    }
                    byUniq++;
                } catch (Exception e) {
                    problems.add("QUERY_MESSAGE by unique key seq " + r.seq() + " (" + r.msgId() + ") failed: "
                        + explain(e));
                }
            }
        }
        as.put("viewed", viewed);
        as.put("queriedByKey", byKey);
        as.put("queriedByUniqKey", byUniq);
        for (String m : view.mismatches.firstItems()) {
            problems.add("VIEW_MESSAGE_BY_ID: " + m);
        }
        boolean ok = problems.count() == 0;
        as.put("ok", ok);
        as.put("mismatches", problems.count());
        as.put("mismatchFirst", problems.firstItems());
        as.put("elapsedMs", System.currentTimeMillis() - t0);
        log("admin: %s (%d problems)", ok ? "OK" : "FAILED", problems.count());
        return ok;
    }

    /** QUERY_MESSAGE by key, retrying for a few seconds: the broker may index asynchronously. */
    List<MessageExt> queryByKey(String key, long begin, Problems problems) {
        long deadline = System.currentTimeMillis() + 5000;
        while (true) {
            try {
                QueryResult qr = admin.queryMessage(opt.topic, key, 32, begin, System.currentTimeMillis() + 60_000);
                if (!qr.getMessageList().isEmpty() || System.currentTimeMillis() > deadline) {
                    return qr.getMessageList();
                }
            } catch (Exception e) {
                if (System.currentTimeMillis() > deadline) {
                    problems.add("QUERY_MESSAGE key " + key + " failed: " + explain(e));
                    return null;
                }
            }
            sleep(250);
        }
    }

    /** viewMessage returns a plain MessageExt without broker name; make it look like a pulled one. */
    static MessageExt toClientView(MessageExt m, String brokerName) {
        MessageClientExt c = new MessageClientExt();
        c.setTopic(m.getTopic());
        c.setBody(m.getBody());
        c.setFlag(m.getFlag());
        MessageAccessor.setProperties(c, new HashMap<>(m.getProperties()));
        c.setQueueId(m.getQueueId());
        c.setQueueOffset(m.getQueueOffset());
        c.setBornTimestamp(m.getBornTimestamp());
        c.setStoreTimestamp(m.getStoreTimestamp());
        c.setCommitLogOffset(m.getCommitLogOffset());
        c.setReconsumeTimes(m.getReconsumeTimes());
        c.setBrokerName(m.getBrokerName() != null ? m.getBrokerName() : brokerName);
        // The id made of store host + commit log offset (viewMessage decodes a MessageClientExt).
        c.setOffsetMsgId(m instanceof MessageClientExt ce ? ce.getOffsetMsgId() : m.getMsgId());
        return c;
    }

    // ------------------------------------------------------------------------------------------
    // Push consumers: "*" and "TagA" groups at the same time
    // ------------------------------------------------------------------------------------------

    DefaultMQPushConsumer newPush(String group, String subExpression, Recorder rec) throws MQClientException {
        DefaultMQPushConsumer c = new DefaultMQPushConsumer(group);
        configure(c, opt, "push-" + subExpression.replace('*', 'x'));
        c.setMessageModel(MessageModel.CLUSTERING);
        c.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        c.setPullBatchSize(32);
        c.setConsumeMessageBatchMaxSize(1);
        c.setConsumeThreadMin(4);
        c.setConsumeThreadMax(4);
        c.setPullInterval(0);
        c.subscribe(opt.topic, subExpression);
        c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            for (MessageExt m : msgs) {
                rec.accept(m);
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        return c;
    }

    boolean pushPhase(TopicRouteData route) throws Exception {
        long start = System.currentTimeMillis();
        Map<String, Object> ps = new LinkedHashMap<>();
        summary.put("consume-push", ps);
        String groupAll = opt.group + "_push";
        String groupTag = opt.group + "_push_tagA";
        Recorder all = new Recorder("push", plan, sends, s -> true, true, runStartIfProduced());
        Recorder tagA = new Recorder("push-TagA", plan, sends, s -> Plan.tag(s).equals("TagA"), false,
            runStartIfProduced());
        DefaultMQPushConsumer cAll = newPush(groupAll, "*", all);
        DefaultMQPushConsumer cTag = newPush(groupTag, "TagA", tagA);
        all.startedAt = System.currentTimeMillis();
        cAll.start();
        tagA.startedAt = System.currentTimeMillis();
        cTag.start();
        log("push consumers started: %s (*), %s (TagA)", groupAll, groupTag);
        boolean complete = waitFor(List.of(all, tagA), opt.timeoutMs);
        if (complete) {
            sleep(1000); // let stray duplicates or wrongly filtered messages arrive
        }
        long elapsed = System.currentTimeMillis() - start;
        cAll.shutdown();
        cTag.shutdown();

        Map<String, Object> sAll = all.summary(elapsed);
        Map<String, Object> sTag = tagA.summary(elapsed);
        boolean ok = all.ok() && tagA.ok();
        Map<String, Object> committed = checkCommitted(route, groupAll, all, true);
        Map<String, Object> committedTag = checkCommitted(route, groupTag, tagA, false);
        ok &= Boolean.TRUE.equals(committed.get("ok")) && Boolean.TRUE.equals(committedTag.get("ok"));
        sAll.put("committed", committed);
        sTag.put("committed", committedTag);
        ps.put("ok", ok);
        ps.put("all", sAll);
        ps.put("tagA", sTag);
        firstMessageWarning(all);
        log("push: %s; %s", all.progress(), tagA.progress());
        log("consume-push: %s", ok ? "OK" : "FAILED");
        pushSeen = all.seen;
        return ok;
    }

    Map<Integer, Seen> pushSeen;

    long runStartIfProduced() {
        return opt.phases.contains("produce") ? runStart : 0;
    }

    void firstMessageWarning(Recorder r) {
        long first = r.firstMessageAt.get();
        if (first != 0 && first - r.startedAt > 10_000) {
            warnings.add(r.name + ": first message only " + (first - r.startedAt) / 1000 + " s after start; a consumer"
                + " rebalances at once only when the broker sends NOTIFY_CONSUMER_IDS_CHANGED (40) after its"
                + " HEART_BEAT, otherwise every 20 s");
        }
    }

    boolean waitFor(List<Recorder> recs, long timeoutMs) {
        long deadline = System.currentTimeMillis() + timeoutMs;
        long nextReport = System.currentTimeMillis() + 5000;
        while (true) {
            boolean done = recs.stream().allMatch(Recorder::complete);
            if (done) {
                return true;
            }
            long now = System.currentTimeMillis();
            if (now > deadline) {
                for (Recorder r : recs) {
                    log("timeout: %s", r.progress());
                }
                return false;
            }
            if (now >= nextReport) {
                for (Recorder r : recs) {
                    log("%s", r.progress());
                }
                nextReport = now + 5000;
            }
            sleep(50);
        }
    }

    /**
     * QUERY_CONSUMER_OFFSET for every queue after the consumer shut down (its last offsets go out
     * as oneway UPDATE_CONSUMER_OFFSET, so poll a few seconds). exact: committed offset must be one
     * past the last delivered message; otherwise (tag-filtered group) at least that.
     */
    Map<String, Object> checkCommitted(TopicRouteData route, String group, Recorder rec, boolean exact) {
        Map<String, Object> out = new LinkedHashMap<>();
        Map<String, Object> perQueue = new TreeMap<>();
        List<String> bad = new ArrayList<>();
        long deadline = System.currentTimeMillis() + 10_000;
        while (true) {
            bad.clear();
            perQueue.clear();
            for (MessageQueue mq : readQueues(route, opt.topic)) {
                String key = mq.getBrokerName() + ":" + mq.getQueueId();
                ConcurrentSkipListSet<Long> offs = rec.offsets.get(key);
                long want = offs == null || offs.isEmpty() ? -1 : offs.last() + 1;
                long got;
                String addr = masterAddr(route, mq.getBrokerName());
                try {
                    QueryConsumerOffsetRequestHeader h = new QueryConsumerOffsetRequestHeader();
                    h.setConsumerGroup(group);
                    h.setTopic(opt.topic);
                    h.setQueueId(mq.getQueueId());
                    h.setBname(mq.getBrokerName());
                    got = api.queryConsumerOffset(addr, h, 5000);
                } catch (MQBrokerException e) {
                    got = -1; // QUERY_NOT_FOUND (22) or similar: nothing committed
                } catch (Exception e) {
                    bad.add(key + ": QUERY_CONSUMER_OFFSET failed: " + explain(e));
                    continue;
                }
                perQueue.put(key, got);
                if (want < 0) {
                    continue; // nothing delivered from this queue: any answer is fine
                }
                if (exact ? got != want : got < want) {
                    bad.add(key + ": committed offset " + got + ", expected " + (exact ? "" : ">= ") + want);
                }
            }
            if (bad.isEmpty() || System.currentTimeMillis() > deadline) {
                break;
            }
            sleep(250);
        }
        out.put("ok", bad.isEmpty());
        out.put("perQueue", perQueue);
        if (!bad.isEmpty()) {
            out.put("problems", bad);
        }
        return out;
    }

    // ------------------------------------------------------------------------------------------
    // Lite pull consumer
    // ------------------------------------------------------------------------------------------

    boolean litePhase(TopicRouteData route) throws Exception {
        long start = System.currentTimeMillis();
        Map<String, Object> ls = new LinkedHashMap<>();
        summary.put("consume-lite", ls);
        String group = opt.group + "_lite";
        Recorder rec = new Recorder("lite", plan, sends, s -> true, true, runStartIfProduced());
        DefaultLitePullConsumer c = new DefaultLitePullConsumer(group);
        configure(c, opt, "lite");
        c.setMessageModel(MessageModel.CLUSTERING);
        c.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        c.setAutoCommit(false);
        c.setPullBatchSize(32);
        c.setPollTimeoutMillis(500);
        c.subscribe(opt.topic, "*");
        rec.startedAt = System.currentTimeMillis();
        c.start();
        log("lite pull consumer started: %s", group);
        long deadline = System.currentTimeMillis() + opt.timeoutMs;
        long nextReport = System.currentTimeMillis() + 5000;
        int polls = 0;
        boolean complete = false;
        String failure = null;
        try {
            while (System.currentTimeMillis() < deadline) {
                List<MessageExt> msgs = c.poll(500);
                polls++;
                for (MessageExt m : msgs) {
                    rec.accept(m);
                }
                if (!msgs.isEmpty()) {
                    c.commitSync();
                }
                if (rec.complete()) {
                    complete = true;
                    break;
                }
                if (System.currentTimeMillis() >= nextReport) {
                    log("%s", rec.progress());
                    nextReport = System.currentTimeMillis() + 5000;
                }
            }
            if (complete) {
                // A last short poll for stray duplicates, then persist offsets to the broker now
                // (commitSync only updates the client's offset table in 4.9.x).
                for (MessageExt m : c.poll(500)) {
                    rec.accept(m);
                }
                c.commitSync();
                c.commit(c.assignment(), true);
            } else {
                log("timeout: %s", rec.progress());
            }
        } catch (RuntimeException e) {
            failure = "lite pull consumer: " + explain(e);
            errors.add(failure);
        } finally {
            c.shutdown();
        }
        long elapsed = System.currentTimeMillis() - start;
        Map<String, Object> s = rec.summary(elapsed);
        s.put("polls", polls);
        Map<String, Object> committed = checkCommitted(route, group, rec, true);
        s.put("committed", committed);
        boolean ok = failure == null && rec.ok() && Boolean.TRUE.equals(committed.get("ok"));
        // Push and lite consumers must see every message at the same queue position.
        if (pushSeen != null) {
            int differ = 0;
            List<String> first = new ArrayList<>();
            for (Map.Entry<Integer, Seen> e : rec.seen.entrySet()) {
                Seen other = pushSeen.get(e.getKey());
                if (other != null && (other.queueOffset() != e.getValue().queueOffset()
                    || !other.queueKey().equals(e.getValue().queueKey()))) {
                    differ++;
                    if (first.size() < FIRST_ITEMS) {
                        first.add("seq " + e.getKey() + ": push " + other.queueKey() + "@" + other.queueOffset()
                            + ", lite " + e.getValue().queueKey() + "@" + e.getValue().queueOffset());
                    }
                }
            }
            s.put("positionsDifferFromPush", differ);
            if (differ > 0) {
                s.put("positionsDifferFirst", first);
                ok = false;
            }
        }
        ls.put("ok", ok);
        ls.putAll(s);
        firstMessageWarning(rec);
        log("consume-lite: %s; %s", ok ? "OK" : "FAILED", rec.progress());
        return ok;
    }

    // ------------------------------------------------------------------------------------------
    // Minimal JSON writer (the summary line)
    // ------------------------------------------------------------------------------------------

    static final class Json {
        private Json() {
        }

        static String write(Object v) {
            StringBuilder sb = new StringBuilder();
            write(sb, v);
            return sb.toString();
        }

        private static void write(StringBuilder sb, Object v) {
            if (v == null) {
                sb.append("null");
            } else if (v instanceof String s) {
                string(sb, s);
            } else if (v instanceof Boolean || v instanceof Integer || v instanceof Long) {
                sb.append(v);
            } else if (v instanceof Number n) {
                sb.append(n.doubleValue());
            } else if (v instanceof Map<?, ?> m) {
                sb.append('{');
                boolean first = true;
                for (Map.Entry<?, ?> e : m.entrySet()) {
                    if (!first) {
                        sb.append(',');
                    }
                    first = false;
                    string(sb, String.valueOf(e.getKey()));
                    sb.append(':');
                    write(sb, e.getValue());
                }
                sb.append('}');
            } else if (v instanceof Collection<?> c) {
                sb.append('[');
                boolean first = true;
                for (Object o : c) {
                    if (!first) {
                        sb.append(',');
                    }
                    first = false;
                    write(sb, o);
                }
                sb.append(']');
            } else {
                string(sb, v.toString());
            }
        }

        private static void string(StringBuilder sb, String s) {
            sb.append('"');
            for (int i = 0; i < s.length(); i++) {
                char ch = s.charAt(i);
                switch (ch) {
                    case '"' -> sb.append("\\\"");
                    case '\\' -> sb.append("\\\\");
                    case '\n' -> sb.append("\\n");
                    case '\r' -> sb.append("\\r");
                    case '\t' -> sb.append("\\t");
                    default -> {
                        if (ch < 0x20) {
                            sb.append(String.format(Locale.ROOT, "\\u%04x", (int) ch));
                        } else {
                            sb.append(ch);
                        }
                    }
                }
            }
            sb.append('"');
        }
    }

}
