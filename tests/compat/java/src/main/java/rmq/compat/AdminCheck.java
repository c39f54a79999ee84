/*
 * The broker's admin and ordered-consumption request codes through the official RocketMQ Java
 * client (rocketmq-client 4.9.x), so that every body is parsed by the client's own fastjson code:
 *
 *   orderly       a DefaultMQPushConsumer with MessageListenerOrderly consumes 40 messages (10 per
 *                 queue, sent with a queue selector) in queue order; that needs LOCK_BATCH_MQ (41).
 *                 While it runs another client id gets no lock; after its shutdown (UNLOCK_BATCH_MQ,
 *                 42) it gets them all.
 *   orderlyDlq    an orderly consumer with maxReconsumeTimes 2 that always suspends on one message:
 *                 it sees it 3 times (reconsume times 0, 1, 2), then the client sends it to
 *                 %RETRY%<group> with reconsumeTimes 2 and the broker stores it in %DLQ%<group>;
 *                 the rest of its queue is consumed after it, in order.
 *   stats         GET_TOPIC_STATS_INFO (202) and GET_CONSUME_STATS (208) through MQClientAPIImpl.
 *   connections   GET_CONSUMER_CONNECTION_LIST (203) for a running push consumer.
 *   reset         INVOKE_BROKER_TO_RESET_OFFSET (222) to the first message: the broker sends the
 *                 consumer RESET_CONSUMER_CLIENT_OFFSET (220) and it consumes everything again.
 *   config        GET_BROKER_CONFIG (26) and UPDATE_BROKER_CONFIG (25), accepted and refused.
 *
 * Usage: java -cp rmq-compat.jar rmq.compat.AdminCheck NAMESRV BROKER_ADDR TOPIC LOG_DIR
 * Output: progress on stderr, a one-line JSON summary on stdout ({"ok":..,"checks":{..}}); exit
 * status 0 when every check passed, 1 otherwise. A watchdog ends the JVM after 240 s.
 */
package rmq.compat;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;

import com.alibaba.fastjson.JSON;
import org.apache.rocketmq.client.ClientConfig;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.ConsumeOrderlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.consumer.listener.MessageListenerOrderly;
import org.apache.rocketmq.client.exception.MQBrokerException;
import org.apache.rocketmq.client.impl.MQClientAPIImpl;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.MQVersion;
import org.apache.rocketmq.common.admin.ConsumeStats;
import org.apache.rocketmq.common.admin.OffsetWrapper;
import org.apache.rocketmq.common.admin.TopicOffset;
import org.apache.rocketmq.common.admin.TopicStatsTable;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.common.protocol.body.Connection;
import org.apache.rocketmq.common.protocol.body.ConsumerConnection;
import org.apache.rocketmq.common.protocol.body.LockBatchRequestBody;
import org.apache.rocketmq.common.protocol.body.UnlockBatchRequestBody;
import org.apache.rocketmq.common.protocol.heartbeat.ConsumeType;
import org.apache.rocketmq.common.topic.TopicValidator;

public final class AdminCheck {
    static final int QUEUES = 4;
    static final int PER_QUEUE = 10;
    static final long TIMEOUT_MS = 5000;

    final String namesrv;
    final String broker;
    final String topic;
    final Map<String, Object> checks = new LinkedHashMap<>();
    final List<AutoCloseable> open = new ArrayList<>();
    MQClientAPIImpl api;

