//! The Wireshark dissectors (`tools/wireshark/dcirouter.lua`), from a
//! review: frames scapy builds (with the helpers of
//! `tests/oracle/dissector_cases.py`) that the dissectors misread. Each test
//! failed on the dissectors before their fix (its "Was").
//!
//! Self-contained (no `mod common`): tshark, python3 and scapy only.

use std::path::{Path, PathBuf};
use std::process::Command;

const LUA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tools/wireshark/dcirouter.lua");
const ORACLE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/oracle");

fn workdir(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("it-wsreview-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Write the frames the python expression `frames` (a list, built with the
/// helpers of dissector_cases.py) evaluates to into a pcap.
fn pcap(name: &str, frames: &str) -> PathBuf {
    let out = workdir(name).join("f.pcap");
    let script = format!(
        "import sys, struct, socket\nsys.path.insert(0, {ORACLE:?})\n\
         from dissector_cases import body, ext, icmp6, roce_lhcnp, fann_msg, bit, MAC\n\
         from scapy.all import IP, IPv6, UDP, Ether, Raw, wrpcap\n\
         wrpcap(sys.argv[1], {frames})\n"
    );
    let o = Command::new("python3").arg("-c").arg(&script).arg(&out).output().expect("python3 with scapy is required");
    assert!(o.status.success(), "python3: {}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    out
}

/// tshark with the dissectors: per frame, each field's occurrences.
fn fields(pcap: &Path, fields: &[&str]) -> Vec<Vec<Vec<String>>> {
    let mut c = Command::new("tshark");
    c.arg("-X").arg(format!("lua_script:{LUA}")).arg("-n").arg("-r").arg(pcap).args(["-T", "fields", "-E", "occurrence=a", "-E", "aggregator=|"]);
    for f in fields {
        c.args(["-e", f]);
    }
    let o = c.output().expect("tshark is required");
    assert!(o.status.success(), "tshark: {}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| l.split('\t').map(|v| if v.is_empty() { Vec::new() } else { v.split('|').map(str::to_string).collect() }).collect())
        .collect()
}

/// tshark -V with the dissectors, the Long-haul CNP tree only.
fn verbose(pcap: &Path) -> String {
    let o = Command::new("tshark").arg("-X").arg(format!("lua_script:{LUA}")).args(["-n", "-V", "-O", "lhcnp", "-r"]).arg(pcap).output().expect("tshark is required");
    assert!(o.status.success(), "tshark: {}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).to_string()
}

const CNP: &str = "icmp6('2001:db8::9', '2001:db8:1::2', 200, 0, body(1, 2, 30, 5, 1, 10) + {})";

/// Rule: RFC 4884 s.7 (the extension header of draft-tian-ccwg-long-haul-cnp
/// s.6.1.1, "computed as specified in ... [RFC4884]"): "An all-zero value
/// means that no checksum was transmitted"; dcirouter's parser
/// (`ExtStructure::verify_checksum`) accepts it. Was: "Extension checksum
/// status: Bad (2)" and the error "extension checksum does not verify".
#[test]
fn extension_checksum_zero_means_none_sent() {
    let e = "(lambda e: e[:2] + b'\\0\\0' + e[4:])(ext([(247, 2, b'N1')]))";
    let p = pcap("ext-cksum0", &format!("[{}]", CNP.replace("{}", e)));
    let r = fields(&p, &["lhcnp.obj.device_id", "lhcnp.ext.checksum.status", "_ws.expert.message"]);
    assert_eq!(r[0][0], ["N1"]);
    assert!(r[0][1] != ["2"], "a zero extension checksum (none sent) is judged bad: {:?}", r[0]);
    assert!(r[0][2].is_empty(), "unexpected experts: {:?}", r[0][2]);
}

/// Rule: draft-tian-ccwg-long-haul-cnp s.6.1.1: "2 = Device Identifier
/// (variable-length UTF-8 string ...)". Was: "nœud-7" shown as "n\u{fffd}\u{fffd}ud-7"
/// (the field is read as ASCII).
#[test]
fn device_identifier_is_utf8() {
    let e = "ext([(247, 2, 'nœud-7'.encode())])";
    let p = pcap("devid-utf8", &format!("[{}]", CNP.replace("{}", e)));
    let r = fields(&p, &["lhcnp.obj.device_id"]);
    assert_eq!(r[0][0], ["nœud-7"]);
}

/// Rule: draft-tian-ccwg-long-haul-cnp s.6.1.1: "When no extension objects
/// are present, the Extension Header MUST be omitted entirely" (dcirouter's
/// `Objects::parse`: `Malformed`). Was: "Extension structure (RFC 4884), 0
/// object(s)", no expert info.
#[test]
fn extension_header_without_objects_is_flagged() {
    let p = pcap("ext-empty", &format!("[{}]", CNP.replace("{}", "ext([])")));
    let r = fields(&p, &["lhcnp.ext.version", "_ws.expert.message"]);
    assert_eq!(r[0][0], ["2"]);
    assert!(!r[0][1].is_empty(), "an extension header without objects passes unflagged");
}

/// Rule: draft-tian-ccwg-long-haul-cnp s.6.1.1: "1 = Timestamp (8-octet NTP
/// timestamp)" (dcirouter's `ExtObject::from_raw`: any other length is
/// `Malformed`). Was: a 4-octet Timestamp object shown as "Data: 01020304"
/// without expert info.
#[test]
fn timestamp_object_of_wrong_length_is_flagged() {
    let p = pcap("ts-len", &format!("[{}]", CNP.replace("{}", "ext([(247, 1, b'\\1\\2\\3\\4')])")));
    let r = fields(&p, &["lhcnp.obj.ctype", "_ws.expert.message"]);
    assert_eq!(r[0][0], ["1"]);
    assert!(!r[0][1].is_empty(), "a 4-octet Timestamp object passes unflagged");
}

/// Rule: draft-tian-ccwg-long-haul-cnp s.10.3 (Table 4): the C-Types
/// Reserved / Timestamp / Device Identifier / Path Identifier are those
/// "Within this Class-Num" (the Long-haul CNP class, TBD2); an object of
/// another class (here class 2, RFC 5837 Interface Information) has its
/// own C-Types. Was: "Object: Timestamp (class 2, length 8)" and "C-Type:
/// Timestamp (1)".
#[test]
fn ctype_names_only_in_the_lhcnp_class() {
    let p = pcap("foreign-class", &format!("[{}]", CNP.replace("{}", "ext([(2, 1, b'\\0\\0\\0\\7')])")));
    let v = verbose(&p);
    assert!(v.contains("Class-Num: 2"), "{v}");
    assert!(!v.contains("Timestamp"), "a class-2 object is named after the Long-haul CNP C-Types:\n{v}");
}

/// Rule: draft-hzh-fantel-wan-tunnel s.6: the lengths must not "exceed the
/// total ICMPv6 payload length" — octets after the stack are allowed
/// (dcirouter's `Message::check_len`: "Octets after the stack are padding
/// or reserved bits' items"). Was: a message padded by 3 octets to a
/// 4-octet row flagged Error/Malformed "the bitmap implies 41 octets from
/// Version on, the message has 44".
#[test]
fn fann_octets_after_the_stack_are_not_malformed() {
    let p = pcap(
        "fann-pad",
        "[icmp6('fc00::2', '2001:db8:1::99', 201, 0, fann_msg(8, 1, 0, 9, 1, 'fc00::2', bit(1), struct.pack('!I', 1)) + b'\\0\\0\\0')]",
    );
    let r = fields(&p, &["fann.egress_port", "fann.checksum.status", "_ws.expert.message"]);
    assert_eq!((&r[0][0], &r[0][1]), (&vec!["1".to_string()], &vec!["1".to_string()]));
    assert!(r[0][2].is_empty(), "padding after the stack is flagged: {:?}", r[0][2]);
}

/// Rule: draft-hzh-fantel-wan-tunnel s.5.1.4: "The metadata stack is
/// constructed by concatenating metadata fields in ascending bit order", so
/// the items of the defined bits 0-14 come first, at known offsets, even
/// when a reserved bit (15-31) is set (dcirouter's `Message::item` reads
/// them). Was: "Metadata stack (not sized: reserved bit set)", no Egress
/// Port ID.
#[test]
fn fann_defined_items_are_read_with_a_reserved_bit_set() {
    let p = pcap(
        "fann-rsvd",
        "[icmp6('fc00::2', '2001:db8:1::99', 201, 0, fann_msg(8, 1, 0, 9, 1, 'fc00::2', bit(1) | bit(15), struct.pack('!I', 77) + b'\\xaa' * 4))]",
    );
    let r = fields(&p, &["fann.bitmap", "fann.egress_port"]);
    assert_eq!(r[0][1], ["77"], "Egress Port ID (bit 1) before the reserved bit's item: {:?}", r[0]);
}
