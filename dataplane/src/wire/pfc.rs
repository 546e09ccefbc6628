//! IEEE 802.3 MAC Control frames: PAUSE (802.3 Annex 31B, opcode 0x0001)
//! and Priority-based Flow Control (802.1Qbb / 802.3 Annex 31D, opcode
//! 0x0101).
//!
//! [`MacControl`] views the MAC Control PDU (the octets after the EtherType
//! 0x8808); [`MacControlRepr`] is PAUSE or PFC. [`FrameRepr`] adds the
//! Ethernet header and the padding to the 60-octet minimum frame (64 with
//! the FCS, which the NIC appends).
//!
//! PFC PDU: opcode (2) | priority-enable vector (2: reserved octet, then
//! e[7..0]) | time[0] .. time[7] (2 each), times in quanta of 512 bit times.

use super::{Error, Result};

/// EtherType of MAC Control frames.
pub const ETHERTYPE_MAC_CONTROL: u16 = 0x8808;
/// PAUSE opcode.
pub const OPCODE_PAUSE: u16 = 0x0001;
/// Priority-based flow control (class-based flow control) opcode.
pub const OPCODE_PFC: u16 = 0x0101;
/// The reserved multicast destination of PAUSE and PFC frames.
pub const DST_MAC: [u8; 6] = [0x01, 0x80, 0xc2, 0x00, 0x00, 0x01];
/// Ethernet header length (no VLAN tag: MAC Control frames are untagged).
pub const ETH_HEADER_LEN: usize = 14;
/// Minimum frame length without FCS.
pub const MIN_FRAME_LEN: usize = 60;
/// Length of a PAUSE PDU (opcode + pause_time).
pub const PAUSE_LEN: usize = 4;
/// Length of a PFC PDU (opcode + vector + 8 times).
pub const PFC_LEN: usize = 20;
/// Bit times per pause quantum.
pub const QUANTUM_BIT_TIMES: u64 = 512;

mod field {
    use core::ops::Range;
    pub const OPCODE: Range<usize> = 0..2;
    pub const PAUSE_TIME: Range<usize> = 2..4;
    pub const CEV: Range<usize> = 2..4;
    pub const TIMES: usize = 4;
}

/// Pause quanta for `micros` microseconds at `link_bps` bits per second,
/// rounded up and saturated at 0xFFFF.
pub fn quanta_from_micros(micros: u64, link_bps: u64) -> u16 {
    let bits = u128::from(micros) * u128::from(link_bps);
    let per_quantum = u128::from(QUANTUM_BIT_TIMES) * 1_000_000;
    let q = bits.div_ceil(per_quantum);
    q.min(0xffff) as u16
}

/// Duration of `quanta` at `link_bps`, in nanoseconds (rounded down; 0 for a
/// zero link speed).
pub fn nanos_from_quanta(quanta: u16, link_bps: u64) -> u64 {
    if link_bps == 0 {
        return 0;
    }
    (u128::from(quanta) * u128::from(QUANTUM_BIT_TIMES) * 1_000_000_000 / u128::from(link_bps))
        as u64
}

