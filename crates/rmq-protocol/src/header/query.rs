//! Message lookup headers: by offset message id (VIEW_MESSAGE_BY_ID, 33) and by key
//! (QUERY_MESSAGE, 12).

command_header! {
    /// `ViewMessageRequestHeader`: read the record at a CommitLog offset.
    pub struct ViewMessageRequestHeader {
        /// CommitLog offset (decoded from the offset message id by the client).
        offset: required<i64> = "offset",
    }
}

command_header! {
    /// `QueryMessageRequestHeader`: look a key up in the IndexFile.
    pub struct QueryMessageRequestHeader {
        /// Topic.
        topic: required<String> = "topic",
        /// Message key (KEYS or UNIQ_KEY).
        key: required<String> = "key",
        /// Most results.
        max_num: required<i32> = "maxNum",
        /// Store-time window start (ms).
        begin_timestamp: required<i64> = "beginTimestamp",
        /// Store-time window end (ms).
        end_timestamp: required<i64> = "endTimestamp",
    }
}

command_header! {
    /// `QueryMessageResponseHeader`.
    pub struct QueryMessageResponseHeader {
        /// Last update time of the index used (ms).
        index_last_update_timestamp: required<i64> = "indexLastUpdateTimestamp",
        /// CommitLog offset the index covers up to.
        index_last_update_phyoffset: required<i64> = "indexLastUpdatePhyoffset",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::header::CommandHeader;

    #[test]
    fn query_headers_round_trip() {
        let q = QueryMessageRequestHeader {
            topic: "t".into(),
            key: "k1".into(),
            max_num: 32,
            begin_timestamp: 0,
            end_timestamp: i64::MAX,
        };
        assert_eq!(
            QueryMessageRequestHeader::from_ext_fields(&q.to_ext_fields()).unwrap(),
            q
        );
        let r = QueryMessageResponseHeader {
            index_last_update_timestamp: 1,
            index_last_update_phyoffset: 2,
        };
        assert_eq!(&r.to_ext_fields()["indexLastUpdatePhyoffset"], "2");
        assert_eq!(
            QueryMessageResponseHeader::from_ext_fields(&r.to_ext_fields()).unwrap(),
            r
        );
        let v = ViewMessageRequestHeader { offset: 4096 };
        assert_eq!(
            ViewMessageRequestHeader::from_ext_fields(&v.to_ext_fields()).unwrap(),
            v
        );
    }
}
