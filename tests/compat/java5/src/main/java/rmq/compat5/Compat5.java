/*
 * The RocketMQ 5.x Java client (remoting protocol) against an rmq nameserver and broker, for
 * tests/test_compat_java5.py.
 *
 *   java -jar rmq-compat5-V.jar produce NAMESRV TOPIC RUN COUNT
 *   java -jar rmq-compat5-V.jar consume NAMESRV TOPIC RUN KIND:COUNT,KIND:COUNT,...
 *
 * produce: DefaultMQProducer sends COUNT messages of each kind: "sync" (small bodies, one
 * send each), "batch" (small bodies, send(Collection) in batches of 10), and "zlib", "lz4",
 * "zstd" (bodies over the 4 KiB threshold from producers set to that CompressionType).
 * consume: a DefaultLitePullConsumer that subscribes and polls, a DefaultLitePullConsumer
 * that assigns every queue and seeks to 0, a DefaultMQPushConsumer, and one with the 5.x-only
 * options clientRebalance=false and useHeartbeatV2=true, side by side, must each get every
 * expected (kind, seq) exactly as body(kind, seq) says, byte for byte (the last one is
 * reported apart; -Dcompat5.push5WaitMs bounds how long it is waited for).
 *
 * Every message carries user properties "kind" and "seq" and tag = kind; its body is
 * body(kind, seq), which tests/test_compat_java5.py computes the same way. The last stdout
 * line is a JSON summary; exit 0 = every check passed, 1 = a check failed, 2 = an error. A
 * watchdog ends the JVM after 150 s so a hung client never hangs the test.
 */
package rmq.compat5;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.rocketmq.client.consumer.DefaultLitePullConsumer;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.MQVersion;
import org.apache.rocketmq.common.compression.CompressionType;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;

public final class Compat5 {
    static final long WATCHDOG_MS = 150_000;
    static final long CONSUME_BUDGET_MS = 90_000;

    private Compat5() {
    }

    /** The body of message (kind, seq): mirrored by tests/test_compat_java5.py. */
    static byte[] body(String kind, int seq) {
        boolean big = !kind.equals("sync") && !kind.equals("batch");
        int n = big ? 6000 + (seq * 37) % 2000 : 100 + (seq * 13) % 900;
        byte[] head = (kind + ":" + seq + ":").getBytes(StandardCharsets.US_ASCII);
        byte[] out = Arrays.copyOf(head, head.length + n);
        for (int j = 0; j < n; j++) {
            out[head.length + j] = (byte) ((j * j + seq + j / 7) % 251);
        }
        return out;
    }

    static Message message(String topic, String kind, int seq) {
        Message m = new Message(topic, kind, body(kind, seq));
        m.putUserProperty("kind", kind);
        m.putUserProperty("seq", Integer.toString(seq));
        return m;
    }

    public static void main(String[] args) {
        if (args.length != 5 || !(args[0].equals("produce") || args[0].equals("consume"))) {
            System.err.println("usage: produce NAMESRV TOPIC RUN COUNT | consume NAMESRV TOPIC RUN KIND:N,...");
            System.exit(2);
        }
        // The 5.x client's logback configuration reads rocketmq.log.root (not 4.x's
        // rocketmq.client.logRoot); set it before any RocketMQ class loads.
        String logDir = System.getProperty("rocketmq.log.root");
        if (logDir == null) {
            logDir = System.getProperty("java.io.tmpdir") + "/rmq-compat5-logs/" + args[3];
            System.setProperty("rocketmq.log.root", logDir);
        }
        Thread watchdog = new Thread(() -> {
            try {
                Thread.sleep(WATCHDOG_MS);
            } catch (InterruptedException e) {
                return;
            }
            System.out.println("{\"ok\":false,\"error\":\"watchdog: over " + WATCHDOG_MS / 1000 + " s\"}");
            System.out.flush();
            Runtime.getRuntime().halt(2);
        }, "watchdog");
        watchdog.setDaemon(true);
        watchdog.start();
        Json summary = new Json();
        summary.put("client", MQVersion.getVersionDesc(MQVersion.CURRENT_VERSION));
        summary.put("logDir", logDir);
        int code;
        try {
            boolean ok = args[0].equals("produce")
                ? produce(args[1], args[2], args[3], Integer.parseInt(args[4]), summary)
                : consume(args[1], args[2], args[3], parseExpected(args[4]), summary);
            summary.put("ok", ok);
            code = ok ? 0 : 1;
        } catch (Throwable e) {
            summary.put("ok", false);
            summary.put("error", e.toString());
            e.printStackTrace();
            code = 2;
        }
        System.out.println(summary);
        System.out.flush();
        Runtime.getRuntime().halt(code);
    }

