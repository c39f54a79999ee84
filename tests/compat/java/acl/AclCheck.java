// ACL 1.0 check with the official Apache RocketMQ Java client 4.9.7 (rocketmq-client and
// rocketmq-acl, on the classpath of tests/compat/mqadmin/pom.xml) against an rmq broker with
// aclEnable=true, for tests/test_sec_acl_java.py. Run as a single-file source program:
//
//   java -cp <classpath> AclCheck.java <namesrv> <topic> <group> <count> <ak> <sk> <subAk> <subSk>
//
// 1. a producer with AclClientRPCHook(new SessionCredentials(ak, sk)) sends <count> messages;
// 2. a push consumer with the same hook consumes them all;
// 3. a producer whose account only has SUB, one with a wrong secret and one without
//    credentials each try one send and must get MQBrokerException NO_PERMISSION (16).
// Prints one JSON line: {"sent":N,"received":N,"subOnly":[code,"remark"],"wrongSecret":[...],
// "unsigned":[...]} and exits 0; a failure prints its exception and exits 1.
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.apache.rocketmq.acl.common.AclClientRPCHook;
import org.apache.rocketmq.acl.common.SessionCredentials;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueAveragely;
import org.apache.rocketmq.client.exception.MQBrokerException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.remoting.RPCHook;

public class AclCheck {
    static String namesrv;

    static DefaultMQProducer producer(String group, RPCHook hook) throws Exception {
        DefaultMQProducer p = hook == null ? new DefaultMQProducer(group) : new DefaultMQProducer(group, hook);
        p.setNamesrvAddr(namesrv);
        p.setInstanceName(group);
        p.setRetryTimesWhenSendFailed(0);
        p.start();
        return p;
    }

    static String refused(String group, RPCHook hook, String topic) throws Exception {
        DefaultMQProducer p = producer(group, hook);
        try {
            SendResult r = p.send(new Message(topic, "refused".getBytes()));
            throw new IllegalStateException(group + ": the send was accepted: " + r);
        } catch (Exception e) {
            // The producer wraps the broker's answer in MQClientException once its retries are done.
            for (Throwable t = e; t != null; t = t.getCause()) {
                if (t instanceof MQBrokerException) {
                    MQBrokerException b = (MQBrokerException) t;
                    return "[" + b.getResponseCode() + "," + quote(b.getErrorMessage()) + "]";
                }
            }
            throw e;
        } finally {
            p.shutdown();
        }
    }

    static String quote(String s) {
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
        namesrv = args[0];
        String topic = args[1];
        String group = args[2];
        int count = Integer.parseInt(args[3]);
        RPCHook hook = new AclClientRPCHook(new SessionCredentials(args[4], args[5]));
        try {
            DefaultMQProducer p = producer("acl_producer", hook);
            int sent = 0;
            for (int i = 0; i < count; i++) {
                SendResult r = p.send(new Message(topic, "acl", "k" + i, ("m" + i).getBytes()));
                if (r.getSendStatus() == SendStatus.SEND_OK) {
                    sent++;
                }
            }
            p.shutdown();

            Set<String> seen = ConcurrentHashMap.newKeySet();
            DefaultMQPushConsumer c = new DefaultMQPushConsumer(group, hook, new AllocateMessageQueueAveragely());
            c.setNamesrvAddr(namesrv);
            c.setInstanceName("acl_consumer");
            c.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
            c.subscribe(topic, "*");
            c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
                for (MessageExt m : msgs) {
                    seen.add(new String(m.getBody()));
                }
                return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
            });
            c.start();
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (seen.size() < count && System.nanoTime() < deadline) {
                Thread.sleep(100);
            }
            c.shutdown();

            String subOnly = refused("acl_sub_only", new AclClientRPCHook(new SessionCredentials(args[6], args[7])), topic);
            String wrong = refused("acl_wrong", new AclClientRPCHook(new SessionCredentials(args[4], "wrong-secret")), topic);
            String unsigned = refused("acl_unsigned", null, topic);
            System.out.println("{\"sent\":" + sent + ",\"received\":" + seen.size()
                + ",\"subOnly\":" + subOnly + ",\"wrongSecret\":" + wrong + ",\"unsigned\":" + unsigned + "}");
            System.exit(0);
        } catch (Throwable t) {
            t.printStackTrace(System.out);
            System.exit(1);
        }
    }
}
