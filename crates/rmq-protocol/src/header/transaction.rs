//! Transaction headers: the producer ends a half message (END_TRANSACTION, 37); the broker
//! asks a producer about one it has not heard back on (CHECK_TRANSACTION_STATE, 39).

command_header! {
    /// `EndTransactionRequestHeader`.
    pub struct EndTransactionRequestHeader {
        /// Producer group.
        producer_group: required<String> = "producerGroup",
        /// ConsumeQueue offset of the half message.
        tran_state_table_offset: required<i64> = "tranStateTableOffset",
        /// CommitLog offset of the half message.
        commit_log_offset: required<i64> = "commitLogOffset",
        /// `MessageSysFlag` commit (8), rollback (12) or not-type (0, unknown).
        commit_or_rollback: required<i32> = "commitOrRollback",
        /// Answer to a broker check rather than the producer's own decision.
        from_transaction_check: defaulted<bool> = "fromTransactionCheck",
        /// Message id.
        msg_id: required<String> = "msgId",
        /// Transaction id.
        transaction_id: optional<String> = "transactionId",
        /// Broker the request is meant for.
        broker_name: optional<String> = "bname",
    }
}

command_header! {
    /// `CheckTransactionStateRequestHeader` (broker → producer, oneway).
    pub struct CheckTransactionStateRequestHeader {
        /// ConsumeQueue offset of the half message.
        tran_state_table_offset: required<i64> = "tranStateTableOffset",
        /// CommitLog offset of the half message.
        commit_log_offset: required<i64> = "commitLogOffset",
        /// Unique message id.
        msg_id: optional<String> = "msgId",
        /// Transaction id.
        transaction_id: optional<String> = "transactionId",
        /// Offset message id.
        offset_msg_id: optional<String> = "offsetMsgId",
        /// Broker the request is meant for.
        broker_name: optional<String> = "bname",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::header::CommandHeader;

    #[test]
    fn transaction_headers_round_trip() {
        let e = EndTransactionRequestHeader {
            producer_group: "pg".into(),
            tran_state_table_offset: 3,
            commit_log_offset: 4096,
            commit_or_rollback: 8,
            from_transaction_check: true,
            msg_id: "m".into(),
            transaction_id: Some("tx".into()),
            broker_name: None,
        };
        assert_eq!(
            EndTransactionRequestHeader::from_ext_fields(&e.to_ext_fields()).unwrap(),
            e
        );
        let c = CheckTransactionStateRequestHeader {
            tran_state_table_offset: 3,
            commit_log_offset: 4096,
            msg_id: Some("u".into()),
            transaction_id: None,
            offset_msg_id: Some("o".into()),
            broker_name: None,
        };
        assert_eq!(
            CheckTransactionStateRequestHeader::from_ext_fields(&c.to_ext_fields()).unwrap(),
            c
        );
    }
}
