// The load generator of benches/vs_apache (issue 18), on the official RocketMQ 4.9 Java
// client, so rmq and Apache RocketMQ are driven by the same code. Three modes, each printing one
// JSON line on stdout (progress and client noise go to stderr):
//
//   sync    -n ADDR -t TOPIC -w THREADS [-s BYTES] (-d SECONDS | -c COUNT) [--warmup SECONDS]
//           THREADS threads share one producer and send one message at a time, synchronously
//           (as Apache's benchmark Producer does). Bodies are BYTES long ('a'..'z' repeated)
//           and always sent uncompressed (the client compresses bodies over 4 KiB by
//           default, which would turn a 64 KiB or 1 MiB bench into a zlib bench).
//   batch   the same with -b MESSAGES per send (Apache's BatchProducer: a list per send).
//   consume -n ADDR -t TOPIC -g GROUP -c COUNT [--timeout SECONDS]
//           a push consumer from the first offset whose listener does nothing; counts until
//           COUNT messages arrived (seconds run from the first message to the COUNT-th).
//
// A failed send is counted with its reason (digits masked, so "[TIMEOUT_CLEAN_QUEUE] broker
// busy ... period in queue: 206ms" is one reason), never fatal: the run goes on. All modes
// print "# measure start" and "# measure end" lines around the measured window (after the
// warm-up) so that the caller can sample the broker's CPU time over exactly that window.
package rmq.vsapache;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import org.HdrHistogram.Histogram;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.exception.MQBrokerException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;

public final class LoadGen {
    private static final long MAX_LATENCY_US = TimeUnit.SECONDS.toMicros(60);
    static final String MEASURE_START = "# measure start";
    static final String MEASURE_END = "# measure end";

    private LoadGen() {}

    /** Command-line options: "-x value" pairs after the mode. */
    private static final class Options {
        final String mode;
        final Map<String, String> values = new TreeMap<>();

        Options(String[] args) {
            if (args.length == 0) {
                throw new IllegalArgumentException("usage: LoadGen sync|batch|consume -n ADDR -t TOPIC ...");
            }
            mode = args[0];
            for (int i = 1; i < args.length; i += 2) {
                if (i + 1 >= args.length) {
                    throw new IllegalArgumentException("option " + args[i] + " needs a value");
                }
                values.put(args[i], args[i + 1]);
            }
        }

        String get(String key, String fallback) {
            String v = values.get(key);
            if (v == null && fallback == null) {
                throw new IllegalArgumentException("missing option " + key);
            }
            return v == null ? fallback : v;
        }

        long getLong(String key, long fallback) {
            return Long.parseLong(get(key, Long.toString(fallback)));
        }

        double getDouble(String key, double fallback) {
            return Double.parseDouble(get(key, Double.toString(fallback)));
        }
    }

    public static void main(String[] args) throws Exception {
        Options o;
        try {
            o = new Options(args);
            switch (o.mode) {
                case "sync" -> send(o, 1);
                case "batch" -> send(o, (int) o.getLong("-b", 16));
                case "consume" -> consume(o);
                default -> throw new IllegalArgumentException("unknown mode " + o.mode + " (sync, batch, consume)");
            }
        } catch (IllegalArgumentException e) {
            System.err.println("LoadGen: " + e.getMessage());
            System.exit(2);
        }
        System.exit(0);
    }

    /** A failure's reason with digits masked and the client's help URL cut off. */
    static String reason(Throwable e) {
        String text;
        if (e instanceof MQBrokerException be) {
            text = "code " + be.getResponseCode() + " " + be.getErrorMessage();
        } else {
            text = e.getClass().getSimpleName() + " " + e.getMessage();
        }
        int cut = text.indexOf("\nSee ");
        if (cut < 0) {
            cut = text.indexOf(", see http");
        }
        if (cut >= 0) {
            text = text.substring(0, cut);
        }
        text = text.replaceAll("\\d+", "N").replace('\n', ' ').strip();
        return text.length() > 160 ? text.substring(0, 160) : text;
    }