    AdminCheck(String namesrv, String broker, String topic) {
        this.namesrv = namesrv;
        this.broker = broker;
        this.topic = topic;
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 4) {
            System.err.println("usage: AdminCheck NAMESRV BROKER_ADDR TOPIC LOG_DIR");
            System.exit(2);
        }
        System.setProperty("rocketmq.client.logRoot", args[3]);
        System.setProperty("rocketmq.client.logLevel", "INFO");
        System.setProperty("rocketmq.namesrv.domain", "127.0.0.1");
        System.setProperty("com.rocketmq.sendMessageWithVIPChannel", "false");
        // Rebalance every 2 s instead of 20 s, so a reset queue is picked up again quickly.
        System.setProperty("rocketmq.client.rebalance.waitInterval", "2000");
        Thread watchdog = new Thread(() -> {
            try {
                Thread.sleep(240_000);
            } catch (InterruptedException e) {
                return;
            }
            System.out.println("{\"ok\":false,\"error\":\"watchdog: no result after 240 s\"}");
            Runtime.getRuntime().halt(1);
        }, "admin-check-watchdog");
        watchdog.setDaemon(true);
        watchdog.start();
        AdminCheck c = new AdminCheck(args[0], args[1], args[2]);
        boolean ok = c.run();
        System.out.println(JSON.toJSONString(Map.of("ok", ok, "checks", c.checks)));
        System.out.flush();
        Runtime.getRuntime().halt(ok ? 0 : 1);
    }

    boolean run() {
        try {
            DefaultMQProducer producer = new DefaultMQProducer(topic + "-producer");
            configure(producer, "producer");
            producer.setDefaultTopicQueueNums(QUEUES);
            producer.setCreateTopicKey(TopicValidator.AUTO_CREATE_TOPIC_KEY_TOPIC);
            producer.start();
            open.add(producer::shutdown);
            api = producer.getDefaultMQProducerImpl().getmQClientFactory().getMQClientAPIImpl();
            send(producer);
            step("orderly", this::orderly);
            step("orderlyDlq", this::orderlyDlq);
            step("stats", this::stats);
            step("connectionsAndReset", this::connectionsAndReset);
            step("config", this::config);
        } catch (Throwable t) {
            checks.put("setup", t.toString());
        } finally {
            Collections.reverse(open);
            for (AutoCloseable c : open) {
                try {
                    c.close();
                } catch (Exception ignored) {
                    // best effort
                }
            }
        }
        return checks.values().stream().allMatch("ok"::equals);
    }

    interface Step {
        void run() throws Exception;
    }

    void step(String name, Step s) {
        long t0 = System.currentTimeMillis();
        try {
            s.run();
            checks.put(name, "ok");
        } catch (Throwable t) {
            checks.put(name, t.toString());
        }
        System.err.printf("%s: %s (%d ms)%n", name, checks.get(name), System.currentTimeMillis() - t0);
    }

    static void check(boolean condition, String what) {
        if (!condition) {
            throw new AssertionError(what);
        }
    }

    static void waitFor(BooleanSupplier condition, long timeoutMs, String what) throws InterruptedException {
        long deadline = System.currentTimeMillis() + timeoutMs;
        while (!condition.getAsBoolean()) {
            if (System.currentTimeMillis() > deadline) {
                throw new AssertionError("timed out: " + what);
            }
            Thread.sleep(50);
        }
    }

    static final AtomicInteger INSTANCES = new AtomicInteger();

    void configure(ClientConfig c, String role) {
        c.setNamesrvAddr(namesrv);
        c.setInstanceName("admincheck-" + ProcessHandle.current().pid() + "-" + role + "-" + INSTANCES.incrementAndGet());
        c.setClientIP("127.0.0.1");
        c.setVipChannelEnabled(false);
        c.setPollNameServerInterval(1000);
        c.setHeartbeatBrokerInterval(5000);
        c.setPersistConsumerOffsetInterval(1000);
    }

    void send(DefaultMQProducer producer) throws Exception {
        for (int i = 0; i < QUEUES * PER_QUEUE; i++) {
            Message m = new Message(topic, "TagA", ("order-" + i).getBytes());
            SendResult r = producer.send(m, (mqs, msg, arg) -> mqs.get((Integer) arg % mqs.size()), i, TIMEOUT_MS);
            check(r.getSendStatus() == SendStatus.SEND_OK, "send " + i + ": " + r);
        }
    }

    DefaultMQPushConsumer consumer(String group, String role) throws Exception {
        DefaultMQPushConsumer c = new DefaultMQPushConsumer(group);
        configure(c, role);
        c.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        c.subscribe(topic, "*");
        return c;
    }

    Set<MessageQueue> queues() {
        Set<MessageQueue> mqs = new HashSet<>();
        String brokerName = null;
        try {
            brokerName = api.getTopicStatsInfo(broker, topic, TIMEOUT_MS).getOffsetTable().keySet().iterator().next().getBrokerName();
        } catch (Exception e) {
            throw new AssertionError("GET_TOPIC_STATS_INFO: " + e);
        }
        for (int q = 0; q < QUEUES; q++) {
            mqs.add(new MessageQueue(topic, brokerName, q));
        }
        return mqs;
    }

    Set<MessageQueue> lockAs(String clientId, String group, Set<MessageQueue> mqs) throws Exception {
        LockBatchRequestBody body = new LockBatchRequestBody();
        body.setClientId(clientId);
        body.setConsumerGroup(group);
        body.setMqSet(mqs);
        return api.lockBatchMQ(broker, body, TIMEOUT_MS);
    }

    void orderly() throws Exception {
        String group = topic + "-orderly";
        Map<Integer, List<String>> got = new ConcurrentHashMap<>();
        AtomicInteger count = new AtomicInteger();
        DefaultMQPushConsumer c = consumer(group, "orderly");
        c.registerMessageListener((MessageListenerOrderly) (msgs, ctx) -> {
            for (MessageExt m : msgs) {
                got.computeIfAbsent(m.getQueueId(), k -> Collections.synchronizedList(new ArrayList<>())).add(new String(m.getBody()));
                count.incrementAndGet();
            }
            return ConsumeOrderlyStatus.SUCCESS;
        });
        c.start();
        boolean stopped = false;
        try {
            waitFor(() -> count.get() >= QUEUES * PER_QUEUE, 60_000, "orderly consumer got " + count.get() + " of " + QUEUES * PER_QUEUE);
            for (int q = 0; q < QUEUES; q++) {
                List<String> expected = new ArrayList<>();
                for (int i = q; i < QUEUES * PER_QUEUE; i += QUEUES) {
                    expected.add("order-" + i);
                }
                check(expected.equals(got.get(q)), "queue " + q + " in order: " + got.get(q));
            }
            // The client takes its retry queue once the retry topic's route reaches it (the broker
            // creates that topic at the first heartbeat); only then does it hold an offset there to
            // commit at shutdown, which the stats step expects to see.
            String retry = "%RETRY%" + group;
            waitFor(() -> c.getDefaultMQPushConsumerImpl().getRebalanceImpl().getProcessQueueTable().keySet().stream()
                .anyMatch(mq -> mq.getTopic().equals(retry)), 20_000, "the orderly consumer took a queue of " + retry);
            Set<MessageQueue> mqs = queues();
            check(lockAs("someone-else", group, mqs).isEmpty(), "queues locked by the orderly consumer went to another client");
            c.shutdown();
            stopped = true;
            Set<MessageQueue> after = lockAs("someone-else", group, mqs);
            check(after.equals(mqs), "after the consumer's shutdown (UNLOCK_BATCH_MQ) the queues are free: " + after);
            UnlockBatchRequestBody unlock = new UnlockBatchRequestBody();
            unlock.setClientId("someone-else");
            unlock.setConsumerGroup(group);
            unlock.setMqSet(mqs);
            api.unlockBatchMQ(broker, unlock, TIMEOUT_MS, false);
        } finally {
            if (!stopped) {
                c.shutdown();
            }
        }
    }

    void orderlyDlq() throws Exception {
        String group = topic + "-orderly-dlq";
        String poison = "order-5"; // queue 1, second message
        List<Integer> poisonTries = Collections.synchronizedList(new ArrayList<>());
        List<String> queue1 = Collections.synchronizedList(new ArrayList<>());
        AtomicInteger count = new AtomicInteger();
        DefaultMQPushConsumer c = consumer(group, "orderly-dlq");
        c.setMaxReconsumeTimes(2);
        c.setSuspendCurrentQueueTimeMillis(100);
        c.registerMessageListener((MessageListenerOrderly) (msgs, ctx) -> {
            for (MessageExt m : msgs) {
                String body = new String(m.getBody());
                if (body.equals(poison)) {
                    poisonTries.add(m.getReconsumeTimes());
                    return ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT;
                }
                if (m.getQueueId() == 1) {
                    queue1.add(body);
                }
                count.incrementAndGet();
            }
            return ConsumeOrderlyStatus.SUCCESS;
        });
        c.start();
        try {
            int others = QUEUES * PER_QUEUE - 1;
            waitFor(() -> count.get() >= others, 60_000, "orderly consumer got " + count.get() + " of " + others);
            check(poisonTries.equals(List.of(0, 1, 2)), "the failing message was tried with reconsume times " + poisonTries);
            List<String> expected = new ArrayList<>();
            for (int i = 1; i < QUEUES * PER_QUEUE; i += QUEUES) {
                if (!("order-" + i).equals(poison)) {
                    expected.add("order-" + i);
                }
            }
            check(expected.equals(queue1), "queue 1 in order after the dead letter: " + queue1);
            String dlq = "%DLQ%" + group;
            waitFor(() -> {
                try {
                    TopicStatsTable t = api.getTopicStatsInfo(broker, dlq, TIMEOUT_MS);
                    return t.getOffsetTable().values().stream().mapToLong(TopicOffset::getMaxOffset).sum() == 1;
                } catch (Exception e) {
                    return false;
                }
            }, 20_000, "one message in " + dlq);
        } finally {
            c.shutdown();
        }
    }

    void stats() throws Exception {
        TopicStatsTable t = api.getTopicStatsInfo(broker, topic, TIMEOUT_MS);
        check(t.getOffsetTable().size() == QUEUES, "topic stats queues: " + t.getOffsetTable());
        for (Map.Entry<MessageQueue, TopicOffset> e : t.getOffsetTable().entrySet()) {
            TopicOffset o = e.getValue();
            check(o.getMaxOffset() == PER_QUEUE && o.getMinOffset() == 0 && o.getLastUpdateTimestamp() > 0, "topic stats " + e);
        }
        try {
            api.getTopicStatsInfo(broker, topic + "-missing", TIMEOUT_MS);
            throw new AssertionError("stats of a missing topic did not fail");
        } catch (MQBrokerException e) {
            check(e.getResponseCode() == 17, "missing topic: code " + e.getResponseCode());
        }
        String group = topic + "-orderly";
        // Without a topic: every topic the group committed on, its retry topic included (the
        // orderly step made sure the consumer held its retry queue before it shut down).
        Set<String> expected = Set.of(topic, "%RETRY%" + group);
        Set<String> topics = new HashSet<>();
        StringBuilder last = new StringBuilder();
        try {
            waitFor(() -> {
                try {
                    ConsumeStats all = api.getConsumeStats(broker, group, TIMEOUT_MS);
                    topics.clear();
                    all.getOffsetTable().keySet().forEach(mq -> topics.add(mq.getTopic()));
                    last.setLength(0);
                    last.append(all.getOffsetTable());
                    return all.computeTotalDiff() == 0 && topics.equals(expected);
                } catch (Exception e) {
                    last.setLength(0);
                    last.append(e);
                    return false;
                }
            }, 20_000, "consume stats of the orderly group show everything consumed, on the topic and its retry topic");
        } catch (AssertionError e) {
            throw new AssertionError(e.getMessage() + "; last seen: " + last);
        }
        check(topics.equals(expected), "consume stats topics " + topics);
        ConsumeStats s = api.getConsumeStats(broker, group, topic, TIMEOUT_MS);
        check(s.getOffsetTable().size() == QUEUES, "consume stats of one topic " + s.getOffsetTable().keySet());
        for (Map.Entry<MessageQueue, OffsetWrapper> e : s.getOffsetTable().entrySet()) {
            OffsetWrapper w = e.getValue();
            check(w.getBrokerOffset() == PER_QUEUE && w.getConsumerOffset() == PER_QUEUE && w.getLastTimestamp() > 0, "consume stats " + e);
        }
    }

    void connectionsAndReset() throws Exception {
        String group = topic + "-reset";
        AtomicInteger count = new AtomicInteger();
        DefaultMQPushConsumer c = consumer(group, "reset");
        c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            count.addAndGet(msgs.size());
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        c.start();
        try {
            int total = QUEUES * PER_QUEUE;
            waitFor(() -> count.get() >= total, 60_000, "push consumer got " + count.get() + " of " + total);
            String clientId = c.getDefaultMQPushConsumerImpl().getmQClientFactory().getClientId();
            ConsumerConnection cc = api.getConsumerConnectionList(broker, group, TIMEOUT_MS);
            check(cc.getConnectionSet().size() == 1, "connections: " + cc.getConnectionSet());
            Connection conn = cc.getConnectionSet().iterator().next();
            check(conn.getClientId().equals(clientId), "clientId " + conn.getClientId() + " != " + clientId);
            check(conn.getVersion() == MQVersion.CURRENT_VERSION, "version " + conn.getVersion());
            check(conn.getClientAddr().startsWith("127.0.0.1:"), "clientAddr " + conn.getClientAddr());
            check(cc.getConsumeType() == ConsumeType.CONSUME_PASSIVELY, "consumeType " + cc.getConsumeType());
            check(cc.getSubscriptionTable().containsKey(topic), "subscriptions " + cc.getSubscriptionTable().keySet());
            try {
                api.getConsumerConnectionList(broker, group + "-missing", TIMEOUT_MS);
                throw new AssertionError("connections of a missing group did not fail");
            } catch (MQBrokerException e) {
                check(e.getResponseCode() == 206, "missing group: code " + e.getResponseCode());
            }
            // Wait for the consumer's own commits, so they cannot land after the reset.
            waitFor(() -> {
                try {
                    return api.getConsumeStats(broker, group, topic, TIMEOUT_MS).computeTotalDiff() == 0;
                } catch (Exception e) {
                    return false;
                }
            }, 20_000, "the push consumer committed everything");
            Map<MessageQueue, Long> reset = api.invokeBrokerToResetOffset(broker, topic, group, 0, true, TIMEOUT_MS);
            check(reset.size() == QUEUES && reset.values().stream().allMatch(v -> v == 0), "reset offsets " + reset);
            // The client waits 10 s after RESET_CONSUMER_CLIENT_OFFSET, then pulls again.
            waitFor(() -> count.get() >= 2 * total, 60_000, "after the reset the consumer got " + (count.get() - total) + " of " + total + " again");
        } finally {
            c.shutdown();
        }
    }

    void config() throws Exception {
        Properties p = api.getBrokerConfig(broker, TIMEOUT_MS);
        check(p.getProperty("brokerName") != null && p.getProperty("flushDiskType") != null, "GET_BROKER_CONFIG: " + p.keySet());
        Properties update = new Properties();
        update.setProperty("deleteWhen", "05");
        api.updateBrokerConfig(broker, update, TIMEOUT_MS);
        check("05".equals(api.getBrokerConfig(broker, TIMEOUT_MS).getProperty("deleteWhen")), "deleteWhen after the update");
        Properties refused = new Properties();
        refused.setProperty("brokerName", "renamed");
        try {
            api.updateBrokerConfig(broker, refused, TIMEOUT_MS);
            throw new AssertionError("renaming the broker was accepted");
        } catch (MQBrokerException e) {
            check(e.getResponseCode() == 16 && e.getErrorMessage().contains("brokerName"), "refused update: " + e);
        }
    }
}
