/*
 * The official RocketMQ Java client (rocketmq-client 4.9.x) through a master's outage: a
 * DefaultMQPushConsumer of TOPIC in GROUP from the first offset, one message at a time and at
 * most two waiting per queue, whose listener holds the first message until the driver says
 * "go" (tests/test_ha_failover.py kills the master meanwhile, so the rest must be pulled from
 * the slave); offsets are persisted every second (to the slave while the master is gone:
 * findBrokerAddressInAdmin) and routes refreshed every 2 s.
 *
 * Usage: java -cp rmq-compat.jar rmq.compat.FailoverCheck NAMESRV TOPIC GROUP LOG_DIR
 * Protocol: prints "got BODY" on stdout for every message consumed; reads "go" (release the
 * first message) and "quit" (shut down, which persists the offsets, and exit) from stdin.
 */
package rmq.compat;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.MessageExt;

public final class FailoverCheck {
    private FailoverCheck() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 4) {
            System.err.println("usage: FailoverCheck NAMESRV TOPIC GROUP LOG_DIR");
            System.exit(2);
        }
        System.setProperty("rocketmq.client.logRoot", args[3]);
        System.setProperty("rocketmq.client.logUseSlf4j", "false");
        CountDownLatch go = new CountDownLatch(1);
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(args[2]);
        consumer.setNamesrvAddr(args[0]);
        consumer.setInstanceName("failover-" + ProcessHandle.current().pid());
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.setConsumeThreadMin(1);
        consumer.setConsumeThreadMax(1);
        consumer.setPullBatchSize(1);
        consumer.setPullThresholdForQueue(1);
        consumer.setPersistConsumerOffsetInterval(1000);
        consumer.setPollNameServerInterval(2000);
        consumer.subscribe(args[1], "*");
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
            for (MessageExt m : msgs) {
                synchronized (System.out) {
                    System.out.println("got " + new String(m.getBody(), StandardCharsets.UTF_8));
                    System.out.flush();
                }
            }
            try {
                go.await(60, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumer.start();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.equals("go")) {
                go.countDown();
            } else if (line.equals("quit")) {
                break;
            }
        }
        go.countDown();
        consumer.shutdown();
        System.exit(0);
    }
}
