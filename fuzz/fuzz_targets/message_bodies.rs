//! The decoders of message-carrying bodies (`rmq_protocol::message_decoder`): the records
//! of PULL/QUERY/VIEW answers (`decode_messages`, `iter_messages`) and the compact batch of
//! SEND_BATCH_MESSAGE (`decode_batch_entries`, `decode_batch`).
//!
//! Checks, beyond "never panics": the iterator and `decode_messages` agree and the records
//! they read tile the input; a batch that decodes covers the whole input and, re-encoded
//! with `encode_batch_entry`, decodes to the same entries.
#![no_main]

use bytes::{Bytes, BytesMut};
use libfuzzer_sys::fuzz_target;
use rmq_protocol::message_decoder::{
    decode_batch, decode_batch_entries, decode_messages, encode_batch_entry, iter_messages,
    BATCH_ENTRY_FIXED_BYTES,
};

fuzz_target!(|data: &[u8]| {
    let body = Bytes::copy_from_slice(data);

    let walked: Vec<_> = iter_messages(body.clone()).collect();
    let ok = walked.iter().take_while(|m| m.is_ok()).count();
    assert!(
        walked.len() - ok <= 1,
        "the iterator goes on after an error"
    );
    let sizes: usize = walked
        .iter()
        .filter_map(|m| m.as_ref().ok())
        .map(|m| usize::try_from(m.store_size).expect("non-negative TOTALSIZE"))
        .sum();
    assert!(sizes <= data.len());
    match decode_messages(&body) {
        Ok(all) => {
            assert_eq!(all.len(), walked.len());
            assert_eq!(sizes, data.len(), "the records do not tile the body");
        }
        Err(_) => assert!(ok < walked.len()),
    }

    let Ok(entries) = decode_batch_entries(&body) else {
        assert!(decode_batch(&body).is_err());
        return;
    };
    let used: usize = entries
        .iter()
        .map(|e| BATCH_ENTRY_FIXED_BYTES + e.body.len() + e.properties.len())
        .sum();
    assert_eq!(used, data.len(), "the batch entries do not tile the body");
    let mut again = BytesMut::new();
    for e in &entries {
        encode_batch_entry(&mut again, e.flag, &e.body, &e.properties)
            .expect("a decoded entry re-encodes");
    }
    let again = decode_batch_entries(&again.freeze()).expect("a re-encoded batch decodes");
    assert_eq!(again, entries);
    assert_eq!(
        decode_batch(&body).expect("entries decoded").len(),
        entries.len()
    );
});
