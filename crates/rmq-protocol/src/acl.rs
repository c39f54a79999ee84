//! ACL 1.0 request signatures, as Java's `AclClientRPCHook` makes them and RocketMQ 4.x brokers
//! check them: the values of every header field except `Signature`, in the order of their
//! keys, then the body, signed with HMAC-SHA1 under the account's secret key and sent in
//! Base64. Clients sign with [`sign_request`]; a server recomputes [`signature`] over what it
//! received and compares with [`signature_matches`]. Pure, no I/O: both sides use this one
//! definition.
//!
//! Keys are ordered by their bytes, which is Java's `TreeMap<String, …>` order for every header
//! field name RocketMQ has (all ASCII). The signature carries no nonce and no time: a captured
//! request can be replayed (see SECURITY.md).

use base64::Engine as _;
use hmac::{Hmac, Mac};
use sha1::Sha1;

use crate::RemotingCommand;

/// Header field naming the account (`SessionCredentials.ACCESS_KEY`).
pub const ACCESS_KEY: &str = "AccessKey";
/// Header field carrying the Base64 HMAC-SHA1 (`SessionCredentials.SIGNATURE`).
pub const SIGNATURE: &str = "Signature";
/// Optional header field carrying a security token (`SessionCredentials.SECURITY_TOKEN`).
pub const SECURITY_TOKEN: &str = "SecurityToken";

/// An account's credentials as a client holds them. `Debug` never prints the secret.
#[derive(Clone, PartialEq, Eq)]
pub struct SessionCredentials {
    /// The account name (`accessKey` in plain_acl.yml).
    pub access_key: String,
    /// The signing key (`secretKey`); never logged.
    pub secret_key: String,
    /// Sent as `SecurityToken` when set, and signed with the rest.
    pub security_token: Option<String>,
}

impl SessionCredentials {
    /// Credentials without a security token.
    #[must_use]
    pub fn new(access_key: impl Into<String>, secret_key: impl Into<String>) -> Self {
        Self {
            access_key: access_key.into(),
            secret_key: secret_key.into(),
            security_token: None,
        }
    }
}

impl std::fmt::Debug for SessionCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionCredentials")
            .field("access_key", &self.access_key)
            .field("secret_key", &"<redacted>")
            .field(
                "security_token",
                &self.security_token.as_ref().map(|_| "<redacted>"),
            )
            .finish()
    }
}

/// The signature of `cmd` under `secret_key`: HMAC-SHA1 over the concatenated values of its
/// header fields other than `Signature` (by key order) and its body, in standard Base64.
///
/// # Panics
/// Never: HMAC takes keys of any length.
#[must_use]
pub fn signature(cmd: &RemotingCommand, secret_key: &str) -> String {
    let mut mac = Hmac::<Sha1>::new_from_slice(secret_key.as_bytes())
        .expect("HMAC accepts keys of any length");
    for (key, value) in cmd.ext_fields.iter() {
        if key != SIGNATURE {
            mac.update(value.as_bytes());
        }
    }
    if let Some(body) = &cmd.body {
        mac.update(body);
    }
    base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes())
}

/// Whether `cmd`'s `Signature` field is the one `secret_key` gives, compared in constant
/// time. A command without the field does not match.
#[must_use]
pub fn signature_matches(cmd: &RemotingCommand, secret_key: &str) -> bool {
    let Some(sent) = cmd.ext_fields.get(SIGNATURE) else {
        return false;
    };
    let expected = signature(cmd, secret_key);
    constant_time_eq(sent.as_bytes(), expected.as_bytes())
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Signs `cmd` as `AclClientRPCHook.doBeforeRequest` does: adds `AccessKey` (and
/// `SecurityToken` when set), then `Signature` over everything, those two included. Call it
/// last, once the header and body are final.
pub fn sign_request(cmd: &mut RemotingCommand, credentials: &SessionCredentials) {
    cmd.ext_fields
        .insert(ACCESS_KEY, credentials.access_key.as_str());
    if let Some(token) = &credentials.security_token {
        cmd.ext_fields.insert(SECURITY_TOKEN, token.as_str());
    }
    let sig = signature(cmd, &credentials.secret_key);
    cmd.ext_fields.insert(SIGNATURE, sig);
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::*;
    use crate::ExtFields;

    fn request() -> RemotingCommand {
        let mut fields = ExtFields::new();
        fields.insert("topic", "T");
        fields.insert("a", "G");
        let mut cmd = RemotingCommand::new_request(10, fields);
        cmd.body = Some(Bytes::from_static(b"hello"));
        cmd
    }

    #[test]
    fn signs_sorted_values_then_body() {
        let mut cmd = request();
        sign_request(&mut cmd, &SessionCredentials::new("rocketmq2", "12345678"));
        // values in key order: AccessKey, a, topic; then the body
        let mut mac = Hmac::<Sha1>::new_from_slice(b"12345678").unwrap();
        mac.update(b"rocketmq2GThello");
        let expected =
            base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes());
        assert_eq!(cmd.ext_fields.get(SIGNATURE), Some(expected.as_str()));
        assert!(signature_matches(&cmd, "12345678"));
        assert!(!signature_matches(&cmd, "12345679"));
    }

    #[test]
    fn tampering_breaks_the_signature() {
        let mut cmd = request();
        sign_request(&mut cmd, &SessionCredentials::new("ak", "sk"));
        let mut body_changed = cmd.clone();
        body_changed.body = Some(Bytes::from_static(b"hellO"));
        assert!(!signature_matches(&body_changed, "sk"));
        let mut header_changed = cmd.clone();
        header_changed.ext_fields.insert("topic", "U");
        assert!(!signature_matches(&header_changed, "sk"));
        let mut unsigned = request();
        assert!(!signature_matches(&unsigned, "sk"));
        unsigned.ext_fields.insert(SIGNATURE, "");
        assert!(!signature_matches(&unsigned, "sk"));
    }

    #[test]
    fn the_token_is_sent_and_signed() {
        let mut cmd = request();
        let mut creds = SessionCredentials::new("ak", "s3cr3t");
        creds.security_token = Some("t0k3n".into());
        sign_request(&mut cmd, &creds);
        assert_eq!(cmd.ext_fields.get(SECURITY_TOKEN), Some("t0k3n"));
        let mut swapped = cmd.clone();
        swapped.ext_fields.insert(SECURITY_TOKEN, "other");
        assert!(signature_matches(&cmd, "s3cr3t"));
        assert!(!signature_matches(&swapped, "s3cr3t"));
        let shown = format!("{creds:?}");
        assert!(
            !shown.contains("s3cr3t") && !shown.contains("t0k3n"),
            "{shown}"
        );
    }
}
