// Message trace with the official Apache RocketMQ Java client 4.9.7 (rocketmq-client, on the
// classpath of tests/compat/mqadmin/pom.xml) against an rmq broker with traceTopicEnable=true,
// for tests/test_ops_trace_java.py. Run as a single-file source program:
//
//   java -cp <classpath> TraceCheck.java <namesrv> <topic> <producerGroup> <consumerGroup> <key>
//
// A DefaultMQProducer(group, enableMsgTrace=true) sends one message with tag TagTrace and key
// <key>; a DefaultMQPushConsumer(group, enableMsgTrace=true) consumes it. Both trace through
// their AsyncTraceDispatcher in the background, so the program waits (at most 60 s) until the
// broker's index finds, under the message id in RMQ_SYS_TRACE_TOPIC, the Pub and the SubAfter
// records (decoded with the client's own TraceView), then shuts down. Prints one JSON line
// {"msgId":"...","offsetMsgId":"..."} and exits 0; a failure prints its exception and exits 1.
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.rocketmq.client.QueryResult;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.client.trace.TraceView;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.topic.TopicValidator;

public class TraceCheck {
    public static void main(String[] args) {
        try {
            String namesrv = args[0], topic = args[1];
            DefaultMQProducer producer = new DefaultMQProducer(args[2], true);
            producer.setNamesrvAddr(namesrv);
            producer.setInstanceName(args[2]);
            producer.start();
            DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(args[3], true);
            try {
                SendResult r = producer.send(new Message(topic, "TagTrace", args[4], "traced by java".getBytes()));
                if (r.getSendStatus() != SendStatus.SEND_OK) {
                    throw new IllegalStateException("send status " + r.getSendStatus());
                }
                CountDownLatch received = new CountDownLatch(1);
                consumer.setNamesrvAddr(namesrv);
                consumer.setInstanceName(args[3]);
                consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
                consumer.subscribe(topic, "*");
                consumer.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
                    received.countDown();
                    return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
                });
                consumer.start();
                if (!received.await(60, TimeUnit.SECONDS)) {
                    throw new IllegalStateException("the consumer received nothing");
                }
                long deadline = System.currentTimeMillis() + 60_000;
                while (!traced(producer, r.getMsgId())) {
                    if (System.currentTimeMillis() > deadline) {
                        throw new IllegalStateException("no Pub and SubAfter indexed under " + r.getMsgId());
                    }
                    Thread.sleep(100);
                }
                System.out.println("{\"msgId\":\"" + r.getMsgId() + "\",\"offsetMsgId\":\"" + r.getOffsetMsgId() + "\"}");
            } finally {
                consumer.shutdown();
                producer.shutdown();
            }
            System.exit(0);
        } catch (Throwable t) {
            t.printStackTrace(System.out);
            System.exit(1);
        }
    }

    /** Whether the trace topic's index holds the message's Pub and SubAfter records. */
    static boolean traced(DefaultMQProducer producer, String msgId) throws Exception {
        QueryResult q;
        try {
            q = producer.queryMessage(TopicValidator.RMQ_SYS_TRACE_TOPIC, msgId, 32, 0, System.currentTimeMillis());
        } catch (MQClientException notYet) {
            return false; // "query message by key finished, but no message." until it is indexed
        }
        List<String> types = new ArrayList<>();
        for (MessageExt m : q.getMessageList()) {
            for (TraceView v : TraceView.decodeFromTraceTransData(msgId, m)) {
                types.add(v.getMsgType());
            }
        }
        return types.contains("Pub") && types.contains("SubAfter");
    }
}
