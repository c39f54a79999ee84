"""sendMessage and consumeMessage: the two sub-commands that act as a client, through the
client SDK (``rmq.Producer``, ``rmq.PullConsumer``) rather than hand-built requests."""

from __future__ import annotations

import argparse

from rmq.admin.client import Admin, AdminError
from rmq.admin.command import arg, subcommand
from rmq.admin.commands.message import TOOLS_CONSUMER_GROUP
from rmq.admin.output import Result, message_json, message_lines, parse_timestamp, table

__all__: list[str] = []


@subcommand(
    "sendMessage",
    "Send a message",
    arg("-t", "--topic", required=True, help="topic name"),
    arg("-p", "--body", required=True, help="UTF-8 message body"),
    arg("-k", "--key", help="message key(s), space separated"),
    arg("-c", "--tags", help="message tag"),
    arg("-b", "--broker", help="send to this broker name (with -i)"),
    arg("-i", "--qid", type=int, help="send to this queue id (with -b)"),
)
def send_message(admin: Admin, args: argparse.Namespace) -> Result:
    import rmq

    if (args.broker is None) != (args.qid is None):
        raise AdminError("sendMessage: give both -b brokerName and -i queueId, or neither")
    producer = rmq.Producer(
        "TOOLS_PRODUCER",
        ";".join(admin.namesrv_addrs),
        access_key=admin.access_key,
        secret_key=admin.secret_key,
        **admin.tls.as_kwargs(),
    ).start()
    try:
        msg = rmq.Message(args.topic.strip(), args.body, tags=args.tags, keys=args.key)
        queue = (
            rmq.MessageQueue(args.topic.strip(), args.broker, args.qid)
            if args.broker is not None
            else None
        )
        r = producer.send(msg, queue=queue)
    finally:
        producer.shutdown()
    data = {
        "brokerName": r.queue.broker_name,
        "queueId": r.queue.queue_id,
        "sendStatus": r.status,
        "msgId": r.msg_id,
        "offsetMsgId": r.offset_msg_id,
        "queueOffset": r.queue_offset,
    }
    rows = [(r.queue.broker_name, r.queue.queue_id, r.status, r.msg_id)]
    return Result(data, table(["#Broker Name", "#QID", "#Send Result", "#MsgId"], rows))


@subcommand(
    "consumeMessage",
    "Consume message",
    arg("-t", "--topic", required=True, help="topic name"),
    arg("-b", "--brokerName", help="only this broker's queues"),
    arg("-i", "--queueId", type=int, help="only this queue id"),
    arg("-o", "--offset", type=int, help="start at this queue offset"),
    arg("-g", "--consumerGroup", default=TOOLS_CONSUMER_GROUP, help="consumer group"),
    arg("-s", "--beginTimestamp", help="start at this store time"),
    arg("-e", "--endTimestamp", help="stop at this store time"),
    arg("-c", "--MessageNumber", type=int, default=128, help="most messages (default 128)"),
)
def consume_message(admin: Admin, args: argparse.Namespace) -> Result:
    import rmq

    topic = args.topic.strip()
    consumer = rmq.PullConsumer(
        args.consumerGroup,
        ";".join(admin.namesrv_addrs),
        auto_commit=False,
        access_key=admin.access_key,
        secret_key=admin.secret_key,
        **admin.tls.as_kwargs(),
    ).start()
    try:
        queues = [
            mq
            for mq in consumer.fetch_message_queues(topic)
            if (args.brokerName is None or mq.broker_name == args.brokerName)
            and (args.queueId is None or mq.queue_id == args.queueId)
        ]
        if not queues:
            raise AdminError(f"consumeMessage: topic {topic} has no queue matching -b/-i")
        consumer.assign(queues)
        begin = parse_timestamp(args.beginTimestamp) if args.beginTimestamp else None
        end = parse_timestamp(args.endTimestamp) if args.endTimestamp else None
        for mq in queues:
            if args.offset is not None:
                consumer.seek(mq, args.offset)
            elif begin is not None:
                consumer.seek(mq, consumer.offset_for_timestamp(mq, begin))
            else:
                consumer.seek_to_begin(mq)
        got: list[rmq.StoredMessage] = []
        while len(got) < args.MessageNumber:
            batch = consumer.poll(1000)
            if not batch:
                break
            got.extend(m for m in batch if end is None or m.store_timestamp <= end)
        got = got[: args.MessageNumber]
    finally:
        consumer.shutdown()
    lines = [line for m in got for line in message_lines(m)]
    return Result({"messages": [message_json(m) for m in got]}, lines)
