//! Transaction op records, the messages of `RMQ_SYS_TRANS_OP_HALF_TOPIC`
//! (`TransactionalMessageBridge.addRemoveTagInTransactionOp` and `fillOpRemoveMap`).
//!
//! When a producer commits or rolls back, the broker writes one op record: tag `d`
//! ([`REMOVE_TAG`]), body = the half message's queue offset as decimal text. The check-back
//! reads them to skip halves that are done. This module is the one encoder (used by the
//! broker's END_TRANSACTION) and the one decoder (used by the Python check-back through
//! `rmq._rmq`).

use crate::properties::{Properties, PropertyKey};

/// Tag of an op record: the half message at the offset in its body is done (`REMOVETAG`).
pub const REMOVE_TAG: &str = "d";

/// Why a message of the op topic is not an op record.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OpRecordError {
    /// Its tag (`tag "x"`, or `no tag`) is not [`REMOVE_TAG`]; Java logs "Found a illegal
    /// tag" and skips it.
    #[error(
        "{0} is not the op record tag \"d\"; the record is skipped (was it written by \
         something other than END_TRANSACTION?)"
    )]
    NotRemoveTag(String),
}

/// The body and properties string of the op record marking the half message at
/// `half_queue_offset` done: body = the offset as decimal text; properties `TAGS=d`,
/// `WAIT=true`.
#[must_use]
pub fn encode(half_queue_offset: i64) -> (String, String) {
    let mut props = Properties::new();
    props.put(PropertyKey::TAGS, REMOVE_TAG);
    props.put(PropertyKey::WAIT_STORE_MSG_OK, "true");
    (half_queue_offset.to_string(), props.encode())
}

/// The half queue offset an op record names. A body that is not a decimal number reads as
/// -1, as Java's `getLong` does (the record then counts as done, below every half).
///
/// # Errors
/// [`OpRecordError::NotRemoveTag`] when `tags` is not [`REMOVE_TAG`].
pub fn decode(tags: Option<&str>, body: &[u8]) -> Result<i64, OpRecordError> {
    if tags != Some(REMOVE_TAG) {
        let found = tags.map_or_else(|| "no tag".to_owned(), |t| format!("tag {t:?}"));
        return Err(OpRecordError::NotRemoveTag(found));
    }
    Ok(std::str::from_utf8(body)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(-1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_encoded_record_decodes_to_its_offset() {
        for offset in [0, 7, i64::MAX] {
            let (body, props) = encode(offset);
            let props = Properties::decode(&props);
            assert_eq!(
                decode(props.get(PropertyKey::TAGS), body.as_bytes()),
                Ok(offset)
            );
            assert_eq!(props.get(PropertyKey::WAIT_STORE_MSG_OK), Some("true"));
        }
        assert_eq!(encode(42).0, "42");
    }

    #[test]
    fn a_wrong_tag_is_an_error_and_a_bad_body_reads_as_minus_one() {
        let e = decode(Some("x"), b"1").unwrap_err();
        assert!(e.to_string().starts_with("tag \"x\" is not"), "{e}");
        let e = decode(None, b"1").unwrap_err();
        assert!(e.to_string().starts_with("no tag is not"), "{e}");
        assert_eq!(decode(Some("d"), b"abc"), Ok(-1));
        assert_eq!(decode(Some("d"), b"\xff"), Ok(-1));
    }
}