/// A view of a MAC Control PDU (after the EtherType).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MacControl<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> MacControl<T> {
    pub const fn new_unchecked(buffer: T) -> MacControl<T> {
        MacControl { buffer }
    }

    /// Check the length for the opcode: 4 octets for PAUSE, 20 for PFC, 2
    /// for any other opcode (whose fields this view does not read).
    pub fn new_checked(buffer: T) -> Result<MacControl<T>> {
        let p = Self::new_unchecked(buffer);
        p.check_len()?;
        Ok(p)
    }

    pub fn check_len(&self) -> Result<()> {
        let b = self.buffer.as_ref();
        if b.len() < 2 {
            return Err(Error::Truncated);
        }
        let need = match self.opcode() {
            OPCODE_PAUSE => PAUSE_LEN,
            OPCODE_PFC => PFC_LEN,
            _ => 2,
        };
        if b.len() < need {
            Err(Error::Truncated)
        } else {
            Ok(())
        }
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    #[inline]
    pub fn opcode(&self) -> u16 {
        let b = &self.buffer.as_ref()[field::OPCODE];
        u16::from_be_bytes([b[0], b[1]])
    }

    /// PAUSE: the pause time in quanta. Only valid for opcode 0x0001.
    #[inline]
    pub fn pause_time(&self) -> u16 {
        let b = &self.buffer.as_ref()[field::PAUSE_TIME];
        u16::from_be_bytes([b[0], b[1]])
    }

    /// PFC: the 16-bit priority-enable vector (upper octet reserved).
    #[inline]
    pub fn class_enable_vector(&self) -> u16 {
        let b = &self.buffer.as_ref()[field::CEV];
        u16::from_be_bytes([b[0], b[1]])
    }

    /// PFC: the enable bits e[7..0] (bit n = priority n).
    #[inline]
    pub fn class_enable(&self) -> u8 {
        self.class_enable_vector() as u8
    }

    /// PFC: time[prio] in quanta (`prio` is taken modulo 8).
    #[inline]
    pub fn class_time(&self, prio: usize) -> u16 {
        let o = field::TIMES + 2 * (prio & 7);
        let b = self.buffer.as_ref();
        u16::from_be_bytes([b[o], b[o + 1]])
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> MacControl<T> {
    #[inline]
    pub fn set_opcode(&mut self, v: u16) {
        self.buffer.as_mut()[field::OPCODE].copy_from_slice(&v.to_be_bytes());
    }
    #[inline]
    pub fn set_pause_time(&mut self, v: u16) {
        self.buffer.as_mut()[field::PAUSE_TIME].copy_from_slice(&v.to_be_bytes());
    }
    #[inline]
    pub fn set_class_enable_vector(&mut self, v: u16) {
        self.buffer.as_mut()[field::CEV].copy_from_slice(&v.to_be_bytes());
    }
    #[inline]
    pub fn set_class_time(&mut self, prio: usize, v: u16) {
        let o = field::TIMES + 2 * (prio & 7);
        self.buffer.as_mut()[o..o + 2].copy_from_slice(&v.to_be_bytes());
    }
}

/// A PFC frame's content.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PfcRepr {
    /// e[7..0]: bit n set = time[n] is valid for priority n.
    pub class_enable: u8,
    /// time[n] in quanta; 0 with the enable bit set = resume (XON).
    pub times: [u16; 8],
}

impl PfcRepr {
    /// Pause the priorities in `prios` (bit n = priority n) for `quanta`.
    pub const fn pause(prios: u8, quanta: u16) -> PfcRepr {
        let mut times = [0u16; 8];
        let mut i = 0;
        while i < 8 {
            if prios & (1 << i) != 0 {
                times[i] = quanta;
            }
            i += 1;
        }
        PfcRepr {
            class_enable: prios,
            times,
        }
    }

    /// Resume (zero time) the priorities in `prios`.
    pub const fn resume(prios: u8) -> PfcRepr {
        PfcRepr {
            class_enable: prios,
            times: [0; 8],
        }
    }

    /// The effective pause time for `prio`: `None` if not enabled.
    pub fn time(&self, prio: usize) -> Option<u16> {
        if prio < 8 && self.class_enable & (1 << prio) != 0 {
            Some(self.times[prio])
        } else {
            None
        }
    }
}

/// A MAC Control PDU this router understands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MacControlRepr {
    /// 802.3x PAUSE for all traffic (quanta; 0 = resume).
    Pause { quanta: u16 },
    /// 802.1Qbb per-priority pause.
    Pfc(PfcRepr),
}

impl MacControlRepr {
    /// Parse PAUSE or PFC (other opcodes: `Unrecognized`). The reserved
    /// upper octet of the PFC vector is ignored, as 802.1Qbb requires.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(p: &MacControl<&T>) -> Result<MacControlRepr> {
        p.check_len()?;
        match p.opcode() {
            OPCODE_PAUSE => Ok(MacControlRepr::Pause {
                quanta: p.pause_time(),
            }),
            OPCODE_PFC => {
                let mut times = [0u16; 8];
                for (i, t) in times.iter_mut().enumerate() {
                    *t = p.class_time(i);
                }
                Ok(MacControlRepr::Pfc(PfcRepr {
                    class_enable: p.class_enable(),
                    times,
                }))
            }
            _ => Err(Error::Unrecognized),
        }
    }

    /// Length of the PDU (without padding).
    pub const fn buffer_len(&self) -> usize {
        match self {
            MacControlRepr::Pause { .. } => PAUSE_LEN,
            MacControlRepr::Pfc(_) => PFC_LEN,
        }
    }

    /// Write the PDU into the start of the view's buffer (which must hold
    /// `buffer_len()` octets).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut MacControl<T>) -> Result<()> {
        if p.buffer.as_ref().len() < self.buffer_len() {
            return Err(Error::Truncated);
        }
        match self {
            MacControlRepr::Pause { quanta } => {
                p.set_opcode(OPCODE_PAUSE);
                p.set_pause_time(*quanta);
            }
            MacControlRepr::Pfc(r) => {
                p.set_opcode(OPCODE_PFC);
                p.set_class_enable_vector(u16::from(r.class_enable));
                for (i, t) in r.times.iter().enumerate() {
                    p.set_class_time(i, *t);
                }
            }
        }
        Ok(())
    }
}

