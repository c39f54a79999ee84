//! Typed request and response headers.
//!
//! On the wire a header is just the command's `extFields`: Java's
//! `makeCustomHeaderToNet` writes every non-null field of the header class under the field's
//! own name, values as `toString()`; `decodeCommandCustomHeader` reads them back by name and
//! rejects a missing `@CFNotNull` field. Each struct here mirrors one Java class, with the
//! Java field names as keys, so the key strings are the protocol and are spelled exactly as
//! in Java (including oddities such as `bname`, `clientID` and `isForce`).
//!
//! Fields come in three kinds, declared per field:
//! * `required`: `@CFNotNull`; missing is an error naming the field;
//! * `optional`: nullable; `Option<T>`, written only when set;
//! * `defaulted`: Java primitives and fields with a Java default (`boolean unitMode`,
//!   `Boolean order = false`), always written by Java; missing reads as the default.
//!
//! Values parse as Java's `decodeCommandCustomHeader` does: `Integer.parseInt` and
//! `Long.parseLong` (a value that does not parse is an error naming the field, the value and
//! the type, as Java's `NumberFormatException` is), `Boolean.parseBoolean` (never an error).

use crate::command::ExtFields;
use crate::error::{ProtocolError, Result};
use crate::ext_fields::FieldCursor;

/// A typed view of a command's ext fields.
pub trait CommandHeader: Sized {
    /// The ext fields Java would write for this header.
    fn to_ext_fields(&self) -> ExtFields;

    /// Read the header from ext fields. Unknown keys are ignored.
    ///
    /// # Errors
    /// [`ProtocolError::MissingField`] for an absent required field,
    /// [`ProtocolError::InvalidField`] for a value that does not parse.
    fn from_ext_fields(fields: &ExtFields) -> Result<Self>;
}

/// A Java header field type: how it prints and parses.
pub trait HeaderValue: Sized {
    /// The Java type name used in error messages.
    const JAVA_TYPE: &'static str;
    /// Append `toString()` of the Java value to `out`.
    fn write_field(&self, out: &mut String);
    /// Parse the text as Java does.
    ///
    /// # Errors
    /// The text is not a value of this type.
    fn parse_field(field: &'static str, text: &str) -> Result<Self>;
}

fn invalid(field: &'static str, text: &str, expected: &'static str) -> ProtocolError {
    ProtocolError::InvalidField {
        field,
        value: text.to_owned(),
        expected,
    }
}

impl HeaderValue for String {
    const JAVA_TYPE: &'static str = "String";
    fn write_field(&self, out: &mut String) {
        out.push_str(self);
    }
    fn parse_field(_: &'static str, text: &str) -> Result<Self> {
        Ok(text.to_owned())
    }
}

macro_rules! int_header_value {
    ($($t:ty => $java:literal),*) => {$(
        impl HeaderValue for $t {
            const JAVA_TYPE: &'static str = $java;
            fn write_field(&self, out: &mut String) {
                out.push_str(itoa::Buffer::new().format(*self));
            }
            fn parse_field(field: &'static str, text: &str) -> Result<Self> {
                text.parse().map_err(|_| invalid(field, text, $java))
            }
        }
    )*};
}
int_header_value!(i32 => "int", i64 => "long");

impl HeaderValue for bool {
    const JAVA_TYPE: &'static str = "boolean";
    fn write_field(&self, out: &mut String) {
        out.push_str(if *self { "true" } else { "false" });
    }
    /// Java's `Boolean.parseBoolean`: `true` in any case is true, anything else (`"0"`,
    /// `"false"`, `""`) is false; never an error. RocketMQ's C++ core sends `"0"`/`"1"`.
    fn parse_field(_: &'static str, text: &str) -> Result<Self> {
        Ok(text.eq_ignore_ascii_case("true"))
    }
}

/// Read a required field.
///
/// # Errors
/// Missing, or does not parse.
pub fn required<T: HeaderValue>(fields: &mut FieldCursor<'_>, key: &'static str) -> Result<T> {
    match fields.get(key) {
        Some(v) => T::parse_field(key, v),
        None => Err(ProtocolError::MissingField { field: key }),
    }
}

/// Read an optional field.
///
/// # Errors
/// Present but does not parse.
pub fn optional<T: HeaderValue>(
    fields: &mut FieldCursor<'_>,
    key: &'static str,
) -> Result<Option<T>> {
    fields.get(key).map(|v| T::parse_field(key, v)).transpose()
}

macro_rules! field_type {
    (required $t:ty) => { $t };
    (optional $t:ty) => { Option<$t> };
    (defaulted $t:ty) => { $t };
}

macro_rules! put_field {
    (optional $m:ident $k:literal $v:expr) => {
        if let Some(v) = $v {
            $m.insert_with($k, |out| $crate::header::HeaderValue::write_field(v, out));
        }
    };
    ($kind:ident $m:ident $k:literal $v:expr) => {
        $m.insert_with($k, |out| $crate::header::HeaderValue::write_field($v, out));
    };
}

macro_rules! get_field {
    (required $f:ident $k:literal $t:ty) => {
        $crate::header::required::<$t>($f, $k)?
    };
    (optional $f:ident $k:literal $t:ty) => {
        $crate::header::optional::<$t>($f, $k)?
    };
    (defaulted $f:ident $k:literal $t:ty) => {
        $crate::header::optional::<$t>($f, $k)?.unwrap_or_default()
    };
}

/// Declare a header struct: `field: kind<Type> = "javaName",` per field.
macro_rules! command_header {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $(
                $(#[$fmeta:meta])*
                $field:ident : $kind:ident < $ty:ty > = $key:literal,
            )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Eq, Default)]
        pub struct $name {
            $( $(#[$fmeta])* pub $field: field_type!($kind $ty), )*
        }

        impl $crate::header::CommandHeader for $name {
            #[allow(unused_mut, reason = "a header without fields never pushes")]
            fn to_ext_fields(&self) -> $crate::command::ExtFields {
                let mut m = $crate::command::ExtFields::with_capacity(
                    <[&str]>::len(&[$($key),*]),
                    128,
                );
                $( put_field!($kind m $key &self.$field); )*
                m
            }

            #[allow(unused_variables, reason = "a header without fields never reads")]
            fn from_ext_fields(
                fields: &$crate::command::ExtFields,
            ) -> $crate::error::Result<Self> {
                let mut fields = fields.cursor();
                let fields = &mut fields;
                Ok(Self {
                    $( $field: get_field!($kind fields $key $ty), )*
                })
            }
        }
    };
}

pub mod acl;
pub mod admin;
pub mod client;
pub mod namesrv;
pub mod offset;
pub mod pull;
pub mod query;
pub mod send;
pub mod transaction;

pub use acl::*;
pub use admin::*;
pub use client::*;
pub use namesrv::*;
pub use offset::*;
pub use pull::*;
pub use query::*;
pub use send::*;
pub use transaction::*;

#[cfg(test)]
#[expect(unreachable_pub, reason = "command_header! makes the probe struct pub")]
mod tests {
    use super::*;

