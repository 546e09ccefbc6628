//! What the wire-format oracle tests share: locating the Python oracles,
//! checking that scapy / tshark are installed (with install instructions
//! when not), and hex conversion.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Command, Stdio};

/// `tests/oracle/NAME` of the workspace.
pub fn oracle_script(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/oracle").join(name)
}

/// `python3`, after checking that `import IMPORTS` works (panics with what
/// to install otherwise: a missing oracle is a failure, never a skip).
pub fn python(imports: &str) -> Command {
    let ok = Command::new("python3").args(["-c", &format!("import {imports}")]).stdout(Stdio::null()).stderr(Stdio::null()).status();
    match ok {
        Ok(s) if s.success() => Command::new("python3"),
        Ok(_) => panic!("scapy >= 2.6 is missing (import {imports} failed): install it with `pip install 'scapy>=2.6'`"),
        Err(e) => panic!("python3 is missing ({e}): install python3 and `pip install 'scapy>=2.6'`"),
    }
}

/// `tshark`, after checking that it runs.
pub fn tshark() -> Command {
    match Command::new("tshark").arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status() {
        Ok(s) if s.success() => Command::new("tshark"),
        _ => panic!("tshark is missing: install it with `apt-get install tshark`"),
    }
}

pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Hex to bytes; "-" (an oracle's "nothing") is empty.
pub fn unhex(s: &str) -> Vec<u8> {
    if s == "-" {
        return Vec::new();
    }
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}
