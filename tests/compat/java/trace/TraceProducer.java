// Message trace with the official Apache RocketMQ Java client 4.9.7 (rocketmq-client, on the
// classpath of tests/compat/mqadmin/pom.xml) against an rmq broker with traceTopicEnable=true,
// for tests/test_ops_trace_java.py. Run as a single-file source program:
//
//   java -cp <classpath> TraceProducer.java <namesrv> <topic> <group> <key>
//
// A DefaultMQProducer(group, enableMsgTrace=true) sends one message with tag TagTrace and key
// <key>, waits until the broker's index finds a message under the message id in
// RMQ_SYS_TRACE_TOPIC (the Pub record its AsyncTraceDispatcher sends in the background; at
// most 60 s), and shuts down. Prints one JSON line {"msgId":"...","offsetMsgId":"..."} and exits 0;
// a failure prints its exception and exits 1.
import org.apache.rocketmq.client.QueryResult;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.topic.TopicValidator;

public class TraceProducer {
    public static void main(String[] args) {
        try {
            DefaultMQProducer producer = new DefaultMQProducer(args[2], true);
            producer.setNamesrvAddr(args[0]);
            producer.setInstanceName(args[2]);
            producer.start();
            SendResult r;
            try {
                r = producer.send(new Message(args[1], "TagTrace", args[3], "traced by java".getBytes()));
                long deadline = System.currentTimeMillis() + 60_000;
                while (true) {
                    try {
                        QueryResult q = producer.queryMessage(
                            TopicValidator.RMQ_SYS_TRACE_TOPIC, r.getMsgId(), 32, 0, System.currentTimeMillis());
                        if (!q.getMessageList().isEmpty()) {
                            break;
                        }
                    } catch (MQClientException notYet) {
                        // "query message by key finished, but no message." until it is indexed
                    }
                    if (System.currentTimeMillis() > deadline) {
                        throw new IllegalStateException("no trace message was indexed under " + r.getMsgId());
                    }
                    Thread.sleep(100);
                }
            } finally {
                producer.shutdown();
            }
            if (r.getSendStatus() != SendStatus.SEND_OK) {
                throw new IllegalStateException("send status " + r.getSendStatus());
            }
            System.out.println("{\"msgId\":\"" + r.getMsgId() + "\",\"offsetMsgId\":\"" + r.getOffsetMsgId() + "\"}");
            System.exit(0);
        } catch (Throwable t) {
            t.printStackTrace(System.out);
            System.exit(1);
        }
    }
}
