//! Packet formats, in the style of smoltcp's `src/wire/`.
//!
//! Every header has a view type `Xxx<T: AsRef<[u8]>>` over a byte buffer whose
//! `new_checked` validates lengths, after which no accessor can panic, and a
//! `XxxRepr` with `parse` and `emit`. Parsers return [`Error`] on malformed
//! input; none panics or reads out of bounds.
//!
//! Values that the drafts leave to IANA are collected in [`params`].

pub mod checksum;

pub mod arp;
pub mod ethernet;
pub mod icmpv4;
pub mod icmpv6;
pub mod ipv4;
pub mod ipv6;
pub mod udp;
pub mod mld;

pub mod ah;
pub mod fann;
pub mod isis;
pub mod lhcnp;
pub mod params;
pub mod pfc;
pub mod roce;
pub mod srh;

use core::fmt;

/// Why a parser refused its input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Error {
    /// The buffer is shorter than the header or than a length field says.
    Truncated,
    /// A length field is inconsistent (too small, not a multiple, overruns).
    BadLength,
    /// A version / type / opcode field holds a value this parser does not take.
    Unrecognized,
    /// A field holds a value the format forbids.
    Malformed,
    /// A checksum, ICRC or HMAC does not verify.
    Checksum,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Error::Truncated => "truncated",
            Error::BadLength => "bad length",
            Error::Unrecognized => "unrecognized",
            Error::Malformed => "malformed",
            Error::Checksum => "bad checksum",
        })
    }
}

impl std::error::Error for Error {}

pub type Result<T> = core::result::Result<T, Error>;