/// A whole PAUSE/PFC Ethernet frame (without FCS).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FrameRepr {
    /// Normally [`DST_MAC`]; 802.3 Annex 31B also allows the peer's address.
    pub dst: [u8; 6],
    /// The sending port's address.
    pub src: [u8; 6],
    pub control: MacControlRepr,
}

impl FrameRepr {
    /// A PFC frame to the reserved multicast address.
    pub const fn pfc(src: [u8; 6], pfc: PfcRepr) -> FrameRepr {
        FrameRepr {
            dst: DST_MAC,
            src,
            control: MacControlRepr::Pfc(pfc),
        }
    }

    /// Parse an untagged Ethernet frame (FCS stripped; padding allowed, or
    /// absent as in some captures).
    pub fn parse(frame: &[u8]) -> Result<FrameRepr> {
        if frame.len() < ETH_HEADER_LEN {
            return Err(Error::Truncated);
        }
        if u16::from_be_bytes([frame[12], frame[13]]) != ETHERTYPE_MAC_CONTROL {
            return Err(Error::Unrecognized);
        }
        let mut dst = [0u8; 6];
        dst.copy_from_slice(&frame[0..6]);
        let mut src = [0u8; 6];
        src.copy_from_slice(&frame[6..12]);
        let p = MacControl::new_checked(&frame[ETH_HEADER_LEN..])?;
        Ok(FrameRepr {
            dst,
            src,
            control: MacControlRepr::parse(&p)?,
        })
    }

    /// Frame length (the 60-octet minimum; the FCS is the NIC's).
    pub const fn buffer_len(&self) -> usize {
        MIN_FRAME_LEN
    }

    /// Write the frame with zero padding to 60 octets; returns 60.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize> {
        let b = buf.get_mut(..MIN_FRAME_LEN).ok_or(Error::Truncated)?;
        b[0..6].copy_from_slice(&self.dst);
        b[6..12].copy_from_slice(&self.src);
        b[12..14].copy_from_slice(&ETHERTYPE_MAC_CONTROL.to_be_bytes());
        b[ETH_HEADER_LEN..].fill(0);
        self.control
            .emit(&mut MacControl::new_unchecked(&mut b[ETH_HEADER_LEN..]))?;
        Ok(MIN_FRAME_LEN)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const SRC: [u8; 6] = [0x02, 0x00, 0x00, 0x00, 0x00, 0x01];

    #[test]
    fn pfc_frame_by_hand() {
        // Pause priority 3 for 0xffff quanta and resume priority 5.
        let mut r = PfcRepr::pause(1 << 3, 0xffff);
        r.class_enable |= 1 << 5;
        let f = FrameRepr::pfc(SRC, r);
        let mut buf = [0xaau8; 64];
        assert_eq!(f.emit(&mut buf).unwrap(), 60);
        #[rustfmt::skip]
        let want: [u8; 60] = [
            0x01, 0x80, 0xc2, 0x00, 0x00, 0x01, // dst
            0x02, 0x00, 0x00, 0x00, 0x00, 0x01, // src
            0x88, 0x08, // MAC Control
            0x01, 0x01, // PFC opcode
            0x00, 0x28, // e[5] | e[3]
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // time[0..3]
            0xff, 0xff, // time[3]
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // time[4..8]
            0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, // pad to 60
        ];
        assert_eq!(&buf[..60], &want[..]);
        assert_eq!(buf[60], 0xaa);
        let back = FrameRepr::parse(&buf[..60]).unwrap();
        assert_eq!(back, f);
        let MacControlRepr::Pfc(p) = back.control else {
            panic!()
        };
        assert_eq!(p.time(3), Some(0xffff));
        assert_eq!(p.time(5), Some(0));
        assert_eq!(p.time(4), None);
    }

