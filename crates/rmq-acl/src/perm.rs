//! ACL permissions as RocketMQ 4.9.7's `Permission` spells and checks them: `DENY`, `PUB`,
//! `SUB`, `PUB|SUB` (or `SUB|PUB`). A `DENY` bit wins over everything.

use std::fmt;

/// A set of permission bits (RocketMQ's byte values, so that `PUB|SUB` is `PUB | SUB`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Perm(u8);

impl Perm {
    /// Nothing is allowed.
    pub const DENY: Self = Self(1);
    /// Either publishing or subscribing is enough (RocketMQ's `ANY`).
    pub const ANY: Self = Self(1 << 1);
    /// Send messages to a topic.
    pub const PUB: Self = Self(1 << 2);
    /// Consume a topic, or act as a consumer group.
    pub const SUB: Self = Self(1 << 3);
    /// Both.
    pub const PUB_SUB: Self = Self((1 << 2) | (1 << 3));

    /// Parse a permission as plain_acl.yml writes it; `None` for anything else (RocketMQ
    /// silently reads that as DENY; rmq refuses the file instead).
    #[must_use]
    pub fn parse(text: &str) -> Option<Self> {
        match text.trim() {
            "DENY" => Some(Self::DENY),
            "PUB" => Some(Self::PUB),
            "SUB" => Some(Self::SUB),
            "PUB|SUB" | "SUB|PUB" => Some(Self::PUB_SUB),
            _ => None,
        }
    }

    /// Whether an account owning `self` may do what needs `needed`
    /// (`Permission.checkPermission`).
    #[must_use]
    pub fn allows(self, needed: Self) -> bool {
        if self.0 & Self::DENY.0 != 0 {
            return false;
        }
        if needed.0 & Self::ANY.0 != 0 {
            return self.0 & (Self::PUB.0 | Self::SUB.0) != 0;
        }
        needed.0 & self.0 != 0
    }
}

impl fmt::Display for Perm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match *self {
            Self::DENY => "DENY",
            Self::ANY => "ANY",
            Self::PUB => "PUB",
            Self::SUB => "SUB",
            Self::PUB_SUB => "PUB|SUB",
            _ => "?",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::Perm;

    #[test]
    fn parses_rocketmq_spellings_only() {
        assert_eq!(Perm::parse(" PUB|SUB "), Some(Perm::PUB_SUB));
        assert_eq!(Perm::parse("SUB|PUB"), Some(Perm::PUB_SUB));
        assert_eq!(Perm::parse("DENY"), Some(Perm::DENY));
        assert_eq!(Perm::parse("pub"), None);
        assert_eq!(Perm::parse("PUB,SUB"), None);
    }

    #[test]
    fn checks_as_rocketmq_does() {
        assert!(Perm::PUB.allows(Perm::PUB));
        assert!(!Perm::SUB.allows(Perm::PUB));
        assert!(Perm::PUB_SUB.allows(Perm::SUB));
        assert!(!Perm::DENY.allows(Perm::SUB));
        assert!(Perm::SUB.allows(Perm::ANY));
        assert!(!Perm::DENY.allows(Perm::ANY));
    }
}
