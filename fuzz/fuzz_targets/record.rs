//! The CommitLog record decoder (`rmq_common::record`): `scan_record` as recovery walks a
//! file, `DecodedRecord::parse`, and `MessageExt::decode` as a consumer reads a pull body.
//!
//! Checks, beyond "never panics": a record that scans lies within the input and at least
//! `MIN_RECORD_BYTES` long, the scan and the parser agree, CRC checking only ever turns a
//! record into `CrcMismatch`, and a decoded message written back with `to_record` decodes to
//! the same message.
#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use rmq_common::record::MIN_RECORD_BYTES;
use rmq_common::record::{scan_record, DecodedRecord, MessageExt, RecordError, Scan};

fuzz_target!(|data: &[u8]| {
    let unchecked = scan_record(data, false);
    let checked = scan_record(data, true);
    match (&unchecked, &checked) {
        (Scan::Message(a), Scan::Message(b)) => assert_eq!(a, b),
        (Scan::Message(_), Scan::Invalid(RecordError::CrcMismatch { .. })) => {}
        (Scan::Blank, Scan::Blank) => {}
        (Scan::Invalid(a), Scan::Invalid(b)) => assert_eq!(a, b),
        (a, b) => panic!("CRC checking changed {a:?} into {b:?}"),
    }
    if let Scan::Message(r) = &unchecked {
        assert!(r.total_size >= MIN_RECORD_BYTES && r.total_size <= data.len());
        assert_eq!(DecodedRecord::parse(data).as_ref(), Ok(r));
    }

    let bytes = Bytes::copy_from_slice(data);
    let Ok(m) = MessageExt::decode(&bytes) else {
        return;
    };
    let Scan::Message(r) = &unchecked else {
        panic!("MessageExt::decode read a record that scan_record did not: {m:?}");
    };
    assert_eq!(usize::try_from(m.store_size).ok(), Some(r.total_size));
    let record = m.to_record().expect("a decoded message re-encodes");
    let mut again = MessageExt::decode(&record).expect("a re-encoded message decodes");
    again.store_size = m.store_size;
    assert_eq!(again, m, "decode(to_record(m)) != m");
});