    #[test]
    fn classic_pause() {
        let mut f = [0u8; 60];
        f[..6].copy_from_slice(&DST_MAC);
        f[6..12].copy_from_slice(&SRC);
        f[12..18].copy_from_slice(&[0x88, 0x08, 0x00, 0x01, 0x12, 0x34]);
        let r = FrameRepr::parse(&f).unwrap();
        assert_eq!(r.control, MacControlRepr::Pause { quanta: 0x1234 });
        let mut g = [0u8; 60];
        r.emit(&mut g).unwrap();
        assert_eq!(f, g);
    }

    #[test]
    fn errors() {
        let mut buf = [0u8; 60];
        FrameRepr::pfc(SRC, PfcRepr::resume(0xff))
            .emit(&mut buf)
            .unwrap();
        assert_eq!(FrameRepr::parse(&buf[..33]), Err(Error::Truncated));
        FrameRepr::parse(&buf[..34]).unwrap();
        let mut e = buf;
        e[13] = 0x00;
        assert_eq!(FrameRepr::parse(&e), Err(Error::Unrecognized));
        let mut e = buf;
        e[15] = 0x02; // GATE
        assert_eq!(FrameRepr::parse(&e), Err(Error::Unrecognized));
        // Reserved upper octet of the vector is ignored.
        let mut e = buf;
        e[16] = 0xff;
        assert_eq!(
            FrameRepr::parse(&e).unwrap().control,
            MacControlRepr::Pfc(PfcRepr::resume(0xff))
        );
        assert_eq!(
            MacControl::new_checked(&[0x00u8, 0x01, 0x00][..]),
            Err(Error::Truncated)
        );
        assert_eq!(
            MacControl::new_checked(&[0x00u8][..]),
            Err(Error::Truncated)
        );
    }

    #[test]
    fn quanta() {
        // 100 Gb/s: one quantum is 5.12 ns.
        assert_eq!(quanta_from_micros(1, 100_000_000_000), 196); // 195.3 -> 196
        assert_eq!(nanos_from_quanta(196, 100_000_000_000), 1003);
        // 10 Gb/s: 51.2 ns; 3355 us is 65527.3 -> 65528 quanta; 4 ms saturates.
        assert_eq!(quanta_from_micros(3355, 10_000_000_000), 65528);
        assert_eq!(quanta_from_micros(4000, 10_000_000_000), 0xffff);
        // 1 Gb/s: 512 ns per quantum.
        assert_eq!(quanta_from_micros(512, 1_000_000_000), 1000);
        assert_eq!(nanos_from_quanta(1000, 1_000_000_000), 512_000);
        assert_eq!(quanta_from_micros(0, 1_000_000_000), 0);
        assert_eq!(nanos_from_quanta(5, 0), 0);
    }

    proptest! {
        #[test]
        fn roundtrip(pfc in any::<bool>(), ce in any::<u8>(), times in any::<[u16; 8]>(), q in any::<u16>(), dst in any::<[u8; 6]>(), src in any::<[u8; 6]>()) {
            let control = if pfc { MacControlRepr::Pfc(PfcRepr { class_enable: ce, times }) } else { MacControlRepr::Pause { quanta: q } };
            let f = FrameRepr { dst, src, control };
            let mut buf = [0u8; 60];
            f.emit(&mut buf).unwrap();
            prop_assert_eq!(FrameRepr::parse(&buf).unwrap(), f);
            // Truncating into the PDU fails.
            let need = ETH_HEADER_LEN + control.buffer_len();
            for n in 0..need {
                prop_assert!(FrameRepr::parse(&buf[..n]).is_err());
            }
        }

        #[test]
        fn never_panics(data in proptest::collection::vec(any::<u8>(), 0..80)) {
            let _ = FrameRepr::parse(&data);
            if let Ok(p) = MacControl::new_checked(&data[..]) {
                let _ = MacControlRepr::parse(&p);
            }
        }

        #[test]
        fn quanta_monotone(us in 0u64..100_000, bps in 1_000_000u64..400_000_000_000) {
            let q = quanta_from_micros(us, bps);
            // Rounded up: the quanta cover at least the requested time
            // unless saturated.
            if q < 0xffff {
                prop_assert!(u128::from(q) * 512 * 1_000_000 >= u128::from(us) * u128::from(bps));
                prop_assert!(q == 0 || u128::from(q - 1) * 512 * 1_000_000 < u128::from(us) * u128::from(bps));
            }
        }
    }
}