    static Map<String, Integer> parseExpected(String spec) {
        Map<String, Integer> out = new TreeMap<>();
        for (String part : spec.split(",")) {
            String[] kv = part.split(":");
            out.put(kv[0], Integer.parseInt(kv[1]));
        }
        return out;
    }

    static DefaultMQProducer producer(String namesrv, String group, CompressionType type) throws Exception {
        DefaultMQProducer p = new DefaultMQProducer(group);
        p.setNamesrvAddr(namesrv);
        p.setInstanceName(group);
        p.setPollNameServerInterval(1000);
        p.setRetryTimesWhenSendFailed(0);
        p.setCompressType(type);
        p.setCompressMsgBodyOverHowmuch(4096);
        p.start();
        return p;
    }

    static boolean produce(String namesrv, String topic, String run, int count, Json summary) throws Exception {
        List<String> problems = new ArrayList<>();
        Json sent = new Json();
        DefaultMQProducer plain = producer(namesrv, "pg-" + run, CompressionType.ZLIB);
        try {
            for (int seq = 0; seq < count; seq++) {
                check(plain.send(message(topic, "sync", seq)), "sync", seq, problems);
            }
            sent.put("sync", count);
            for (int start = 0; start < count; start += 10) {
                List<Message> batch = new ArrayList<>();
                for (int seq = start; seq < Math.min(count, start + 10); seq++) {
                    batch.add(message(topic, "batch", seq));
                }
                check(plain.send(batch), "batch", start, problems);
            }
            sent.put("batch", count);
            for (int seq = 0; seq < count; seq++) {
                check(plain.send(message(topic, "zlib", seq)), "zlib", seq, problems);
            }
            sent.put("zlib", count);
        } finally {
            plain.shutdown();
        }
        for (CompressionType type : new CompressionType[] {CompressionType.LZ4, CompressionType.ZSTD}) {
            String kind = type.name().toLowerCase();
            DefaultMQProducer p = producer(namesrv, "pg-" + kind + "-" + run, type);
            try {
                for (int seq = 0; seq < count; seq++) {
                    check(p.send(message(topic, kind, seq)), kind, seq, problems);
                }
            } finally {
                p.shutdown();
            }
            sent.put(kind, count);
        }
        summary.put("sent", sent);
        summary.put("problems", problems);
        return problems.isEmpty();
    }

    static void check(SendResult r, String kind, int seq, List<String> problems) {
        if (r.getSendStatus() != SendStatus.SEND_OK) {
            problems.add(kind + " " + seq + ": " + r.getSendStatus());
        }
    }

    /** What one consumer got, checked against the expected (kind, seq) set. */
    static final class Received {
        final String name;
        final Map<String, Integer> expected;
        final Map<String, Integer> counts = new ConcurrentHashMap<>();
        final Map<String, String> sysFlags = new ConcurrentHashMap<>();
        final List<String> mismatches = new ArrayList<>();
        final int total;
        final AtomicReference<String> error = new AtomicReference<>();

        Received(String name, Map<String, Integer> expected) {
            this.name = name;
            this.expected = expected;
            this.total = expected.values().stream().mapToInt(Integer::intValue).sum();
        }

        void add(MessageExt m) {
            String kind = m.getUserProperty("kind");
            String seqText = m.getUserProperty("seq");
            if (kind == null || seqText == null || !expected.containsKey(kind)) {
                mismatch("unexpected message " + m.getMsgId() + " kind=" + kind);
                return;
            }
            int seq = Integer.parseInt(seqText);
            if (!Arrays.equals(m.getBody(), body(kind, seq))) {
                mismatch(kind + " " + seq + ": body differs (" + m.getBody().length + " bytes, sysFlag "
                    + m.getSysFlag() + ")");
            }
            if (!kind.equals(m.getTags())) {
                mismatch(kind + " " + seq + ": tags " + m.getTags());
            }
            counts.merge(kind + ":" + seq, 1, Integer::sum);
            sysFlags.merge(kind, Integer.toString(m.getSysFlag()),
                (a, b) -> Arrays.asList(a.split(" ")).contains(b) ? a : a + " " + b);
        }

