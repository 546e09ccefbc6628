//! Values the drafts leave to IANA ("TBD"), gathered in one place.
//!
//! Every one except `isis_srv6_cap_c_flag` (printed by `dcirouter isis` for
//! an external IGP speaker, which sets its own flags) is configurable
//! (`[wire]` in the TOML configuration); the defaults
//! come from the experimental or private-use ranges of the registries concerned,
//! so that they cannot collide with an allocated value:
//!
//! | parameter | default | registry and range |
//! |---|---|---|
//! | `icmpv6_lhcnp_type` | 200 | ICMPv6 type, RFC 4443 s.2.1: 200/201 private experimentation (informational) |
//! | `icmpv6_fann_type` | 201 | same |
//! | `lhcnp_ext_class_num` | 247 | ICMP Extension Object Classes, RFC 4884: 247-255 private use |
//! | `srh_tlv_end_mt` | 124 | SRH TLV types, RFC 8754 s.9.2: 124-126 experimental (high bit 0: not changed en route) |
//! | `behaviour_end_mt` | 65280 | SRv6 Endpoint Behaviors, RFC 8986 s.10.2: 65280-65534 private use |
//! | `behaviour_end_c` | 65281 | same |
//! | `behaviour_end_e` | 65282 | same |
//! | `fann_udp_port` | 49790 | UDP port, RFC 6335: 49152-65535 dynamic/private |
//! | `isis_srv6_cap_c_flag` | 0x2000 | bit of the SRv6 Capabilities sub-TLV flags: draft-hu-acn-rocev2 s.5.1 draws C right after RFC 9352's O-flag (0x4000) |

/// The IANA-pending values in force.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Params {
    pub icmpv6_lhcnp_type: u8,
    pub icmpv6_fann_type: u8,
    pub lhcnp_ext_class_num: u8,
    pub srh_tlv_end_mt: u8,
    pub behaviour_end_mt: u16,
    pub behaviour_end_c: u16,
    pub behaviour_end_e: u16,
    pub fann_udp_port: u16,
    pub isis_srv6_cap_c_flag: u16,
}

impl Params {
    pub const DEFAULT: Params = Params {
        icmpv6_lhcnp_type: 200,
        icmpv6_fann_type: 201,
        lhcnp_ext_class_num: 247,
        srh_tlv_end_mt: 124,
        behaviour_end_mt: 65280,
        behaviour_end_c: 65281,
        behaviour_end_e: 65282,
        fann_udp_port: 49790,
        isis_srv6_cap_c_flag: 0x2000,
    };
}

impl Default for Params {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// The IANA-assigned RoCEv2 UDP destination port.
pub const ROCEV2_UDP_PORT: u16 = 4791;