    command_header! {
        /// A header exercising every kind and type.
        pub struct Probe {
            /// required string
            s: required<String> = "s",
            /// required int
            i: required<i32> = "i",
            /// optional long
            l: optional<i64> = "l",
            /// defaulted bool
            b: defaulted<bool> = "b",
        }
    }

    fn ext(pairs: &[(&str, &str)]) -> ExtFields {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn kinds_behave_like_java() {
        let p = Probe::from_ext_fields(&ext(&[("s", "x"), ("i", "-3"), ("extra", "?")])).unwrap();
        assert_eq!(
            p,
            Probe {
                s: "x".into(),
                i: -3,
                l: None,
                b: false
            }
        );
        // Optional absent is not written; defaulted is always written.
        assert_eq!(
            p.to_ext_fields(),
            ext(&[("s", "x"), ("i", "-3"), ("b", "false")])
        );
        let p = Probe::from_ext_fields(&ext(&[("s", ""), ("i", "1"), ("l", "9"), ("b", "TRUE")]))
            .unwrap();
        assert_eq!((p.l, p.b), (Some(9), true));
    }

    #[test]
    fn errors_name_the_field() {
        assert_eq!(
            Probe::from_ext_fields(&ext(&[("s", "x")])).unwrap_err(),
            ProtocolError::MissingField { field: "i" }
        );
        assert_eq!(
            Probe::from_ext_fields(&ext(&[("s", "x"), ("i", "1.5")])).unwrap_err(),
            ProtocolError::InvalidField {
                field: "i",
                value: "1.5".into(),
                expected: "int"
            }
        );
        assert_eq!(
            Probe::from_ext_fields(&ext(&[("s", "x"), ("i", "1"), ("l", "2147483648x")]))
                .unwrap_err(),
            ProtocolError::InvalidField {
                field: "l",
                value: "2147483648x".into(),
                expected: "long"
            }
        );
        // Boolean.parseBoolean: only "true" (any case) is true, nothing is an error.
        for (text, want) in [
            ("yes", false),
            ("0", false),
            ("1", false),
            ("", false),
            ("tRuE", true),
        ] {
            let p = Probe::from_ext_fields(&ext(&[("s", "x"), ("i", "+1"), ("b", text)])).unwrap();
            assert_eq!((p.i, p.b), (1, want), "{text:?}");
        }
        assert!(Probe::from_ext_fields(&ext(&[("s", "x"), ("i", "99999999999")])).is_err());
    }
}