    private static void send(Options o, int batch) throws Exception {
        String namesrv = o.get("-n", null);
        String topic = o.get("-t", null);
        int threads = (int) o.getLong("-w", 32);
        int size = (int) o.getLong("-s", 1024);
        double duration = o.getDouble("-d", 0);
        long count = o.getLong("-c", 0);
        double warmup = o.getDouble("--warmup", 0);
        if ((duration > 0) == (count > 0)) {
            throw new IllegalArgumentException("give exactly one of -d SECONDS and -c COUNT");
        }

        DefaultMQProducer producer = new DefaultMQProducer(o.get("-g", "vs_apache_producer"));
        producer.setNamesrvAddr(namesrv);
        producer.setInstanceName("vs_apache_" + ProcessHandle.current().pid());
        producer.setSendMsgTimeout((int) o.getLong("--timeout-ms", 3000));
        producer.setCompressMsgBodyOverHowmuch(Integer.MAX_VALUE);
        producer.setMaxMessageSize(Math.max(producer.getMaxMessageSize(), size));
        producer.start();
        byte[] body = new byte[size];
        for (int i = 0; i < size; i++) {
            body[i] = (byte) ('a' + i % 26);
        }
        // The route and the connection are made before the clock starts.
        producer.send(new Message(topic, body));

        Map<String, LongAdder> failures = new ConcurrentHashMap<>();
        AtomicLong remaining = new AtomicLong(count > 0 ? count : Long.MAX_VALUE);
        long startNs = System.nanoTime();
        long measureFromNs = startNs + (long) (warmup * 1e9);
        long stopNs = duration > 0 ? measureFromNs + (long) (duration * 1e9) : Long.MAX_VALUE;
        List<Histogram> histograms = new ArrayList<>();
        long[] sent = new long[threads];
        CountDownLatch done = new CountDownLatch(threads);
        // The markers let the caller sample the broker's CPU time over the measured window only.
        Thread marker = new Thread(() -> {
            try {
                Thread.sleep(Math.max(0, (measureFromNs - System.nanoTime()) / 1_000_000));
            } catch (InterruptedException e) {
                return;
            }
            System.out.println(MEASURE_START);
            System.out.flush();
        }, "marker");
        marker.setDaemon(true);
        marker.start();
        for (int t = 0; t < threads; t++) {
            Histogram h = new Histogram(MAX_LATENCY_US, 3);
            histograms.add(h);
            int index = t;
            Thread thread = new Thread(() -> {
                try {
                    List<Message> msgs = new ArrayList<>(batch);
                    for (int i = 0; i < batch; i++) {
                        msgs.add(new Message(topic, body));
                    }
                    while (true) {
                        long begin = System.nanoTime();
                        if (begin >= stopNs || remaining.addAndGet(-batch) < 0) {
                            return;
                        }
                        boolean measured = begin >= measureFromNs;
                        try {
                            SendResult r = batch == 1 ? producer.send(msgs.get(0)) : producer.send(msgs);
                            long us = (System.nanoTime() - begin) / 1000;
                            if (!measured) {
                                continue;
                            }
                            h.recordValue(Math.min(us, MAX_LATENCY_US));
                            if (r.getSendStatus() == SendStatus.SEND_OK) {
                                sent[index] += batch;
                            } else {
                                failures.computeIfAbsent("status " + r.getSendStatus(), k -> new LongAdder()).add(batch);
                            }
                        } catch (Exception e) {
                            if (measured) {
                                failures.computeIfAbsent(reason(e), k -> new LongAdder()).add(batch);
                            }
                        }
                    }
                } finally {
                    done.countDown();
                }
            }, "send-" + t);
            thread.setDaemon(true);
            thread.start();
        }
        done.await();
        System.out.println(MEASURE_END);
        System.out.flush();
        double seconds = (System.nanoTime() - Math.max(startNs, Math.min(measureFromNs, System.nanoTime()))) / 1e9;
        producer.shutdown();

        Histogram all = new Histogram(MAX_LATENCY_US, 3);
        for (Histogram h : histograms) {
            all.add(h);
        }
        long messages = 0;
        for (long n : sent) {
            messages += n;
        }
        StringBuilder json = new StringBuilder();
        json.append("{\"mode\": \"").append(o.mode).append("\", \"threads\": ").append(threads)
            .append(", \"batch\": ").append(batch).append(", \"size\": ").append(size)
            .append(", \"messages\": ").append(messages)
            .append(", \"seconds\": ").append(String.format("%.3f", seconds))
            .append(", \"msgs_per_s\": ").append(String.format("%.1f", messages / seconds))
            .append(", \"latency_ms\": {")
            .append("\"p50\": ").append(ms(all.getValueAtPercentile(50)))
            .append(", \"p99\": ").append(ms(all.getValueAtPercentile(99)))
            .append(", \"p99.9\": ").append(ms(all.getValueAtPercentile(99.9)))
            .append(", \"max\": ").append(ms(all.getMaxValue()))
            .append("}, ");
        appendFailures(json, failures);
        json.append("}");
        System.out.println(json);
    }

