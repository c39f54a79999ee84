//! Errors of the client core. Each says what happened and, where the user can act, what to
//! check; the Python layer maps them onto `rmq.errors` (one function, `rmq-py`'s `client_err`).

use rmq_remoting::RemotingError;

/// What can go wrong talking to nameservers and brokers.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// No nameserver address was configured.
    #[error(
        "no nameserver address: pass namesrv_addr (e.g. \"127.0.0.1:9876\") or set NAMESRV_ADDR"
    )]
    NoNameServer,
    /// An address that does not parse or resolve.
    #[error("{addr:?} is not an address like 127.0.0.1:9876")]
    BadAddress {
        /// The address as given.
        addr: String,
    },
    /// The peer could not be reached, or the connection failed.
    #[error(
        "cannot reach {addr}: {source}; is the broker/nameserver running and the address right?"
    )]
    Connect {
        /// The peer.
        addr: String,
        /// The transport's error.
        #[source]
        source: RemotingError,
    },
    /// No response in time.
    #[error("{addr} did not answer request code {code} within {timeout_ms} ms")]
    Timeout {
        /// The peer.
        addr: String,
        /// Request code.
        code: i32,
        /// The deadline.
        timeout_ms: u64,
    },
    /// The broker or nameserver answered with an error code.
    #[error("{addr} answered {code_name} ({code}): {remark}")]
    Response {
        /// The peer.
        addr: String,
        /// RocketMQ response code.
        code: i32,
        /// Its Java constant name.
        code_name: &'static str,
        /// The peer's remark.
        remark: String,
    },
    /// No nameserver knows a route for the topic.
    #[error("no route for topic {topic:?}: {detail}; create it (rmq updateTopic -t {topic} -c <cluster>) or enable autoCreateTopicEnable on the broker")]
    NoRoute {
        /// The topic.
        topic: String,
        /// What the nameservers said.
        detail: String,
    },
    /// The topic has a route, but no broker group serving it has a master now (its master is
    /// down or restarting): nothing can take a send until one registers again.
    #[error("topic {topic:?} cannot take sends now: no broker serving it has a master ({brokers}); sends resume once a master registers again (rmq clusterList shows the group's brokers)")]
    NoMaster {
        /// The topic.
        topic: String,
        /// The broker groups without a master, comma-separated.
        brokers: String,
    },
    /// The broker a queue lives on has no known address.
    #[error("broker {broker_name:?} has no known address; its route may be stale (is the broker registered with the nameserver?)")]
    BrokerNotFound {
        /// Broker name.
        broker_name: String,
    },
    /// The message cannot be sent as it is.
    #[error("message illegal: {0}")]
    IllegalMessage(String),
    /// A pulled body marked compressed that cannot be given back as the producer sent it
    /// (`MessageExt::body_error`), where a reader must not hand on the stored bytes.
    #[error("{0}")]
    BadBody(String),
    /// A body or header in a response could not be read.
    #[error("bad response from {addr}: {detail}")]
    BadResponse {
        /// The peer.
        addr: String,
        /// What was wrong.
        detail: String,
    },
    /// Every attempt of a send failed.
    #[error("sending to topic {topic} failed after {attempts} attempt(s) in {elapsed_ms} ms (brokers tried: {brokers:?}): {last}")]
    SendFailed {
        /// The topic.
        topic: String,
        /// Attempts made.
        attempts: usize,
        /// Time spent.
        elapsed_ms: u64,
        /// Brokers tried, in order.
        brokers: Vec<String>,
        /// The last attempt's error.
        last: Box<ClientError>,
    },
    /// The client was shut down.
    #[error("the client was shut down")]
    Shutdown,
}

impl ClientError {
    /// Wrap a transport error for `addr` (timeouts keep their own kind).
    pub(crate) fn from_remoting(addr: &str, code: i32, e: RemotingError) -> Self {
        match e {
            RemotingError::Timeout { timeout_ms, .. } => Self::Timeout {
                addr: addr.to_owned(),
                code,
                timeout_ms: u64::try_from(timeout_ms).unwrap_or(u64::MAX),
            },
            other => Self::Connect {
                addr: addr.to_owned(),
                source: other,
            },
        }
    }

    /// The RocketMQ response code, for errors that came back from a peer.
    #[must_use]
    pub fn response_code(&self) -> Option<i32> {
        match self {
            Self::Response { code, .. } => Some(*code),
            Self::SendFailed { last, .. } => last.response_code(),
            _ => None,
        }
    }

    /// Whether the transport failed (connect, closed, timeout): the peer may be down.
    #[must_use]
    pub fn is_transport(&self) -> bool {
        matches!(self, Self::Connect { .. } | Self::Timeout { .. })
    }
}

/// Result of client calls.
pub type Result<T> = std::result::Result<T, ClientError>;
