//! Broker errors, and the one place store errors become response codes.

use std::path::PathBuf;

use rmq_protocol::ResponseCode;
use rmq_store::StoreError;

/// Errors of the broker's own machinery (persistence, start-up).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BrokerError {
    /// Reading or writing a config file failed.
    #[error("{context} {}: {source}", path.display())]
    Io {
        /// What was being done.
        context: &'static str,
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// A config file holds something that is not its JSON.
    #[error("config file {} is not valid: {reason}", path.display())]
    BadFile {
        /// The file.
        path: PathBuf,
        /// What was wrong.
        reason: String,
    },
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The response code and remark for a failed put (RocketMQ's `handlePutMessageResult`).
#[must_use]
pub fn store_error_to_response(e: &StoreError) -> (ResponseCode, String) {
    let code = match e {
        StoreError::MessageIllegal(_)
        | StoreError::PropertiesSizeExceeded(_)
        | StoreError::WheelTimerMsgIllegal { .. } => ResponseCode::MESSAGE_ILLEGAL,
        StoreError::ServiceNotAvailable(_) => ResponseCode::SERVICE_NOT_AVAILABLE,
        StoreError::OsPageCacheBusy(_) | StoreError::NoBufferInStorePool => {
            ResponseCode::SYSTEM_BUSY
        }
        _ => ResponseCode::SYSTEM_ERROR,
    };
    (code, e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mapping_is_pinned() {
        let c = |e: StoreError| store_error_to_response(&e).0;
        assert_eq!(
            c(StoreError::MessageIllegal("x".into())),
            ResponseCode::MESSAGE_ILLEGAL
        );
        assert_eq!(
            c(StoreError::PropertiesSizeExceeded(40_000)),
            ResponseCode::MESSAGE_ILLEGAL
        );
        assert_eq!(
            c(StoreError::ServiceNotAvailable("full".into())),
            ResponseCode::SERVICE_NOT_AVAILABLE
        );
        assert_eq!(
            c(StoreError::OsPageCacheBusy(1200)),
            ResponseCode::SYSTEM_BUSY
        );
        assert_eq!(
            c(StoreError::NoBufferInStorePool),
            ResponseCode::SYSTEM_BUSY
        );
        assert_eq!(
            c(StoreError::FlushFailed("eio".into())),
            ResponseCode::SYSTEM_ERROR
        );
        // RocketMQ 5's SendMessageProcessor: code and remark of refused timer messages.
        let e = StoreError::WheelTimerMsgIllegal {
            max_delay_ms: 259_200_000,
        };
        assert_eq!(
            store_error_to_response(&e),
            (
                ResponseCode::MESSAGE_ILLEGAL,
                "timer message illegal, the delay time should not be bigger than the max delay \
                 259200000ms; or if set del msg, the delay time should be bigger than the current \
                 time"
                    .to_string()
            )
        );
        assert_eq!(
            store_error_to_response(&StoreError::WheelTimerNotEnable),
            (
                ResponseCode::SYSTEM_ERROR,
                "accurate timer message is not enabled, timerWheelEnable is false".to_string()
            )
        );
    }
}