        synchronized void mismatch(String what) {
            if (mismatches.size() < 20) {
                mismatches.add(what);
            }
        }

        boolean complete() {
            return counts.size() >= total;
        }

        Json summary() {
            Json j = new Json();
            List<String> missing = new ArrayList<>();
            for (Map.Entry<String, Integer> e : expected.entrySet()) {
                for (int seq = 0; seq < e.getValue(); seq++) {
                    if (!counts.containsKey(e.getKey() + ":" + seq) && missing.size() < 20) {
                        missing.add(e.getKey() + ":" + seq);
                    }
                }
            }
            int duplicates = counts.values().stream().mapToInt(c -> c - 1).sum();
            j.put("received", counts.size());
            j.put("expected", total);
            j.put("duplicates", duplicates);
            j.put("missing", missing);
            j.put("mismatches", new ArrayList<>(mismatches));
            j.put("sysFlags", new TreeMap<>(sysFlags));
            if (error.get() != null) {
                j.put("error", error.get());
            }
            j.put("ok", missing.isEmpty() && mismatches.isEmpty() && error.get() == null);
            return j;
        }
    }

    static boolean consume(String namesrv, String topic, String run, Map<String, Integer> expected, Json summary)
        throws Exception {
        Received liteSub = new Received("lite-subscribe", expected);
        Received liteAssign = new Received("lite-assign", expected);
        Received push = new Received("push", expected);
        Received push5 = new Received("push-5x-options", expected);
        long started = System.currentTimeMillis();
        long deadline = started + CONSUME_BUDGET_MS;

        DefaultMQPushConsumer pc = pushConsumer(namesrv, topic, "cg-push-" + run, push);
        pc.start();
        // 5.x-only options: broker-side rebalance (QUERY_ASSIGNMENT, which rmq answers with
        // REQUEST_CODE_NOT_SUPPORTED: 5.3.1 falls back to rebalancing itself, 5.5.0 logs the error
        // and gets no queue) and heartbeat V2 (fingerprints; rmq does not answer
        // isSupportHeartbeatV2, so the client keeps sending full heartbeats).
        DefaultMQPushConsumer pc5 = pushConsumer(namesrv, topic, "cg-push5-" + run, push5);
        pc5.setClientRebalance(false);
        pc5.setUseHeartbeatV2(true);
        pc5.start();

        Thread subThread = new Thread(() -> {
            DefaultLitePullConsumer c = new DefaultLitePullConsumer("cg-lite-sub-" + run);
            try {
                c.setNamesrvAddr(namesrv);
                c.setInstanceName("lite-sub-" + run);
                c.setPollNameServerInterval(1000);
                c.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
                c.subscribe(topic, "*");
                c.start();
                while (!liteSub.complete() && System.currentTimeMillis() < deadline) {
                    c.poll(1000).forEach(liteSub::add);
                }
                c.commitSync();
            } catch (Throwable e) {
                liteSub.error.set(e.toString());
            } finally {
                c.shutdown();
            }
        }, "lite-subscribe");
        Thread assignThread = new Thread(() -> {
            DefaultLitePullConsumer c = new DefaultLitePullConsumer("cg-lite-assign-" + run);
            try {
                c.setNamesrvAddr(namesrv);
                c.setInstanceName("lite-assign-" + run);
                c.setPollNameServerInterval(1000);
                c.setAutoCommit(false);
                // The first pulls then find messages at once instead of waiting at the end
                // of the queues, and finish before the seeks (see seekWhilePaused).
                c.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
                c.start();
                Collection<MessageQueue> queues = c.fetchMessageQueues(topic);
                c.assign(queues);
                seekWhilePaused(c, queues);
                while (!liteAssign.complete() && System.currentTimeMillis() < deadline) {
                    c.poll(1000).forEach(liteAssign::add);
                }
            } catch (Throwable e) {
                liteAssign.error.set(e.toString());
            } finally {
                c.shutdown();
            }
        }, "lite-assign");
        subThread.start();
        assignThread.start();
        subThread.join(CONSUME_BUDGET_MS + 10_000);
        assignThread.join(CONSUME_BUDGET_MS + 10_000);
        // 5.5.0 dropped the fallback: its consumer never gets a queue. Wait for it only so long.
        long push5Deadline = Math.min(deadline, started + Long.getLong("compat5.push5WaitMs", CONSUME_BUDGET_MS));
        while (System.currentTimeMillis() < deadline
            && !(push.complete() && (push5.complete() || System.currentTimeMillis() > push5Deadline))) {
            TimeUnit.MILLISECONDS.sleep(50);
        }
        pc.shutdown();
        pc5.shutdown();
        boolean ok = true;
        for (Received r : new Received[] {liteSub, liteAssign, push}) {
            Json j = r.summary();
            summary.put(r.name, j);
            ok &= Boolean.TRUE.equals(j.get("ok"));
        }
        // Reported, not part of "ok": the test decides what each client version must do.
        summary.put(push5.name, push5.summary());
        return ok;
    }

