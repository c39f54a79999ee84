/*
 * A steady load from the official Java client for rmq's fault campaigns (chaos/load.py's
 * JavaLoad): THREADS threads send, without pause, messages whose key and body start are
 * "<run>-j<thread>-<seq>" (the body padded with 'x' to BODY bytes, as chaos.load.body_for
 * makes it), until standard input closes. For every send it prints one line:
 *
 *   ok <key>              SendStatus.SEND_OK
 *   fail <key> <reason>   another status, or the exception's class
 *
 * Usage: java -cp rmq-compat.jar rmq.compat.KeyedLoad NAMESRV TOPIC RUN THREADS BODY
 */
package rmq.compat;

import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.Message;

public final class KeyedLoad {
    private KeyedLoad() {
    }

    static byte[] body(String key, int size) {
        byte[] head = (key + "|").getBytes(StandardCharsets.UTF_8);
        byte[] out = new byte[Math.max(size, head.length)];
        Arrays.fill(out, (byte) 'x');
        System.arraycopy(head, 0, out, 0, head.length);
        return out;
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 5) {
            System.err.println("usage: KeyedLoad NAMESRV TOPIC RUN THREADS BODY");
            System.exit(2);
        }
        String namesrv = args[0];
        String topic = args[1];
        String run = args[2];
        int threads = Integer.parseInt(args[3]);
        int size = Integer.parseInt(args[4]);
        PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
        DefaultMQProducer producer = new DefaultMQProducer("chaos_java_" + run);
        producer.setNamesrvAddr(namesrv);
        producer.setInstanceName("chaos-java-" + run + "-" + ProcessHandle.current().pid());
        producer.setClientIP("127.0.0.1");
        producer.setVipChannelEnabled(false);
        producer.setSendMsgTimeout(3000);
        producer.setRetryTimesWhenSendFailed(2);
        producer.setPollNameServerInterval(1000);
        producer.start();
        AtomicBoolean stop = new AtomicBoolean();
        List<Thread> workers = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            final int thread = t;
            Thread w = new Thread(() -> {
                for (long seq = 0; !stop.get(); seq++) {
                    String key = String.format("%s-j%02d-%08d", run, thread, seq);
                    String line;
                    try {
                        Message m = new Message(topic, null, key, body(key, size));
                        SendResult r = producer.send(m);
                        line = r.getSendStatus() == SendStatus.SEND_OK ? "ok " + key : "fail " + key + " " + r.getSendStatus();
                    } catch (Exception e) {
                        line = "fail " + key + " " + e.getClass().getSimpleName();
                    }
                    synchronized (out) {
                        out.println(line);
                        out.flush();
                    }
                    if (line.startsWith("fail")) {
                        try {
                            Thread.sleep(20); // the broker is down: do not spin
                        } catch (InterruptedException ie) {
                            return;
                        }
                    }
                }
            }, "keyed-load-" + t);
            w.start();
            workers.add(w);
        }
        while (System.in.read() >= 0) {
            // runs until the parent closes our standard input
        }
        stop.set(true);
        for (Thread w : workers) {
            w.join(10_000);
        }
        producer.shutdown();
        out.flush();
    }
}
