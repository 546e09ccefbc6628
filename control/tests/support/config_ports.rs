//! What the configuration tests build on (config_reference.rs,
//! config_robustness.rs).

/// Two virtual ports, nothing else: accepted as it stands.
pub const PORTS: &str = r#"
[[port]]
name = "dc"
device = "net_null0"
addresses = ["10.0.1.1/24", "2001:db8:1::1/64"]

[[port]]
name = "wan"
device = "net_null1"
addresses = ["10.0.2.1/24", "2001:db8:2::1/64"]
"#;
