//! Send path headers. SEND_MESSAGE (10) carries [`SendMessageRequestHeader`] with full
//! field names; SEND_MESSAGE_V2 (310) and SEND_BATCH_MESSAGE (320) carry
//! [`SendMessageRequestHeaderV2`], the same fields under one-letter names `a`..`n` (shorter
//! to write and parse). The broker converts V2 to V1 and handles one shape.

use crate::command::ExtFields;
use crate::error::Result;
use crate::header::CommandHeader;

command_header! {
    /// `SendMessageRequestHeader` (SEND_MESSAGE, 10).
    pub struct SendMessageRequestHeader {
        /// Producer group (transaction checks go back to it).
        producer_group: required<String> = "producerGroup",
        /// Target topic.
        topic: required<String> = "topic",
        /// Template topic for auto-creation (`TBW102`).
        default_topic: required<String> = "defaultTopic",
        /// Queue count for an auto-created topic.
        default_topic_queue_nums: required<i32> = "defaultTopicQueueNums",
        /// Target queue.
        queue_id: required<i32> = "queueId",
        /// `MessageSysFlag` bits (compressed, multi-tags, transaction type).
        sys_flag: required<i32> = "sysFlag",
        /// Producer-side creation time (ms).
        born_timestamp: required<i64> = "bornTimestamp",
        /// Application flag.
        flag: required<i32> = "flag",
        /// Encoded properties string.
        properties: optional<String> = "properties",
        /// Delivery attempts so far (retries sent as new messages).
        reconsume_times: optional<i32> = "reconsumeTimes",
        /// Unit mode.
        unit_mode: defaulted<bool> = "unitMode",
        /// Body is a batch (`MessageDecoder.encodeMessages`).
        batch: defaulted<bool> = "batch",
        /// Maximum redeliveries before DLQ.
        max_reconsume_times: optional<i32> = "maxReconsumeTimes",
        /// Broker the request is meant for (`RpcRequestHeader.bname`).
        broker_name: optional<String> = "bname",
    }
}

command_header! {
    /// `SendMessageRequestHeaderV2` (SEND_MESSAGE_V2 310, SEND_BATCH_MESSAGE 320): the V1
    /// fields under one-letter keys.
    pub struct SendMessageRequestHeaderV2 {
        /// producerGroup.
        a: required<String> = "a",
        /// topic.
        b: required<String> = "b",
        /// defaultTopic.
        c: required<String> = "c",
        /// defaultTopicQueueNums.
        d: required<i32> = "d",
        /// queueId.
        e: required<i32> = "e",
        /// sysFlag.
        f: required<i32> = "f",
        /// bornTimestamp.
        g: required<i64> = "g",
        /// flag.
        h: required<i32> = "h",
        /// properties.
        i: optional<String> = "i",
        /// reconsumeTimes.
        j: optional<i32> = "j",
        /// unitMode.
        k: defaulted<bool> = "k",
        /// maxReconsumeTimes.
        l: optional<i32> = "l",
        /// batch.
        m: defaulted<bool> = "m",
        /// brokerName (bname).
        n: optional<String> = "n",
    }
}

impl From<SendMessageRequestHeaderV2> for SendMessageRequestHeader {
    fn from(v2: SendMessageRequestHeaderV2) -> Self {
        Self {
            producer_group: v2.a,
            topic: v2.b,
            default_topic: v2.c,
            default_topic_queue_nums: v2.d,
            queue_id: v2.e,
            sys_flag: v2.f,
            born_timestamp: v2.g,
            flag: v2.h,
            properties: v2.i,
            reconsume_times: v2.j,
            unit_mode: v2.k,
            max_reconsume_times: v2.l,
            batch: v2.m,
            broker_name: v2.n,
        }
    }
}

impl From<SendMessageRequestHeader> for SendMessageRequestHeaderV2 {
    fn from(v1: SendMessageRequestHeader) -> Self {
        Self {
            a: v1.producer_group,
            b: v1.topic,
            c: v1.default_topic,
            d: v1.default_topic_queue_nums,
            e: v1.queue_id,
            f: v1.sys_flag,
            g: v1.born_timestamp,
            h: v1.flag,
            i: v1.properties,
            j: v1.reconsume_times,
            k: v1.unit_mode,
            l: v1.max_reconsume_times,
            m: v1.batch,
            n: v1.broker_name,
        }
    }
}

impl SendMessageRequestHeader {
    /// Read the send header of a send request as `SendMessageProcessor.parseRequestHeader`
    /// does: V2 letters for SEND_MESSAGE_V2 (310) and SEND_BATCH_MESSAGE (320), V1 names
    /// otherwise (SEND_MESSAGE, 10).
    ///
    /// # Errors
    /// As [`CommandHeader::from_ext_fields`].
    pub fn from_request(code: i32, fields: &ExtFields) -> Result<Self> {
        use crate::code::RequestCode;
        if code == RequestCode::SEND_MESSAGE_V2.0 || code == RequestCode::SEND_BATCH_MESSAGE.0 {
            SendMessageRequestHeaderV2::from_ext_fields(fields).map(Into::into)
        } else {
            Self::from_ext_fields(fields)
        }
    }
}

