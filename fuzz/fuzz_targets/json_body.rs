//! The lenient JSON reader (`rmq_protocol::json_compat`) on the body types that arrive from
//! other processes: brokers' registrations, clients' heartbeats and lock requests, routes
//! and stats read by clients and the admin tool.
//!
//! Input: one selector byte (which body type), then the body. Checks, beyond "never
//! panics": a body that parses is written back (`to_json_bytes`) as one that parses to the
//! same value; `to_standard_json`'s output is standard JSON (a second pass leaves it as
//! it is); standard JSON passes `normalize` unchanged.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rmq_protocol::body::{
    ClusterInfo, ConsumeStats, ConsumeStatsList, ConsumerConnection,
    ConsumerOffsetSerializeWrapper, HeartbeatData, KvTable, LockBatchRequestBody,
    QueryConsumeQueueResponseBody, RegisterBrokerBody, ResetOffsetBody, SubscriptionGroupConfig,
    SubscriptionGroupWrapper, TopicConfigSerializeWrapper, TopicList, TopicRouteData,
    TopicStatsTable, UnlockBatchRequestBody,
};
use rmq_protocol::{json_compat, RemotingJson};

/// How many body types the selector byte chooses from (`seed` writes one seed per type).
const JSON_BODY_TYPES: u8 = 18;

fn round_trip<T: RemotingJson + PartialEq + std::fmt::Debug>(body: &[u8]) {
    let Ok(v) = T::from_json_bytes(body) else {
        return;
    };
    let written = v.to_json_bytes().expect("a parsed body serializes");
    let again = T::from_json_bytes(&written).unwrap_or_else(|e| {
        panic!(
            "{} written as {:?} does not read back: {e}",
            T::TYPE_NAME,
            String::from_utf8_lossy(&written)
        )
    });
    assert_eq!(again, v, "{} changed on a write and read", T::TYPE_NAME);
}

fuzz_target!(|data: &[u8]| {
    let Some((&selector, body)) = data.split_first() else {
        return;
    };
    match selector % JSON_BODY_TYPES {
        0 => round_trip::<TopicRouteData>(body),
        1 => round_trip::<HeartbeatData>(body),
        2 => round_trip::<RegisterBrokerBody>(body),
        3 => round_trip::<TopicConfigSerializeWrapper>(body),
        4 => round_trip::<ClusterInfo>(body),
        5 => round_trip::<TopicList>(body),
        6 => round_trip::<ConsumeStats>(body),
        7 => round_trip::<TopicStatsTable>(body),
        8 => round_trip::<LockBatchRequestBody>(body),
        9 => round_trip::<UnlockBatchRequestBody>(body),
        10 => round_trip::<SubscriptionGroupConfig>(body),
        11 => round_trip::<SubscriptionGroupWrapper>(body),
        12 => round_trip::<ConsumerOffsetSerializeWrapper>(body),
        13 => round_trip::<KvTable>(body),
        14 => round_trip::<ResetOffsetBody>(body),
        15 => round_trip::<ConsumerConnection>(body),
        16 => round_trip::<QueryConsumeQueueResponseBody>(body),
        _ => round_trip::<ConsumeStatsList>(body),
    }
    let Ok(text) = std::str::from_utf8(body) else {
        return;
    };
    if let Ok(standard) = json_compat::to_standard_json(text) {
        // Standard JSON: read again it needs no rewriting. (Not "serde_json::Value parses
        // it": JSON's grammar has no range for numbers, and `1e999` is JSON that Value
        // refuses; the fuzzer found that on its first run.)
        let again = json_compat::to_standard_json(&standard)
            .unwrap_or_else(|e| panic!("to_standard_json's output {standard:?} is refused: {e}"));
        assert_eq!(
            again, standard,
            "to_standard_json's output was rewritten again"
        );
    }
    if serde_json::from_str::<serde_json::Value>(text).is_ok() {
        assert_eq!(
            json_compat::normalize(text),
            text,
            "standard JSON was rewritten"
        );
    }
});
