//! RocketMQ ACL 1.0 on the server side, for any rmq server (the broker wraps its dispatcher,
//! the nameserver its Python handler through `rmq._rmq.RemotingServer(acl_file=...)`):
//!
//! - [`config`]: plain_acl.yml read into [`AclRules`], mistakes refused with file:line:key;
//! - [`address`]: RocketMQ's remote-address patterns;
//! - [`perm`]: DENY / PUB / SUB and how they are checked;
//! - [`resource`]: what each request code needs (topic/group permissions, admin);
//! - [`rules`]: the check of one request, in RocketMQ's order;
//! - [`handler`]: the checking `RequestHandler` and the reloaded file;
//! - [`edit`]: the ACL admin requests' edits of the file.
//!
//! Signatures themselves are `rmq_protocol::acl`'s (one definition for clients and servers).

pub mod address;
pub mod config;
pub mod edit;
pub mod error;
pub mod handler;
pub mod perm;
pub mod resource;
pub mod rules;

pub use address::AddressPattern;
pub use edit::AccountUpdate;
pub use error::AclError;
pub use handler::{AclFile, AclHandler};
pub use perm::Perm;
pub use resource::Policy;
pub use rules::{AclRules, DataVersion, Refusal};