    static DefaultMQPushConsumer pushConsumer(String namesrv, String topic, String group, Received into)
        throws Exception {
        DefaultMQPushConsumer pc = new DefaultMQPushConsumer(group);
        pc.setNamesrvAddr(namesrv);
        pc.setInstanceName(group);
        pc.setPollNameServerInterval(1000);
        pc.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        pc.subscribe(topic, "*");
        pc.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            msgs.forEach(into::add);
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        return pc;
    }

    /**
     * seek(mq, 0) on every queue, with pulling paused and the pulls already sent answered. A
     * seek cancels the queue's pull task with an interrupt; an interrupted invokeSync closes the
     * client's one channel to the broker, and a pull task whose first pull after the seek fails
     * that way retries from its old pull offset, not the seek's: the queue's messages are then
     * never read (seen once in CI with 5.5.0). That is the Java client racing with itself
     * (Apache's broker sees the same), so the seek is made while no pull is in flight. A seek's
     * own GET_MIN_OFFSET can still meet a channel closed a moment before; it is retried.
     */
    static void seekWhilePaused(DefaultLitePullConsumer c, Collection<MessageQueue> queues) throws Exception {
        c.pause(queues);
        // Paused tasks stop before their next pull; the pulls in flight find messages from the
        // first offset and are answered within milliseconds.
        TimeUnit.MILLISECONDS.sleep(1500);
        for (MessageQueue mq : queues) {
            for (int attempt = 1; ; attempt++) {
                try {
                    c.seek(mq, 0);
                    break;
                } catch (org.apache.rocketmq.client.exception.MQClientException e) {
                    if (attempt == 5) {
                        throw e;
                    }
                    TimeUnit.MILLISECONDS.sleep(100);
                }
            }
        }
        c.resume(queues);
    }

    /** Just enough JSON for the summary: strings, numbers, booleans, lists, nested maps. */
    static final class Json extends java.util.LinkedHashMap<String, Object> {
        private static final long serialVersionUID = 1L;

        @Override
        public String toString() {
            StringBuilder sb = new StringBuilder();
            write(sb, this);
            return sb.toString();
        }

        static void write(StringBuilder sb, Object v) {
            if (v instanceof Map<?, ?> m) {
                sb.append('{');
                boolean first = true;
                for (Map.Entry<?, ?> e : m.entrySet()) {
                    if (!first) {
                        sb.append(',');
                    }
                    first = false;
                    write(sb, String.valueOf(e.getKey()));
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
            } else if (v instanceof Number || v instanceof Boolean) {
                sb.append(v);
            } else {
                sb.append('"');
                for (char ch : String.valueOf(v).toCharArray()) {
                    if (ch == '"' || ch == '\\') {
                        sb.append('\\').append(ch);
                    } else if (ch < 0x20) {
                        sb.append(String.format("\\u%04x", (int) ch));
                    } else {
                        sb.append(ch);
                    }
                }
                sb.append('"');
            }
        }
    }
}
