//! [`MessageExt`]: a stored message as a consumer (or the broker's transaction check) holds
//! it, decoded from a record by [`MessageExt::decode`] with the body shared, not copied, and
//! written back by [`MessageExt::to_record`] through the one encoder.

use std::net::SocketAddr;

use bytes::Bytes;

use super::{
    calc_msg_length, encode_record, DecodedRecord, MessageToStore, RecordError, StoreFields,
    MAX_PROPERTIES_LEN, TOPIC_V2_MAX_LEN,
};
use crate::properties::PropertyKey;
use crate::{create_offset_msg_id, Properties};

/// A stored message as a consumer sees it (`MessageExt`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageExt {
    /// Topic.
    pub topic: String,
    /// Application flag.
    pub flag: i32,
    /// Properties (tags, keys, unique id, …).
    pub properties: Properties,
    /// Body as stored (compressed when `sys_flag` bit 0 is set).
    pub body: Bytes,
    /// Record length in the CommitLog.
    pub store_size: i32,
    /// Masked CRC-32 of the body.
    pub body_crc: i32,
    /// Queue.
    pub queue_id: i32,
    /// ConsumeQueue offset.
    pub queue_offset: i64,
    /// CommitLog offset.
    pub commit_log_offset: i64,
    /// `MessageSysFlag` bits.
    pub sys_flag: i32,
    /// Producer-side creation time (ms).
    pub born_timestamp: i64,
    /// Producer address.
    pub born_host: SocketAddr,
    /// Store time (ms).
    pub store_timestamp: i64,
    /// Broker address.
    pub store_host: SocketAddr,
    /// Delivery attempts so far.
    pub reconsume_times: i32,
    /// Half-message offset, for transaction commit/rollback records.
    pub prepared_transaction_offset: i64,
    /// Offset message id (store host + CommitLog offset).
    pub msg_id: String,
    /// Why a client left `body` as stored although `sys_flag` marks it compressed (unknown
    /// compression type, corrupt or oversized data); always `None` from the decoder.
    pub body_error: Option<String>,
}

impl MessageExt {
    /// Decode the record at the start of `record` (which may run past it); the body is a
    /// slice of `record`.
    ///
    /// # Errors
    /// As [`DecodedRecord::parse`], and [`RecordError::NotUtf8`] for PROPERTIES.
    pub fn decode(record: &Bytes) -> Result<Self, RecordError> {
        let r = DecodedRecord::parse(record)?;
        let properties = Properties::decode(r.properties_str()?);
        // parse read TOTALSIZE from an i32 and found it non-negative.
        let store_size = i32::try_from(r.total_size).map_err(|_| RecordError::BadLength {
            field: "TOTALSIZE",
            value: i64::try_from(r.total_size).unwrap_or(i64::MAX),
            max: i32::MAX as usize,
        })?;
        Ok(Self {
            topic: r.topic.to_owned(),
            flag: r.flag,
            properties,
            body: record.slice_ref(r.body),
            store_size,
            body_crc: r.body_crc,
            queue_id: r.queue_id,
            queue_offset: r.queue_offset,
            commit_log_offset: r.physical_offset,
            sys_flag: r.sys_flag,
            born_timestamp: r.born_timestamp,
            born_host: r.born_host,
            store_timestamp: r.store_timestamp,
            store_host: r.store_host,
            reconsume_times: r.reconsume_times,
            prepared_transaction_offset: r.prepared_transaction_offset,
            msg_id: create_offset_msg_id(r.store_host, r.physical_offset),
            body_error: None,
        })
    }

    /// This message as a CommitLog record (host-family bits of `sys_flag` set from the
    /// addresses, TOTALSIZE computed; `store_size` and `msg_id` are not read). For answers
    /// that carry a record without a store (CHECK_TRANSACTION_STATE), tests and tools.
    ///
    /// # Errors
    /// [`RecordError::TooLong`] for a topic or properties string over 32767 bytes or a
    /// record of 2 GiB or more.
    pub fn to_record(&self) -> Result<Bytes, RecordError> {
        let props = self.properties.encode();
        let too_long = |field, len, max| RecordError::TooLong { field, len, max };
        if self.topic.len() > TOPIC_V2_MAX_LEN {
            return Err(too_long("TOPIC", self.topic.len(), TOPIC_V2_MAX_LEN));
        }
        if props.len() > MAX_PROPERTIES_LEN {
            return Err(too_long("PROPERTIES", props.len(), MAX_PROPERTIES_LEN));
        }
        let msg = MessageToStore {
            topic: &self.topic,
            queue_id: self.queue_id,
            flag: self.flag,
            body: &self.body,
            properties: props.as_bytes(),
            sys_flag: self.sys_flag,
            born_timestamp: self.born_timestamp,
            born_host: self.born_host,
            reconsume_times: self.reconsume_times,
            prepared_transaction_offset: self.prepared_transaction_offset,
        };
        let sys_flag = msg.effective_sys_flag(&self.store_host);
        let len = calc_msg_length(sys_flag, self.body.len(), self.topic.len(), props.len());
        if i32::try_from(len).is_err() {
            return Err(too_long("record", len, i32::MAX as usize));
        }
        let fields = StoreFields {
            queue_offset: self.queue_offset,
            physical_offset: self.commit_log_offset,
            store_timestamp: self.store_timestamp,
            store_host: self.store_host,
            body_crc: self.body_crc,
            sys_flag,
        };
        let mut buf = vec![0u8; len];
        encode_record(&mut buf, &msg, &fields);
        Ok(Bytes::from(buf))
    }

    /// The producer-assigned unique id (`UNIQ_KEY`), if any.
    #[must_use]
    pub fn uniq_msg_id(&self) -> Option<&str> {
        self.properties
            .get(PropertyKey::UNIQ_CLIENT_MESSAGE_ID_KEYIDX)
    }

    /// The id a Java consumer shows (`MessageClientExt.getMsgId`): the unique id when set,
    /// else the offset id.
    #[must_use]
    pub fn client_msg_id(&self) -> &str {
        self.uniq_msg_id().unwrap_or(&self.msg_id)
    }

    /// The `TAGS` property.
    #[must_use]
    pub fn tags(&self) -> Option<&str> {
        self.properties.get(PropertyKey::TAGS)
    }

    /// The `KEYS` property.
    #[must_use]
    pub fn keys(&self) -> Option<&str> {
        self.properties.get(PropertyKey::KEYS)
    }
}
