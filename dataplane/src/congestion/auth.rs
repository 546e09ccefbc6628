//! Authenticated Long-haul CNPs (draft-tian s.9, "Packet Forgery": "For the
//! ICMPv6 format, IPsec Authentication Header (AH) MAY be used to provide
//! packet authentication").
//!
//! The operator keys one outbound SA per group of sources
//! (`[[cnp_auth]]`: a prefix of source addresses, SPI, algorithm, key), as
//! with `ip xfrm state add ... proto ah` on the sources. Every ICMPv6
//! Long-haul CNP to a source inside a prefix (the longest wins) carries an
//! AH ([`crate::wire::ah`]) under it. The table is built by the control
//! thread and shared by every port and worker; the sequence number of an SA
//! is one atomic counter, so the CNPs of all workers count up together
//! (RFC 4302 s.3.3.2) and the receiver's anti-replay window sees no number
//! twice. It starts at 1 when the router starts, as a manually keyed SA
//! does (RFC 4302 s.2.5: receivers of manually keyed SAs do not rely on
//! anti-replay across a restart of the sender), and an SA whose numbers
//! are used up (2^32 - 1 packets, no extended sequence numbers) sends no
//! more CNPs rather than unauthenticated ones: re-key it.
//!
//! The RoCEv2 format has no AH (a RoCE NIC takes the CNP straight from
//! UDP); a RoCEv2-format CNP to a source an SA covers goes out as the
//! format says and is counted (`cnp-roce-format-unauthenticated`).

use std::net::Ipv6Addr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::wire::ah::AhKey;

/// Most `[[cnp_auth]]` entries (looked up linearly, once per CNP).
pub const MAX_CNP_SAS: usize = 256;

/// One outbound SA.
#[derive(Debug)]
pub struct CnpSa {
    pub prefix: ipnet::Ipv6Net,
    pub key: AhKey,
    /// The next sequence number to use.
    next: AtomicU64,
}

impl CnpSa {
    pub fn new(prefix: ipnet::Ipv6Net, key: AhKey) -> Self {
        CnpSa {
            prefix,
            key,
            next: AtomicU64::new(1),
        }
    }

    /// The sequence number for the next packet; None once 2^32 - 1 have
    /// been used (RFC 4302 s.3.3.2: the counter must not cycle).
    pub fn take_seq(&self) -> Option<u32> {
        u32::try_from(self.next.fetch_add(1, Ordering::Relaxed)).ok()
    }

    /// Packets sent under this SA so far.
    pub fn sent(&self) -> u64 {
        (self.next.load(Ordering::Relaxed) - 1).min(u64::from(u32::MAX))
    }

    /// For tests: continue from sequence number `seq`.
    pub fn set_next_seq(&self, seq: u64) {
        self.next.store(seq, Ordering::Relaxed);
    }
}

/// The outbound SAs of the node's Long-haul CNPs.
#[derive(Debug, Default)]
pub struct CnpAuth {
    /// Shared with the tables that replace this one at run time (`ctl
    /// cnp-auth add / del`), so that an SA kept keeps its sequence counter.
    sas: Vec<Arc<CnpSa>>,
}

impl CnpAuth {
    /// Distinct prefixes, at most [`MAX_CNP_SAS`] (checked by the
    /// configuration).
    pub fn new(sas: Vec<CnpSa>) -> Self {
        CnpAuth { sas: sas.into_iter().map(Arc::new).collect() }
    }

    /// A table of SAs some of which another table holds too.
    pub fn from_shared(sas: Vec<Arc<CnpSa>>) -> Self {
        CnpAuth { sas }
    }

    /// The SA for CNPs to `to`: the longest prefix containing it.
    pub fn for_destination(&self, to: Ipv6Addr) -> Option<&CnpSa> {
        self.sas
            .iter()
            .filter(|s| s.prefix.contains(&to))
            .max_by_key(|s| s.prefix.prefix_len())
            .map(|s| &**s)
    }

    pub fn sas(&self) -> &[Arc<CnpSa>] {
        &self.sas
    }

    pub fn is_empty(&self) -> bool {
        self.sas.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::ah::Algorithm;

    fn sa(p: &str, spi: u32) -> CnpSa {
        CnpSa::new(
            p.parse().unwrap(),
            AhKey::new(spi, Algorithm::HmacSha256_128, &[1; 32]).unwrap(),
        )
    }

    #[test]
    fn the_longest_prefix_names_the_sa_and_numbers_count_up_to_the_limit() {
        let t = CnpAuth::new(vec![sa("2001:db8::/32", 300), sa("2001:db8:1::/48", 301)]);
        assert_eq!(
            t.for_destination("2001:db8:1::2".parse().unwrap())
                .map(|s| s.key.spi()),
            Some(301)
        );
        assert_eq!(
            t.for_destination("2001:db8:2::2".parse().unwrap())
                .map(|s| s.key.spi()),
            Some(300)
        );
        assert!(t.for_destination("2001:db9::1".parse().unwrap()).is_none());
        let s = &t.sas()[0];
        assert_eq!(
            (s.take_seq(), s.take_seq(), s.sent()),
            (Some(1), Some(2), 2)
        );
        s.set_next_seq(u64::from(u32::MAX));
        assert_eq!(s.take_seq(), Some(u32::MAX));
        assert_eq!(s.take_seq(), None, "no cycling past 2^32 - 1");
        assert_eq!(s.take_seq(), None);
        assert_eq!(s.sent(), u64::from(u32::MAX));
    }
}