command_header! {
    /// `SendMessageResponseHeader`: where the message was stored.
    pub struct SendMessageResponseHeader {
        /// Offset message id (store host + CommitLog offset), or for a batch the ids joined
        /// by commas.
        msg_id: required<String> = "msgId",
        /// Queue the message went to.
        queue_id: required<i32> = "queueId",
        /// Its ConsumeQueue offset.
        queue_offset: required<i64> = "queueOffset",
        /// Transaction id, for half messages.
        transaction_id: optional<String> = "transactionId",
        /// Unique ids of a batch (5.x brokers).
        batch_uniq_id: optional<String> = "batchUniqId",
    }
}

command_header! {
    /// `ConsumerSendMsgBackRequestHeader` (CONSUMER_SEND_MSG_BACK, 36): put a failed message
    /// back for retry, or in the DLQ.
    pub struct ConsumerSendMsgBackRequestHeader {
        /// CommitLog offset of the failed message.
        offset: required<i64> = "offset",
        /// Consumer group.
        group: required<String> = "group",
        /// Delay level for the retry; 0 lets the broker choose, negative means DLQ now.
        delay_level: required<i32> = "delayLevel",
        /// Original message id.
        origin_msg_id: optional<String> = "originMsgId",
        /// Original topic.
        origin_topic: optional<String> = "originTopic",
        /// Unit mode.
        unit_mode: defaulted<bool> = "unitMode",
        /// Redeliveries before DLQ (clients >= 3.4.9).
        max_reconsume_times: optional<i32> = "maxReconsumeTimes",
        /// Broker the request is meant for.
        broker_name: optional<String> = "bname",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v1() -> SendMessageRequestHeader {
        SendMessageRequestHeader {
            producer_group: "pg".into(),
            topic: "TopicTest".into(),
            default_topic: "TBW102".into(),
            default_topic_queue_nums: 4,
            queue_id: 2,
            sys_flag: 0,
            born_timestamp: 1_700_000_000_000,
            flag: 0,
            properties: Some("TAGS\u{1}A\u{2}".into()),
            reconsume_times: Some(0),
            unit_mode: false,
            batch: true,
            max_reconsume_times: None,
            broker_name: Some("broker-a".into()),
        }
    }

    #[test]
    fn v1_round_trip_and_java_keys() {
        let h = v1();
        let ext = h.to_ext_fields();
        let keys: Vec<&str> = ext.keys().collect();
        assert_eq!(
            keys,
            [
                "batch",
                "bname",
                "bornTimestamp",
                "defaultTopic",
                "defaultTopicQueueNums",
                "flag",
                "producerGroup",
                "properties",
                "queueId",
                "reconsumeTimes",
                "sysFlag",
                "topic",
                "unitMode"
            ]
        );
        assert_eq!(SendMessageRequestHeader::from_ext_fields(&ext).unwrap(), h);
    }

    #[test]
    fn v2_letters_and_conversion() {
        let h = v1();
        let v2 = SendMessageRequestHeaderV2::from(h.clone());
        let ext = v2.to_ext_fields();
        assert_eq!(&ext["a"], "pg");
        assert_eq!(&ext["b"], "TopicTest");
        assert_eq!(&ext["d"], "4");
        assert_eq!(&ext["g"], "1700000000000");
        assert_eq!(&ext["m"], "true");
        assert_eq!(&ext["n"], "broker-a");
        assert!(!ext.contains_key("l"));
        let back = SendMessageRequestHeader::from_request(310, &ext).unwrap();
        assert_eq!(back, h);
        assert_eq!(SendMessageRequestHeaderV2::from(back), v2);
        assert_eq!(
            SendMessageRequestHeader::from_request(10, &h.to_ext_fields()).unwrap(),
            h
        );
    }

    #[test]
    fn v2_missing_letter_is_named() {
        let mut ext = SendMessageRequestHeaderV2::from(v1()).to_ext_fields();
        ext.remove("e");
        assert_eq!(
            SendMessageRequestHeader::from_request(320, &ext).unwrap_err(),
            crate::error::ProtocolError::MissingField { field: "e" }
        );
    }

    #[test]
    fn response_and_send_back_round_trip() {
        let r = SendMessageResponseHeader {
            msg_id: "0A01020300002A9F0000000000001234".into(),
            queue_id: 1,
            queue_offset: 99,
            transaction_id: None,
            batch_uniq_id: None,
        };
        assert_eq!(
            SendMessageResponseHeader::from_ext_fields(&r.to_ext_fields()).unwrap(),
            r
        );
        let b = ConsumerSendMsgBackRequestHeader {
            offset: 1234,
            group: "g".into(),
            delay_level: 0,
            origin_msg_id: Some("id".into()),
            origin_topic: Some("t".into()),
            unit_mode: false,
            max_reconsume_times: Some(16),
            broker_name: None,
        };
        assert_eq!(
            ConsumerSendMsgBackRequestHeader::from_ext_fields(&b.to_ext_fields()).unwrap(),
            b
        );
    }
}