    private static String ms(long us) {
        return String.format("%.3f", us / 1000.0);
    }

    private static void appendFailures(StringBuilder json, Map<String, LongAdder> failures) {
        long total = 0;
        StringBuilder reasons = new StringBuilder();
        for (Map.Entry<String, LongAdder> e : new TreeMap<>(failures).entrySet()) {
            total += e.getValue().sum();
            if (reasons.length() > 0) {
                reasons.append(", ");
            }
            reasons.append('"').append(e.getKey().replace("\\", "\\\\").replace("\"", "\\\""))
                .append("\": ").append(e.getValue().sum());
        }
        json.append("\"failures\": ").append(total).append(", \"failure_reasons\": {").append(reasons).append('}');
    }

    private static void consume(Options o) throws Exception {
        String namesrv = o.get("-n", null);
        String topic = o.get("-t", null);
        long count = o.getLong("-c", 0);
        double timeout = o.getDouble("--timeout", 600);
        if (count <= 0) {
            throw new IllegalArgumentException("consume needs -c COUNT > 0");
        }
        AtomicLong received = new AtomicLong();
        AtomicLong firstNs = new AtomicLong();
        AtomicLong lastNs = new AtomicLong();
        CountDownLatch reached = new CountDownLatch(1);
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(o.get("-g", "vs_apache_consumer_" + System.currentTimeMillis()));
        consumer.setNamesrvAddr(namesrv);
        consumer.setInstanceName("vs_apache_" + ProcessHandle.current().pid());
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.subscribe(topic, "*");
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
            long now = System.nanoTime();
            firstNs.compareAndSet(0, now);
            long n = received.addAndGet(msgs.size());
            if (n >= count && lastNs.compareAndSet(0, now)) {
                reached.countDown();
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        System.out.println(MEASURE_START);
        System.out.flush();
        long startNs = System.nanoTime();
        consumer.start();
        boolean complete = reached.await((long) (timeout * 1000), TimeUnit.MILLISECONDS);
        System.out.println(MEASURE_END);
        System.out.flush();
        long endNs = complete ? lastNs.get() : System.nanoTime();
        consumer.shutdown();
        long first = firstNs.get() == 0 ? endNs : firstNs.get();
        double seconds = (endNs - first) / 1e9;
        long messages = Math.min(received.get(), count);
        System.out.println("{\"mode\": \"consume\", \"messages\": " + messages
            + ", \"complete\": " + complete
            + ", \"seconds\": " + String.format("%.3f", seconds)
            + ", \"msgs_per_s\": " + String.format("%.1f", seconds > 0 ? messages / seconds : 0.0)
            + ", \"start_to_first_s\": " + String.format("%.3f", (first - startNs) / 1e9)
            + ", \"failures\": 0, \"failure_reasons\": {}}");
    }
}
