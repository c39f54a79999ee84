//! Protocol versions: the `version` field of a command is the ordinal of the sender's
//! `MQVersion.Version` enum constant. Peers switch behaviour on it (a nameserver answers
//! standard JSON to clients at or above 4.9.4; a broker honours `maxReconsumeTimes` from
//! clients at or above 3.4.9), so these ordinals are part of the protocol.

/// `V3_4_9`: from here the send-back header's `maxReconsumeTimes` is honoured.
pub const V3_4_9: i32 = 121;
/// `V4_9_4`: from here nameservers send route data as standard JSON.
pub const V4_9_4: i32 = 401;
/// `V4_9_8`: the newest 4.x release; what rmq announces.
pub const V4_9_8: i32 = 409;
/// The version rmq puts in the commands it creates.
pub const CURRENT_VERSION: i32 = V4_9_8;
