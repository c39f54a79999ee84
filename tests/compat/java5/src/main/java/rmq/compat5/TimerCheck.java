/*
 * Timer messages through the official RocketMQ 5.x remoting Java client (rocketmq-client 5.x):
 * one message each with Message.setDeliverTimeMs(now + 3 s), setDelayTimeSec(3) and
 * setDelayTimeMs(3500), sent synchronously with tags, keys and a user property, then consumed
 * by a DefaultMQPushConsumer; and one with setDelayTimeSec beyond the broker's timerMaxDelaySec,
 * which the broker must refuse (MQBrokerException with its response code and remark).
 *
 * Usage: java -jar rmq-compat5.jar NAMESRV TOPIC LOG_DIR
 * Output: progress on stderr, one JSON line on stdout:
 *   {"refusedCode":13,"refusedRemark":"...","messages":[{"body":..,"due":..,"sent":..,
 *    "store":..,"received":..,"msgIdMatches":..,"tags":..,"keys":..,"color":..,"queueMatches":..}]}
 * Exit status 0 when all three arrived (the caller checks the times), 1 otherwise. A watchdog
 * ends the JVM after 120 s.
 */
package rmq.compat5;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.exception.MQBrokerException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;

public final class TimerCheck {
    private TimerCheck() {
    }

    private record Sent(String body, long due, long sent, SendResult result) {
    }

    private record Got(MessageExt msg, long received) {
    }

    private static String quote(String s) {
        if (s == null) {
            return "null";
        }
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') {
                b.append('\\').append(c);
            } else if (c < 0x20) {
                b.append(String.format("\\u%04x", (int) c));
            } else {
                b.append(c);
            }
        }
        return b.append('"').toString();
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 3) {
            System.err.println("usage: TimerCheck NAMESRV TOPIC LOG_DIR");
            System.exit(2);
        }
        String namesrv = args[0];
        String topic = args[1];
        System.setProperty("rocketmq.client.logRoot", args[2]);
        Thread watchdog = new Thread(() -> {
            try {
                Thread.sleep(120_000);
            } catch (InterruptedException e) {
                return;
            }
            System.err.println("TimerCheck: watchdog fired after 120 s");
            Runtime.getRuntime().halt(3);
        });
        watchdog.setDaemon(true);
        watchdog.start();

        Map<String, Got> got = new ConcurrentHashMap<>();
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer("cg-timer-java5");
        consumer.setNamesrvAddr(namesrv);
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.subscribe(topic, "*");
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            long now = System.currentTimeMillis();
            for (MessageExt m : msgs) {
                got.putIfAbsent(new String(m.getBody()), new Got(m, now));
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumer.start();

        DefaultMQProducer producer = new DefaultMQProducer("pg-timer-java5");
        producer.setNamesrvAddr(namesrv);
        producer.setRetryTimesWhenSendFailed(0);
        producer.setSendMsgTimeout(10_000);
        producer.start();

        List<Sent> sent = new ArrayList<>();
        String[] kinds = {"deliver-ms", "delay-sec", "delay-ms"};
        for (String kind : kinds) {
            Message m = new Message(topic, "TagJ", "key-" + kind, kind.getBytes());
            m.putUserProperty("color", "green");
            long now = System.currentTimeMillis();
            long due;
            switch (kind) {
                case "deliver-ms" -> {
                    due = now + 3000;
                    m.setDeliverTimeMs(due);
                }
                case "delay-sec" -> {
                    due = now + 3000;
                    m.setDelayTimeSec(3);
                }
                default -> {
                    due = now + 3500;
                    m.setDelayTimeMs(3500);
                }
            }
            sent.add(new Sent(kind, due, now, producer.send(m)));
        }
        int refusedCode = -1;
        String refusedRemark = null;
        Message far = new Message(topic, "TagJ", "far".getBytes());
        far.setDelayTimeSec(10_000_000L);
        try {
            producer.send(far);
        } catch (MQBrokerException e) {
            refusedCode = e.getResponseCode();
            refusedRemark = e.getErrorMessage();
        }
        producer.shutdown();

        long deadline = System.currentTimeMillis() + 30_000;
        while (got.size() < sent.size() && System.currentTimeMillis() < deadline) {
            Thread.sleep(50);
        }
        consumer.shutdown();

        StringBuilder out = new StringBuilder();
        out.append("{\"refusedCode\":").append(refusedCode);
        out.append(",\"refusedRemark\":").append(quote(refusedRemark));
        out.append(",\"messages\":[");
        for (int i = 0; i < sent.size(); i++) {
            Sent s = sent.get(i);
            Got g = got.get(s.body());
            if (i > 0) {
                out.append(',');
            }
            out.append("{\"body\":").append(quote(s.body()));
            out.append(",\"due\":").append(s.due()).append(",\"sent\":").append(s.sent());
            if (g != null) {
                MessageExt m = g.msg();
                out.append(",\"store\":").append(m.getStoreTimestamp());
                out.append(",\"received\":").append(g.received());
                out.append(",\"msgIdMatches\":").append(m.getMsgId().equals(s.result().getMsgId()));
                out.append(",\"queueMatches\":")
                    .append(m.getQueueId() == s.result().getMessageQueue().getQueueId());
                out.append(",\"tags\":").append(quote(m.getTags()));
                out.append(",\"keys\":").append(quote(m.getKeys()));
                out.append(",\"color\":").append(quote(m.getUserProperty("color")));
                out.append(",\"timerOutMs\":").append(quote(m.getProperty("TIMER_OUT_MS")));
            }
            out.append('}');
        }
        out.append("]}");
        System.out.println(out);
        System.exit(got.size() == sent.size() ? 0 : 1);
    }
}
