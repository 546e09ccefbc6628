//! RoCEv2 transport headers and the Invariant CRC.
//!
//! * [`Bth`] / [`BthRepr`]: the Base Transport Header (IBTA vol. 1 s.9.2),
//!   including the *Extension Present* (E) bit proposed by
//!   draft-tian-ccwg-long-haul-cnp-00 s.6.2.1 (the most significant bit of
//!   the six reserved bits after BECN).
//! * [`Aeth`] / [`AethRepr`]: the ACK Extended Transport Header (s.9.3.5),
//!   with the ACK / RNR NAK / NAK syndromes.
//! * [`Reth`] / [`RethRepr`]: the RDMA Extended Transport Header (s.9.3.3).
//! * [`CnpRepr`]: the standard RoCEv2 Congestion Notification Packet
//!   (opcode 0x81, BECN set, 16 reserved octets).
//! * The ICRC of IBTA Annex A17 (RoCEv2) for IPv4 and IPv6: [`icrc`],
//!   [`icrc_full`], [`icrc_check`], [`icrc_fill`], and the incremental
//!   [`icrc_update`] whose cost does not depend on the packet length.
//!
//! The [`Bth`] view covers the UDP payload of a RoCEv2 packet: the BTH, the
//! extended headers and payload, and the 4-octet ICRC trailer. ICRC functions
//! work on the IP datagram (IP header through ICRC).

use super::{checksum, Error, Result};

/// Length of the BTH.
pub const BTH_LEN: usize = 12;
/// Length of the AETH.
pub const AETH_LEN: usize = 4;
/// Length of the RETH.
pub const RETH_LEN: usize = 16;
/// Length of the ICRC trailer.
pub const ICRC_LEN: usize = 4;
/// Length of the reserved block that follows the BTH in a standard CNP.
pub const CNP_RESERVED_LEN: usize = 16;
/// The default partition key.
pub const DEFAULT_PKEY: u16 = 0xffff;

/// BTH opcodes (IBTA vol. 1 table 38) and classification helpers.
///
/// The top three bits select the transport (RC 000, UC 001, RD 010, UD 011,
/// CNP 100), the low five the operation.
pub mod opcode {
    pub const RC: u8 = 0x00;
    pub const UC: u8 = 0x20;
    pub const RD: u8 = 0x40;
    pub const UD: u8 = 0x60;
    /// Extended Reliable Connection (IBA Vol. 1 9.2, Table 38): opcodes
    /// 0xA0-0xB7, its responses as RC's (0xAD-0xB2).
    pub const XRC: u8 = 0xa0;

    pub const SEND_FIRST: u8 = 0x00;
    pub const SEND_MIDDLE: u8 = 0x01;
    pub const SEND_LAST: u8 = 0x02;
    pub const SEND_LAST_WITH_IMMEDIATE: u8 = 0x03;
    pub const SEND_ONLY: u8 = 0x04;
    pub const SEND_ONLY_WITH_IMMEDIATE: u8 = 0x05;
    pub const RDMA_WRITE_FIRST: u8 = 0x06;
    pub const RDMA_WRITE_MIDDLE: u8 = 0x07;
    pub const RDMA_WRITE_LAST: u8 = 0x08;
    pub const RDMA_WRITE_LAST_WITH_IMMEDIATE: u8 = 0x09;
    pub const RDMA_WRITE_ONLY: u8 = 0x0a;
    pub const RDMA_WRITE_ONLY_WITH_IMMEDIATE: u8 = 0x0b;
    pub const RDMA_READ_REQUEST: u8 = 0x0c;
    pub const RDMA_READ_RESPONSE_FIRST: u8 = 0x0d;
    pub const RDMA_READ_RESPONSE_MIDDLE: u8 = 0x0e;
    pub const RDMA_READ_RESPONSE_LAST: u8 = 0x0f;
    pub const RDMA_READ_RESPONSE_ONLY: u8 = 0x10;
    pub const ACKNOWLEDGE: u8 = 0x11;
    pub const ATOMIC_ACKNOWLEDGE: u8 = 0x12;
    pub const COMPARE_SWAP: u8 = 0x13;
    pub const FETCH_ADD: u8 = 0x14;

    /// RC Acknowledge (0x11).
    pub const RC_ACKNOWLEDGE: u8 = RC | ACKNOWLEDGE;
    /// The RoCEv2 Congestion Notification Packet.
    pub const CNP: u8 = 0x81;

    /// The transport bits (RC/UC/RD/UD/CNP...).
    #[inline]
    pub const fn transport(op: u8) -> u8 {
        op & 0xe0
    }

    /// The operation bits.
    #[inline]
    pub const fn operation(op: u8) -> u8 {
        op & 0x1f
    }

    /// Whether an AETH follows the BTH directly (RC responses). For RD the
    /// AETH comes after the RDETH and is not covered here.
    #[inline]
    pub const fn has_aeth(op: u8) -> bool {
        transport(op) == RC
            && matches!(
                operation(op),
                RDMA_READ_RESPONSE_FIRST
                    | RDMA_READ_RESPONSE_LAST
                    | RDMA_READ_RESPONSE_ONLY
                    | ACKNOWLEDGE
                    | ATOMIC_ACKNOWLEDGE
            )
    }

    /// Whether a RETH follows the BTH directly (RC and UC requests).
    #[inline]
    pub const fn has_reth(op: u8) -> bool {
        match transport(op) {
            RC => matches!(
                operation(op),
                RDMA_WRITE_FIRST
                    | RDMA_WRITE_ONLY
                    | RDMA_WRITE_ONLY_WITH_IMMEDIATE
                    | RDMA_READ_REQUEST
            ),
            UC => matches!(
                operation(op),
                RDMA_WRITE_FIRST | RDMA_WRITE_ONLY | RDMA_WRITE_ONLY_WITH_IMMEDIATE
            ),
            _ => false,
        }
    }

    /// Whether the packet carries ImmDt (4 octets, after any RETH).
    #[inline]
    pub const fn has_immediate(op: u8) -> bool {
        matches!(transport(op), RC | UC | RD | UD)
            && matches!(
                operation(op),
                SEND_LAST_WITH_IMMEDIATE
                    | SEND_ONLY_WITH_IMMEDIATE
                    | RDMA_WRITE_LAST_WITH_IMMEDIATE
                    | RDMA_WRITE_ONLY_WITH_IMMEDIATE
            )
    }

    /// Whether this opcode is a response (ACK, read response, atomic ACK)
    /// of RC, RD or XRC.
    #[inline]
    pub const fn is_response(op: u8) -> bool {
        matches!(transport(op), RC | RD | XRC)
            && matches!(
                operation(op),
                RDMA_READ_RESPONSE_FIRST
                    | RDMA_READ_RESPONSE_MIDDLE
                    | RDMA_READ_RESPONSE_LAST
                    | RDMA_READ_RESPONSE_ONLY
                    | ACKNOWLEDGE
                    | ATOMIC_ACKNOWLEDGE
            )
    }
}

mod field {
    use core::ops::Range;
    pub const OPCODE: usize = 0;
    pub const FLAGS: usize = 1; // SE | M | PadCnt(2) | TVer(4)
    pub const PKEY: Range<usize> = 2..4;
    pub const RESV8A: usize = 4; // FECN | BECN | E | resv5
    pub const DEST_QP: Range<usize> = 5..8;
    pub const ACK_REQ: usize = 8; // A | resv7
    pub const PSN: Range<usize> = 9..12;
    pub const PAYLOAD: usize = 12;
}

const SE: u8 = 0x80;
const MIG: u8 = 0x40;
const PAD_MASK: u8 = 0x30;
const TVER_MASK: u8 = 0x0f;
const FECN: u8 = 0x80;
const BECN: u8 = 0x40;
const EXT: u8 = 0x20;
const ACKREQ: u8 = 0x80;

#[inline]
fn be24(b: &[u8]) -> u32 {
    (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2])
}

#[inline]
fn put_be24(b: &mut [u8], v: u32) {
    b[0] = (v >> 16) as u8;
    b[1] = (v >> 8) as u8;
    b[2] = v as u8;
}

/// A read/write view of a RoCEv2 UDP payload: BTH, then everything up to the
/// ICRC, then the 4-octet ICRC.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bth<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Bth<T> {
    /// Wrap without checking the length.
    pub const fn new_unchecked(buffer: T) -> Bth<T> {
        Bth { buffer }
    }

    /// Wrap and check that the buffer holds a BTH and an ICRC.
    pub fn new_checked(buffer: T) -> Result<Bth<T>> {
        let p = Self::new_unchecked(buffer);
        p.check_len()?;
        Ok(p)
    }

    /// Whether the buffer holds at least a BTH and an ICRC.
    pub fn check_len(&self) -> Result<()> {
        if self.buffer.as_ref().len() < BTH_LEN + ICRC_LEN {
            Err(Error::Truncated)
        } else {
            Ok(())
        }
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    #[inline]
    pub fn opcode(&self) -> u8 {
        self.buffer.as_ref()[field::OPCODE]
    }
    #[inline]
    pub fn solicited(&self) -> bool {
        self.buffer.as_ref()[field::FLAGS] & SE != 0
    }
    #[inline]
    pub fn migreq(&self) -> bool {
        self.buffer.as_ref()[field::FLAGS] & MIG != 0
    }
    #[inline]
    pub fn pad_count(&self) -> u8 {
        (self.buffer.as_ref()[field::FLAGS] & PAD_MASK) >> 4
    }
    #[inline]
    pub fn tver(&self) -> u8 {
        self.buffer.as_ref()[field::FLAGS] & TVER_MASK
    }
    #[inline]
    pub fn pkey(&self) -> u16 {
        let b = &self.buffer.as_ref()[field::PKEY];
        u16::from_be_bytes([b[0], b[1]])
    }
    #[inline]
    pub fn fecn(&self) -> bool {
        self.buffer.as_ref()[field::RESV8A] & FECN != 0
    }
    #[inline]
    pub fn becn(&self) -> bool {
        self.buffer.as_ref()[field::RESV8A] & BECN != 0
    }
    /// The proposed Extension Present bit (draft-tian-ccwg-long-haul-cnp s.6.2.1).
    #[inline]
    pub fn ext(&self) -> bool {
        self.buffer.as_ref()[field::RESV8A] & EXT != 0
    }
    /// The five reserved bits that remain after FECN, BECN and E.
    #[inline]
    pub fn resv5(&self) -> u8 {
        self.buffer.as_ref()[field::RESV8A] & 0x1f
    }
    #[inline]
    pub fn dest_qp(&self) -> u32 {
        be24(&self.buffer.as_ref()[field::DEST_QP])
    }
    #[inline]
    pub fn ack_req(&self) -> bool {
        self.buffer.as_ref()[field::ACK_REQ] & ACKREQ != 0
    }
    #[inline]
    pub fn resv7(&self) -> u8 {
        self.buffer.as_ref()[field::ACK_REQ] & 0x7f
    }
    #[inline]
    pub fn psn(&self) -> u32 {
        be24(&self.buffer.as_ref()[field::PSN])
    }

    /// The ICRC as a value (the trailer is stored least significant octet first).
    #[inline]
    pub fn icrc(&self) -> u32 {
        let b = self.buffer.as_ref();
        let n = b.len();
        u32::from_le_bytes([b[n - 4], b[n - 3], b[n - 2], b[n - 1]])
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> Bth<&'a T> {
    /// Everything between the BTH and the ICRC (extended headers, payload
    /// and pad octets).
    #[inline]
    pub fn payload(&self) -> &'a [u8] {
        let b = self.buffer.as_ref();
        &b[field::PAYLOAD..b.len() - ICRC_LEN]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Bth<T> {
    #[inline]
    pub fn set_opcode(&mut self, v: u8) {
        self.buffer.as_mut()[field::OPCODE] = v;
    }
    #[inline]
    fn set_bit(&mut self, idx: usize, mask: u8, v: bool) {
        let b = &mut self.buffer.as_mut()[idx];
        *b = if v { *b | mask } else { *b & !mask };
    }
    #[inline]
    pub fn set_solicited(&mut self, v: bool) {
        self.set_bit(field::FLAGS, SE, v)
    }
    #[inline]
    pub fn set_migreq(&mut self, v: bool) {
        self.set_bit(field::FLAGS, MIG, v)
    }
    #[inline]
    pub fn set_pad_count(&mut self, v: u8) {
        let b = &mut self.buffer.as_mut()[field::FLAGS];
        *b = (*b & !PAD_MASK) | ((v << 4) & PAD_MASK);
    }
    #[inline]
    pub fn set_tver(&mut self, v: u8) {
        let b = &mut self.buffer.as_mut()[field::FLAGS];
        *b = (*b & !TVER_MASK) | (v & TVER_MASK);
    }
    #[inline]
    pub fn set_pkey(&mut self, v: u16) {
        self.buffer.as_mut()[field::PKEY].copy_from_slice(&v.to_be_bytes());
    }
    #[inline]
    pub fn set_fecn(&mut self, v: bool) {
        self.set_bit(field::RESV8A, FECN, v)
    }
    #[inline]
    pub fn set_becn(&mut self, v: bool) {
        self.set_bit(field::RESV8A, BECN, v)
    }
    #[inline]
    pub fn set_ext(&mut self, v: bool) {
        self.set_bit(field::RESV8A, EXT, v)
    }
    #[inline]
    pub fn set_resv5(&mut self, v: u8) {
        let b = &mut self.buffer.as_mut()[field::RESV8A];
        *b = (*b & !0x1f) | (v & 0x1f);
    }
    /// Set the 24-bit destination QP (higher bits are dropped).
    #[inline]
    pub fn set_dest_qp(&mut self, v: u32) {
        put_be24(&mut self.buffer.as_mut()[field::DEST_QP], v)
    }
    #[inline]
    pub fn set_ack_req(&mut self, v: bool) {
        self.set_bit(field::ACK_REQ, ACKREQ, v)
    }
    #[inline]
    pub fn set_resv7(&mut self, v: u8) {
        let b = &mut self.buffer.as_mut()[field::ACK_REQ];
        *b = (*b & !0x7f) | (v & 0x7f);
    }
    /// Set the 24-bit PSN (higher bits are dropped).
    #[inline]
    pub fn set_psn(&mut self, v: u32) {
        put_be24(&mut self.buffer.as_mut()[field::PSN], v)
    }
    /// Write the ICRC trailer (least significant octet first).
    #[inline]
    pub fn set_icrc(&mut self, v: u32) {
        let b = self.buffer.as_mut();
        let n = b.len();
        b[n - 4..].copy_from_slice(&v.to_le_bytes());
    }
    /// Mutable access to everything between the BTH and the ICRC.
    #[inline]
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let b = self.buffer.as_mut();
        let n = b.len();
        &mut b[field::PAYLOAD..n - ICRC_LEN]
    }
}

impl<T: AsRef<[u8]>> AsRef<[u8]> for Bth<T> {
    fn as_ref(&self) -> &[u8] {
        self.buffer.as_ref()
    }
}

/// A high-level representation of a BTH. Reserved bits are ignored on parse
/// and written as zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BthRepr {
    pub opcode: u8,
    pub solicited: bool,
    pub migreq: bool,
    /// 0..=3 pad octets at the end of the payload.
    pub pad_count: u8,
    /// Transport header version (0).
    pub tver: u8,
    pub pkey: u16,
    pub fecn: bool,
    pub becn: bool,
    /// Extension Present (draft-tian-ccwg-long-haul-cnp s.6.2.1).
    pub ext: bool,
    /// 24-bit destination QP.
    pub dest_qp: u32,
    pub ack_req: bool,
    /// 24-bit packet sequence number.
    pub psn: u32,
}

impl BthRepr {
    /// Parse a BTH. Accepts only transport header version 0.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(bth: &Bth<&T>) -> Result<BthRepr> {
        bth.check_len()?;
        if bth.tver() != 0 {
            return Err(Error::Unrecognized);
        }
        if usize::from(bth.pad_count()) > bth.payload().len() {
            return Err(Error::BadLength);
        }
        Ok(BthRepr {
            opcode: bth.opcode(),
            solicited: bth.solicited(),
            migreq: bth.migreq(),
            pad_count: bth.pad_count(),
            tver: bth.tver(),
            pkey: bth.pkey(),
            fecn: bth.fecn(),
            becn: bth.becn(),
            ext: bth.ext(),
            dest_qp: bth.dest_qp(),
            ack_req: bth.ack_req(),
            psn: bth.psn(),
        })
    }

    /// Length of the BTH alone.
    pub const fn buffer_len(&self) -> usize {
        BTH_LEN
    }

    /// Write the BTH (the first 12 octets of the view; payload and ICRC are
    /// not touched).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, bth: &mut Bth<T>) {
        let b = &mut bth.buffer.as_mut()[..BTH_LEN];
        b[field::OPCODE] = self.opcode;
        b[field::FLAGS] = (if self.solicited { SE } else { 0 })
            | (if self.migreq { MIG } else { 0 })
            | ((self.pad_count << 4) & PAD_MASK)
            | (self.tver & TVER_MASK);
        b[field::PKEY].copy_from_slice(&self.pkey.to_be_bytes());
        b[field::RESV8A] = (if self.fecn { FECN } else { 0 })
            | (if self.becn { BECN } else { 0 })
            | (if self.ext { EXT } else { 0 });
        put_be24(&mut b[field::DEST_QP], self.dest_qp);
        b[field::ACK_REQ] = if self.ack_req { ACKREQ } else { 0 };
        put_be24(&mut b[field::PSN], self.psn);
    }

    /// A BTH with the given opcode, destination QP and PSN, default P_Key
    /// and every flag clear.
    pub const fn new(opcode: u8, dest_qp: u32, psn: u32) -> BthRepr {
        BthRepr {
            opcode,
            solicited: false,
            migreq: false,
            pad_count: 0,
            tver: 0,
            pkey: DEFAULT_PKEY,
            fecn: false,
            becn: false,
            ext: false,
            dest_qp: dest_qp & 0x00ff_ffff,
            ack_req: false,
            psn: psn & 0x00ff_ffff,
        }
    }
}

// ---------------------------------------------------------------- AETH

/// NAK codes of the AETH syndrome (IBTA vol. 1 table 44).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NakCode {
    PsnSequenceError,
    InvalidRequest,
    RemoteAccessError,
    RemoteOperationalError,
    InvalidRdRequest,
    /// 5..=31, reserved.
    Reserved(u8),
}

impl From<u8> for NakCode {
    fn from(v: u8) -> Self {
        match v & 0x1f {
            0 => NakCode::PsnSequenceError,
            1 => NakCode::InvalidRequest,
            2 => NakCode::RemoteAccessError,
            3 => NakCode::RemoteOperationalError,
            4 => NakCode::InvalidRdRequest,
            x => NakCode::Reserved(x),
        }
    }
}

impl From<NakCode> for u8 {
    fn from(v: NakCode) -> u8 {
        match v {
            NakCode::PsnSequenceError => 0,
            NakCode::InvalidRequest => 1,
            NakCode::RemoteAccessError => 2,
            NakCode::RemoteOperationalError => 3,
            NakCode::InvalidRdRequest => 4,
            NakCode::Reserved(x) => x & 0x1f,
        }
    }
}

/// The AETH syndrome (IBTA vol. 1 s.9.7.5.1, table 43).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Syndrome {
    /// 0b00: ACK with a 5-bit credit count (31 = invalid/unlimited).
    Ack { credits: u8 },
    /// 0b01: Receiver Not Ready NAK with a 5-bit RNR timer code.
    RnrNak { timer: u8 },
    /// 0b11: NAK.
    Nak(NakCode),
}

impl Syndrome {
    /// Decode a syndrome octet. Bit 7 is reserved and must be 0; type 0b10
    /// is reserved.
    pub fn from_octet(v: u8) -> Result<Syndrome> {
        if v & 0x80 != 0 {
            return Err(Error::Malformed);
        }
        let low = v & 0x1f;
        match (v >> 5) & 0x3 {
            0 => Ok(Syndrome::Ack { credits: low }),
            1 => Ok(Syndrome::RnrNak { timer: low }),
            3 => Ok(Syndrome::Nak(NakCode::from(low))),
            _ => Err(Error::Unrecognized),
        }
    }

    /// Encode the syndrome octet.
    pub fn to_octet(self) -> u8 {
        match self {
            Syndrome::Ack { credits } => credits & 0x1f,
            Syndrome::RnrNak { timer } => 0x20 | (timer & 0x1f),
            Syndrome::Nak(c) => 0x60 | u8::from(c),
        }
    }

    pub fn is_ack(self) -> bool {
        matches!(self, Syndrome::Ack { .. })
    }
}

mod aeth_field {
    use core::ops::Range;
    pub const SYNDROME: usize = 0;
    pub const MSN: Range<usize> = 1..4;
}

/// A view of an AETH (4 octets: syndrome, 24-bit MSN).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Aeth<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Aeth<T> {
    pub const fn new_unchecked(buffer: T) -> Aeth<T> {
        Aeth { buffer }
    }
    pub fn new_checked(buffer: T) -> Result<Aeth<T>> {
        let p = Self::new_unchecked(buffer);
        p.check_len()?;
        Ok(p)
    }
    pub fn check_len(&self) -> Result<()> {
        if self.buffer.as_ref().len() < AETH_LEN {
            Err(Error::Truncated)
        } else {
            Ok(())
        }
    }
    pub fn into_inner(self) -> T {
        self.buffer
    }
    #[inline]
    pub fn syndrome(&self) -> u8 {
        self.buffer.as_ref()[aeth_field::SYNDROME]
    }
    #[inline]
    pub fn msn(&self) -> u32 {
        be24(&self.buffer.as_ref()[aeth_field::MSN])
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Aeth<T> {
    #[inline]
    pub fn set_syndrome(&mut self, v: u8) {
        self.buffer.as_mut()[aeth_field::SYNDROME] = v;
    }
    #[inline]
    pub fn set_msn(&mut self, v: u32) {
        put_be24(&mut self.buffer.as_mut()[aeth_field::MSN], v)
    }
}

/// A high-level representation of an AETH.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AethRepr {
    pub syndrome: Syndrome,
    /// 24-bit message sequence number.
    pub msn: u32,
}

impl AethRepr {
    pub fn parse<T: AsRef<[u8]> + ?Sized>(aeth: &Aeth<&T>) -> Result<AethRepr> {
        aeth.check_len()?;
        Ok(AethRepr {
            syndrome: Syndrome::from_octet(aeth.syndrome())?,
            msn: aeth.msn(),
        })
    }
    pub const fn buffer_len(&self) -> usize {
        AETH_LEN
    }
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, aeth: &mut Aeth<T>) {
        aeth.set_syndrome(self.syndrome.to_octet());
        aeth.set_msn(self.msn);
    }
}

// ---------------------------------------------------------------- RETH

mod reth_field {
    use core::ops::Range;
    pub const VA: Range<usize> = 0..8;
    pub const RKEY: Range<usize> = 8..12;
    pub const DMA_LEN: Range<usize> = 12..16;
}

/// A view of a RETH (virtual address, R_Key, DMA length).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reth<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Reth<T> {
    pub const fn new_unchecked(buffer: T) -> Reth<T> {
        Reth { buffer }
    }
    pub fn new_checked(buffer: T) -> Result<Reth<T>> {
        let p = Self::new_unchecked(buffer);
        p.check_len()?;
        Ok(p)
    }
    pub fn check_len(&self) -> Result<()> {
        if self.buffer.as_ref().len() < RETH_LEN {
            Err(Error::Truncated)
        } else {
            Ok(())
        }
    }
    pub fn into_inner(self) -> T {
        self.buffer
    }
    #[inline]
    pub fn virtual_address(&self) -> u64 {
        let b = &self.buffer.as_ref()[reth_field::VA];
        u64::from_be_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]])
    }
    #[inline]
    pub fn rkey(&self) -> u32 {
        let b = &self.buffer.as_ref()[reth_field::RKEY];
        u32::from_be_bytes([b[0], b[1], b[2], b[3]])
    }
    #[inline]
    pub fn dma_length(&self) -> u32 {
        let b = &self.buffer.as_ref()[reth_field::DMA_LEN];
        u32::from_be_bytes([b[0], b[1], b[2], b[3]])
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Reth<T> {
    #[inline]
    pub fn set_virtual_address(&mut self, v: u64) {
        self.buffer.as_mut()[reth_field::VA].copy_from_slice(&v.to_be_bytes());
    }
    #[inline]
    pub fn set_rkey(&mut self, v: u32) {
        self.buffer.as_mut()[reth_field::RKEY].copy_from_slice(&v.to_be_bytes());
    }
    #[inline]
    pub fn set_dma_length(&mut self, v: u32) {
        self.buffer.as_mut()[reth_field::DMA_LEN].copy_from_slice(&v.to_be_bytes());
    }
}

/// A high-level representation of a RETH.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RethRepr {
    pub virtual_address: u64,
    pub rkey: u32,
    pub dma_length: u32,
}

impl RethRepr {
    pub fn parse<T: AsRef<[u8]> + ?Sized>(reth: &Reth<&T>) -> Result<RethRepr> {
        reth.check_len()?;
        Ok(RethRepr {
            virtual_address: reth.virtual_address(),
            rkey: reth.rkey(),
            dma_length: reth.dma_length(),
        })
    }
    pub const fn buffer_len(&self) -> usize {
        RETH_LEN
    }
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, reth: &mut Reth<T>) {
        reth.set_virtual_address(self.virtual_address);
        reth.set_rkey(self.rkey);
        reth.set_dma_length(self.dma_length);
    }
}

// ---------------------------------------------------------------- CNP

/// The standard RoCEv2 CNP: BTH with opcode 0x81 and BECN set, 16 reserved
/// octets, ICRC. A CNP whose BTH has the E bit set is a Long-haul CNP
/// (see `wire::lhcnp`) and is refused here with `Unrecognized`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CnpRepr {
    pub pkey: u16,
    /// The QP that should slow down (24 bits).
    pub dest_qp: u32,
    /// FECN as received (normally clear).
    pub fecn: bool,
}

impl CnpRepr {
    /// Parse a CNP from the UDP payload (BTH .. ICRC). Reserved octets are
    /// not checked; BECN, which the RoCEv2 annex requires in a CNP, must be
    /// set (`Malformed` otherwise).
    pub fn parse<T: AsRef<[u8]> + ?Sized>(bth: &Bth<&T>) -> Result<CnpRepr> {
        bth.check_len()?;
        if bth.opcode() != opcode::CNP || bth.ext() {
            return Err(Error::Unrecognized);
        }
        if bth.tver() != 0 {
            return Err(Error::Unrecognized);
        }
        if bth.payload().len() < CNP_RESERVED_LEN {
            return Err(Error::Truncated);
        }
        if !bth.becn() {
            return Err(Error::Malformed);
        }
        Ok(CnpRepr {
            pkey: bth.pkey(),
            dest_qp: bth.dest_qp(),
            fecn: bth.fecn(),
        })
    }

    /// BTH + reserved + ICRC.
    pub const fn buffer_len(&self) -> usize {
        BTH_LEN + CNP_RESERVED_LEN + ICRC_LEN
    }

    /// The BTH this CNP carries.
    pub const fn bth(&self) -> BthRepr {
        let mut b = BthRepr::new(opcode::CNP, self.dest_qp, 0);
        b.pkey = self.pkey;
        b.fecn = self.fecn;
        b.becn = true;
        b
    }

    /// Write BTH and reserved octets into `bth` (whose buffer must be exactly
    /// or at least `buffer_len()`; the ICRC trailer is left for
    /// [`icrc_fill`]).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, bth: &mut Bth<T>) {
        self.bth().emit(bth);
        let b = bth.buffer.as_mut();
        b[BTH_LEN..BTH_LEN + CNP_RESERVED_LEN].fill(0);
    }
}

// ---------------------------------------------------------------- ICRC

/// CRC-32 (reflected, polynomial 0x04C11DB7) as used by the ICRC.
const POLY: u32 = 0xedb8_8320;

/// The crc32 state after the 8 octets of 0xFF that stand for the masked
/// LRH (RoCEv2 annex A17.4.3.2): crc32(ff ff ff ff ff ff ff ff).
const PREFIX_CRC: u32 = {
    let mut crc = 0xffff_ffffu32;
    let mut i = 0;
    while i < 8 {
        crc ^= 0xff;
        let mut k = 0;
        while k < 8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ POLY
            } else {
                crc >> 1
            };
            k += 1;
        }
        i += 1;
    }
    !crc
};

/// Byte-wise table for the raw (zero-init, no final xor) CRC of short deltas.
const CRC_TABLE: [u32; 256] = {
    let mut t = [0u32; 256];
    let mut n = 0;
    while n < 256 {
        let mut c = n as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 { (c >> 1) ^ POLY } else { c >> 1 };
            k += 1;
        }
        t[n] = c;
        n += 1;
    }
    t
};

/// Multiply two polynomials modulo P (reflected representation), one bit at
/// a time. Only used at compile time to build [`ZEROS`] and in tests.
const fn multmodp(a: u32, mut b: u32) -> u32 {
    let mut m = 1u32 << 31;
    let mut p = 0u32;
    loop {
        if a & m != 0 {
            p ^= b;
            if a & (m - 1) == 0 {
                break;
            }
        }
        m >>= 1;
        if m == 0 {
            break;
        }
        b = if b & 1 != 0 { (b >> 1) ^ POLY } else { b >> 1 };
    }
    p
}

/// `ZEROS[k][i]` = x^(8 * i * 256^k) mod P (reflected): the operator that
/// appends `i * 256^k` zero octets to a raw CRC. Four base-256 digits cover
/// any length below 2^32.
const ZEROS: [[u32; 256]; 4] = {
    let mut t = [[0u32; 256]; 4];
    // x^8: in reflected form the bit for x^i is 1 << (31 - i).
    let mut unit = 1u32 << (31 - 8);
    let mut k = 0;
    while k < 4 {
        t[k][0] = 1u32 << 31; // x^0
        let mut i = 1;
        while i < 256 {
            t[k][i] = multmodp(t[k][i - 1], unit);
            i += 1;
        }
        unit = multmodp(t[k][255], unit);
        k += 1;
    }
    t
};

/// Carry-less product of two 32-bit values: PCLMULQDQ where the CPU has it
/// (detected once by std), else a portable 4-bit-window loop.
#[inline]
fn clmul32(a: u32, b: u32) -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        if std::is_x86_feature_detected!("pclmulqdq") {
            // SAFETY: the CPU supports PCLMULQDQ and SSE2 (checked above;
            // SSE2 is baseline on x86_64).
            return unsafe { clmul32_pclmul(a, b) };
        }
    }
    clmul32_soft(a, b)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "pclmulqdq")]
unsafe fn clmul32_pclmul(a: u32, b: u32) -> u64 {
    use core::arch::x86_64::{_mm_clmulepi64_si128, _mm_cvtsi128_si64, _mm_cvtsi64_si128};
    let va = _mm_cvtsi64_si128(i64::from(a));
    let vb = _mm_cvtsi64_si128(i64::from(b));
    _mm_cvtsi128_si64(_mm_clmulepi64_si128(va, vb, 0x00)) as u64
}

/// Portable carry-less product (4-bit windows, no branches on data).
#[inline]
fn clmul32_soft(a: u32, b: u32) -> u64 {
    let b = u64::from(b);
    let mut t = [0u64; 16];
    let mut i = 1;
    while i < 16 {
        // t[i] = t[i without its top bit] ^ (b << top bit).
        let top = 63 - (i as u64).leading_zeros() as usize;
        t[i] = t[i ^ (1 << top)] ^ (b << top);
        i += 1;
    }
    let mut r = 0u64;
    let mut s = 28i32;
    while s >= 0 {
        r = (r << 4) ^ t[((a >> s) & 0xf) as usize];
        s -= 4;
    }
    r
}

/// a * b mod P in the reflected representation. The reflected carry-less
/// product, shifted left by one, holds x^63..x^32 in its low half and
/// x^31..x^0 in its high half; the low half times x^32 is reduced by four
/// zero-octet steps of the byte table.
#[inline]
fn mulmod(a: u32, b: u32) -> u32 {
    let r = clmul32(a, b) << 1;
    let lo = r as u32;
    // Four zero octets at once (slicing-by-4): independent loads.
    let t = &SLICE4;
    t[3][(lo & 0xff) as usize]
        ^ t[2][((lo >> 8) & 0xff) as usize]
        ^ t[1][((lo >> 16) & 0xff) as usize]
        ^ t[0][(lo >> 24) as usize]
        ^ (r >> 32) as u32
}

/// `SLICE4[k][i]`: the raw CRC register `i` advanced by `k + 1` zero octets
/// (`SLICE4[0]` is the byte table).
const SLICE4: [[u32; 256]; 4] = {
    let mut t = [[0u32; 256]; 4];
    let mut i = 0;
    while i < 256 {
        t[0][i] = CRC_TABLE[i];
        let mut k = 1;
        while k < 4 {
            let v = t[k - 1][i];
            t[k][i] = (v >> 8) ^ CRC_TABLE[(v & 0xff) as usize];
            k += 1;
        }
        i += 1;
    }
    t
};

/// Append `n` zero octets to the raw CRC `v`: v * x^(8n) mod P, with at most
/// one multiplication per non-zero base-256 digit of `n` (two for any IP
/// datagram).
#[inline]
fn append_zeros(mut v: u32, n: usize) -> u32 {
    let mut n = n as u64;
    let mut k = 0;
    while n != 0 {
        let digit = (n & 0xff) as usize;
        if k < 4 {
            if digit != 0 {
                v = mulmod(v, ZEROS[k][digit]);
            }
        } else {
            // Beyond 2^32 octets: fold the rest with 256^4 steps.
            for _ in 0..digit {
                v = mulmod(v, mulmod(ZEROS[3][255], ZEROS[3][1]));
            }
        }
        n >>= 8;
        k += 1;
    }
    v
}

/// Raw CRC (zero initial register, no final xor) of `old ^ new`
/// (slicing-by-4; rewrites are a few octets).
#[inline]
fn raw_crc_xor(old: &[u8], new: &[u8]) -> u32 {
    let t = &SLICE4;
    let mut c = 0u32;
    let mut o4 = old.chunks_exact(4);
    let mut n4 = new.chunks_exact(4);
    for (o, n) in (&mut o4).zip(&mut n4) {
        c ^= u32::from_le_bytes([o[0] ^ n[0], o[1] ^ n[1], o[2] ^ n[2], o[3] ^ n[3]]);
        c = t[3][(c & 0xff) as usize]
            ^ t[2][((c >> 8) & 0xff) as usize]
            ^ t[1][((c >> 16) & 0xff) as usize]
            ^ t[0][(c >> 24) as usize];
    }
    for (o, n) in o4.remainder().iter().zip(n4.remainder()) {
        c = CRC_TABLE[((c ^ u32::from(o ^ n)) & 0xff) as usize] ^ (c >> 8);
    }
    c
}

/// Where the ICRC trailer sits and what it covers in an IP datagram that
/// carries RoCEv2.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IcrcLayout {
    /// 4 (IPv4) or 6 (IPv6).
    pub ip_version: u8,
    /// Length of the IP header (IPv4 with options, or the 40-octet IPv6 header).
    pub ip_header_len: usize,
    /// Length of the datagram as its IP length field says (≤ buffer length).
    pub datagram_len: usize,
}

impl IcrcLayout {
    /// Offset of the UDP header in the datagram.
    pub const fn udp_offset(&self) -> usize {
        self.ip_header_len
    }
    /// Offset of the BTH in the datagram.
    pub const fn bth_offset(&self) -> usize {
        self.ip_header_len + 8
    }
    /// Number of octets covered by the ICRC after the 8-octet 0xFF prefix
    /// (from the IP header to the octet before the ICRC).
    pub const fn covered_len(&self) -> usize {
        self.datagram_len - ICRC_LEN
    }
    /// Offset of the ICRC trailer.
    pub const fn icrc_offset(&self) -> usize {
        self.datagram_len - ICRC_LEN
    }

    /// Locate the headers of a RoCEv2 datagram: IPv4 (any IHL) or IPv6 with
    /// UDP as next header (no extension headers), then UDP, BTH and ICRC.
    /// Octets after the IP length (e.g. Ethernet padding) are ignored.
    pub fn of(datagram: &[u8]) -> Result<IcrcLayout> {
        let first = *datagram.first().ok_or(Error::Truncated)?;
        let (ip_version, hlen, total) = match first >> 4 {
            4 => {
                if datagram.len() < 20 {
                    return Err(Error::Truncated);
                }
                let hlen = usize::from(first & 0x0f) * 4;
                if hlen < 20 {
                    return Err(Error::BadLength);
                }
                if datagram[9] != 17 {
                    return Err(Error::Unrecognized);
                }
                let total = usize::from(u16::from_be_bytes([datagram[2], datagram[3]]));
                (4, hlen, total)
            }
            6 => {
                if datagram.len() < 40 {
                    return Err(Error::Truncated);
                }
                if datagram[6] != 17 {
                    return Err(Error::Unrecognized);
                }
                let plen = usize::from(u16::from_be_bytes([datagram[4], datagram[5]]));
                (6, 40, 40 + plen)
            }
            _ => return Err(Error::Unrecognized),
        };
        if total > datagram.len() {
            return Err(Error::Truncated);
        }
        if total < hlen + 8 + BTH_LEN + ICRC_LEN {
            return Err(Error::BadLength);
        }
        let udp_len = usize::from(u16::from_be_bytes([datagram[hlen + 4], datagram[hlen + 5]]));
        if udp_len != total - hlen {
            return Err(Error::BadLength);
        }
        Ok(IcrcLayout {
            ip_version,
            ip_header_len: hlen,
            datagram_len: total,
        })
    }
}

/// ICRC over `ip_header` (IPv4 with options or the 40-octet IPv6 header; the
/// version nibble decides the masking) followed by `udp_to_payload` (UDP
/// header, BTH, and everything up to but excluding the ICRC).
///
/// Variant fields are replaced by ones: IPv4 TOS, TTL, header checksum;
/// IPv6 traffic class, flow label, hop limit; UDP checksum; the BTH octet
/// holding FECN, BECN and the reserved bits. The 8-octet 0xFF prefix stands
/// for the LRH. The payload is hashed in place (never copied).
pub fn icrc(ip_header: &[u8], udp_to_payload: &[u8]) -> Result<u32> {
    // Masked copy of IP (≤ 60) + UDP (8) + BTH (12).
    let mut hdr = [0u8; 60 + 8 + BTH_LEN];
    let hlen = ip_header.len();
    match ip_header.first().map(|b| b >> 4) {
        Some(4) if (20..=60).contains(&hlen) => {
            hdr[..hlen].copy_from_slice(ip_header);
            hdr[1] = 0xff; // TOS
            hdr[8] = 0xff; // TTL
            hdr[10] = 0xff; // header checksum
            hdr[11] = 0xff;
        }
        Some(6) if hlen == 40 => {
            hdr[..hlen].copy_from_slice(ip_header);
            hdr[0] |= 0x0f; // traffic class (high nibble) ..
            hdr[1] = 0xff; // .. traffic class (low nibble) | flow label
            hdr[2] = 0xff;
            hdr[3] = 0xff;
            hdr[7] = 0xff; // hop limit
        }
        Some(4) | Some(6) => return Err(Error::BadLength),
        Some(_) => return Err(Error::Unrecognized),
        None => return Err(Error::Truncated),
    }
    if udp_to_payload.len() < 8 + BTH_LEN {
        return Err(Error::Truncated);
    }
    let n = hlen + 8 + BTH_LEN;
    hdr[hlen..n].copy_from_slice(&udp_to_payload[..8 + BTH_LEN]);
    hdr[hlen + 6] = 0xff; // UDP checksum
    hdr[hlen + 7] = 0xff;
    hdr[hlen + 8 + field::RESV8A] = 0xff; // FECN | BECN | resv6
    let mut h = crc32fast::Hasher::new_with_initial(PREFIX_CRC);
    h.update(&hdr[..n]);
    h.update(&udp_to_payload[8 + BTH_LEN..]);
    Ok(h.finalize())
}

/// ICRC of a RoCEv2 IP datagram (IP header through the ICRC trailer, whose
/// content is ignored; trailing octets beyond the IP length are ignored).
pub fn icrc_full(datagram: &[u8]) -> Result<u32> {
    let l = IcrcLayout::of(datagram)?;
    icrc(
        &datagram[..l.ip_header_len],
        &datagram[l.ip_header_len..l.icrc_offset()],
    )
}

/// The ICRC stored in the trailer of a RoCEv2 IP datagram.
pub fn icrc_stored(datagram: &[u8]) -> Result<u32> {
    let l = IcrcLayout::of(datagram)?;
    let b = &datagram[l.icrc_offset()..l.datagram_len];
    Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

/// Verify the ICRC of a RoCEv2 IP datagram.
pub fn icrc_check(datagram: &[u8]) -> Result<()> {
    if icrc_full(datagram)? == icrc_stored(datagram)? {
        Ok(())
    } else {
        Err(Error::Checksum)
    }
}

/// Compute and write the ICRC trailer of a RoCEv2 IP datagram; returns it.
pub fn icrc_fill(datagram: &mut [u8]) -> Result<u32> {
    let l = IcrcLayout::of(datagram)?;
    let c = icrc(
        &datagram[..l.ip_header_len],
        &datagram[l.ip_header_len..l.icrc_offset()],
    )?;
    datagram[l.icrc_offset()..l.datagram_len].copy_from_slice(&c.to_le_bytes());
    Ok(c)
}

/// Incrementally update an ICRC after rewriting invariant fields.
///
/// `covered_len` is the number of covered octets after the 0xFF prefix, i.e.
/// from the first octet of the IP header to the octet before the ICRC
/// ([`IcrcLayout::covered_len`]). Each rewrite is `(offset, old, new)` with
/// `offset` counted from the first octet of the IP header and
/// `old.len() == new.len()`.
///
/// CRC-32 is affine over GF(2), so for messages of equal length
/// `crc(m') = crc(m) ^ rawcrc(m ^ m')`, and the raw CRC of a delta block
/// followed by `z` zero octets is `rawcrc(delta) * x^(8z) mod P`. The cost is
/// O(len(delta) + log(covered_len)) per rewrite, independent of the payload.
///
/// Rewrites must not touch variant (masked) fields: those are hashed as ones
/// whatever their value, so they need no update at all. Out-of-range parts of
/// a rewrite (beyond `covered_len`) and a length mismatch between `old` and
/// `new` are ignored (debug builds assert).
///
/// The cost is one table step per rewritten octet plus at most two
/// carry-less multiplications (a few ns each) per rewrite.
pub fn icrc_update(old_icrc: u32, covered_len: usize, rewrites: &[(usize, &[u8], &[u8])]) -> u32 {
    let mut c = old_icrc;
    for &(offset, old, new) in rewrites {
        debug_assert_eq!(old.len(), new.len());
        let n = old
            .len()
            .min(new.len())
            .min(covered_len.saturating_sub(offset));
        debug_assert_eq!(n, old.len(), "rewrite beyond the ICRC coverage");
        if n == 0 {
            continue;
        }
        let d = raw_crc_xor(&old[..n], &new[..n]);
        if d == 0 {
            continue;
        }
        let after = covered_len - offset - n;
        c ^= append_zeros(d, after);
    }
    c
}

/// The IP addressing of a RoCEv2 datagram that this router originates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IpHeader {
    V4 {
        src: [u8; 4],
        dst: [u8; 4],
        tos: u8,
        ttl: u8,
        ident: u16,
    },
    V6 {
        src: [u8; 16],
        dst: [u8; 16],
        traffic_class: u8,
        flow_label: u32,
        hop_limit: u8,
    },
}

/// A minimal IP + UDP encapsulation for RoCEv2 datagrams that the router
/// originates (CNP, Long-haul CNP). The general IP and UDP codecs live in
/// `wire::ipv4`, `wire::ipv6` and `wire::udp`; this one only writes the
/// fixed headers (IPv4 without options, don't-fragment set; IPv6 without
/// extension headers) so that the RoCE emitters are self-contained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct IpUdpRepr {
    pub ip: IpHeader,
    pub src_port: u16,
    /// Normally [`super::params::ROCEV2_UDP_PORT`].
    pub dst_port: u16,
    /// Fill the UDP checksum (else 0). RoCEv2 over IPv4 usually sends 0;
    /// IPv6 requires a checksum (RFC 8200 s.8.1).
    pub udp_checksum: bool,
}

impl IpUdpRepr {
    /// Length of IP + UDP headers.
    pub const fn header_len(&self) -> usize {
        match self.ip {
            IpHeader::V4 { .. } => 20 + 8,
            IpHeader::V6 { .. } => 40 + 8,
        }
    }

    /// Write the IP and UDP headers for a UDP payload (BTH .. ICRC) of
    /// `udp_payload_len` octets into the start of `buf`, which must hold
    /// `header_len() + udp_payload_len` octets. The UDP checksum is left 0:
    /// write the payload, then call [`IpUdpRepr::finish`].
    pub fn emit_headers(&self, buf: &mut [u8], udp_payload_len: usize) -> Result<()> {
        let hl = self.header_len();
        if buf.len() < hl + udp_payload_len {
            return Err(Error::Truncated);
        }
        let udp_len = 8 + udp_payload_len;
        match self.ip {
            IpHeader::V4 {
                src,
                dst,
                tos,
                ttl,
                ident,
            } => {
                let total = 20 + udp_len;
                if total > 0xffff {
                    return Err(Error::BadLength);
                }
                let h = &mut buf[..20];
                h[0] = 0x45;
                h[1] = tos;
                h[2..4].copy_from_slice(&(total as u16).to_be_bytes());
                h[4..6].copy_from_slice(&ident.to_be_bytes());
                h[6] = 0x40; // DF
                h[7] = 0;
                h[8] = ttl;
                h[9] = 17;
                h[10] = 0;
                h[11] = 0;
                h[12..16].copy_from_slice(&src);
                h[16..20].copy_from_slice(&dst);
                let c = checksum::checksum(h);
                h[10..12].copy_from_slice(&c.to_be_bytes());
            }
            IpHeader::V6 {
                src,
                dst,
                traffic_class,
                flow_label,
                hop_limit,
            } => {
                if udp_len > 0xffff {
                    return Err(Error::BadLength);
                }
                let h = &mut buf[..40];
                let w = (6u32 << 28) | (u32::from(traffic_class) << 20) | (flow_label & 0xf_ffff);
                h[0..4].copy_from_slice(&w.to_be_bytes());
                h[4..6].copy_from_slice(&(udp_len as u16).to_be_bytes());
                h[6] = 17;
                h[7] = hop_limit;
                h[8..24].copy_from_slice(&src);
                h[24..40].copy_from_slice(&dst);
            }
        }
        let u = &mut buf[hl - 8..hl];
        u[0..2].copy_from_slice(&self.src_port.to_be_bytes());
        u[2..4].copy_from_slice(&self.dst_port.to_be_bytes());
        u[4..6].copy_from_slice(&(udp_len as u16).to_be_bytes());
        u[6] = 0;
        u[7] = 0;
        Ok(())
    }

    /// Fill the ICRC and then (if enabled) the UDP checksum of a datagram
    /// whose headers were written by [`IpUdpRepr::emit_headers`].
    pub fn finish(&self, datagram: &mut [u8]) -> Result<()> {
        icrc_fill(datagram)?;
        let l = IcrcLayout::of(datagram)?;
        let uo = l.udp_offset();
        datagram[uo + 6] = 0;
        datagram[uo + 7] = 0;
        if self.udp_checksum {
            let udp_len = l.datagram_len - uo;
            let ps = match self.ip {
                IpHeader::V4 { src, dst, .. } => {
                    checksum::pseudo_v4(&src, &dst, 17, udp_len as u16)
                }
                IpHeader::V6 { src, dst, .. } => {
                    checksum::pseudo_v6(&src, &dst, 17, udp_len as u32)
                }
            };
            let mut c = !checksum::fold(checksum::combine(
                ps,
                checksum::sum(&datagram[uo..l.datagram_len]),
            ));
            if c == 0 {
                c = 0xffff;
            }
            datagram[uo + 6..uo + 8].copy_from_slice(&c.to_be_bytes());
        }
        Ok(())
    }
}

/// Emit a complete standard CNP datagram (IP, UDP, BTH, reserved, ICRC)
/// into `buf`; returns its length.
pub fn emit_cnp_datagram(ipudp: &IpUdpRepr, cnp: &CnpRepr, buf: &mut [u8]) -> Result<usize> {
    let hl = ipudp.header_len();
    let n = hl + cnp.buffer_len();
    ipudp.emit_headers(buf, cnp.buffer_len())?;
    cnp.emit(&mut Bth::new_unchecked(&mut buf[hl..n]));
    ipudp.finish(&mut buf[..n])?;
    Ok(n)
}

/// The End.MT rewrite (draft-li-spring-rdma-multicast-over-srv6): set the
/// IPv6 destination address and the BTH DestQPN of a RoCEv2-over-IPv6
/// datagram, updating the ICRC incrementally and the UDP checksum (if
/// non-zero) per RFC 1624. The ICRC is assumed correct on input.
pub fn rewrite_v6_dst_qpn(datagram: &mut [u8], dst: &[u8; 16], dest_qp: u32) -> Result<()> {
    let l = IcrcLayout::of(datagram)?;
    let (head, tail) = datagram.split_at_mut(l.icrc_offset());
    rewrite_v6_core(head, &mut tail[..ICRC_LEN], l, dst, dest_qp)
}

/// [`rewrite_v6_dst_qpn`] on a datagram held in pieces, for replication
/// without copying the payload: `head` holds the first octets of the
/// datagram (IPv6 header, UDP header, BTH at least; it may end anywhere
/// before the ICRC), `icrc` the 4 ICRC octets. The octets between them are
/// neither read nor written; the datagram length comes from the IPv6 Payload
/// Length. `Unrecognized` when the ICRC sits at an odd offset from the UDP
/// header (its checksum update would need the payload's last octet; RoCEv2
/// pads payloads to 4 octets, so valid packets never do) unless `head`
/// reaches the ICRC.
pub fn rewrite_v6_dst_qpn_parts(head: &mut [u8], icrc: &mut [u8; 4], dst: &[u8; 16], dest_qp: u32) -> Result<()> {
    if head.len() < 40 + 8 + BTH_LEN {
        return Err(Error::Truncated);
    }
    if head[0] >> 4 != 6 || head[6] != 17 {
        return Err(Error::Unrecognized);
    }
    let total = 40 + usize::from(u16::from_be_bytes([head[4], head[5]]));
    if total < 40 + 8 + BTH_LEN + ICRC_LEN || usize::from(u16::from_be_bytes([head[44], head[45]])) != total - 40 {
        return Err(Error::BadLength);
    }
    let l = IcrcLayout { ip_version: 6, ip_header_len: 40, datagram_len: total };
    if head.len() > l.icrc_offset() {
        return Err(Error::BadLength);
    }
    rewrite_v6_core(head, &mut icrc[..], l, dst, dest_qp)
}

/// The shared part: `head` = datagram[..k] for some k with the BTH inside,
/// `icrc` = the ICRC octets, `l` the datagram's layout.
fn rewrite_v6_core(head: &mut [u8], icrc: &mut [u8], l: IcrcLayout, dst: &[u8; 16], dest_qp: u32) -> Result<()> {
    if l.ip_version != 6 {
        return Err(Error::Unrecognized);
    }
    let qp_off = l.bth_offset() + field::DEST_QP.start;
    if head.len() < l.bth_offset() + BTH_LEN || icrc.len() < ICRC_LEN {
        return Err(Error::Truncated);
    }
    let ic = l.icrc_offset();
    let mut old_da = [0u8; 16];
    old_da.copy_from_slice(&head[24..40]);
    let mut old_qp = [0u8; 3];
    old_qp.copy_from_slice(&head[qp_off..qp_off + 3]);
    let mut new_qp = [0u8; 3];
    put_be24(&mut new_qp, dest_qp);
    let old_icrc = u32::from_le_bytes([icrc[0], icrc[1], icrc[2], icrc[3]]);
    let new_icrc = icrc_update(
        old_icrc,
        l.covered_len(),
        &[
            (24, &old_da[..], &dst[..]),
            (qp_off, &old_qp[..], &new_qp[..]),
        ],
    );
    // UDP checksum covers the pseudo-header DA, the QPN and the ICRC.
    let uc = l.udp_offset() + 6;
    let mut ucs = u16::from_be_bytes([head[uc], head[uc + 1]]);
    if ucs != 0 {
        ucs = checksum::update_bytes(ucs, &old_da, dst);
        // QPN octets 5..8 of the BTH: update the aligned 4-octet window
        // 4..8 (the BTH starts at an even offset from the UDP header).
        let w = l.bth_offset() + 4;
        let mut old_w = [0u8; 4];
        old_w.copy_from_slice(&head[w..w + 4]);
        let mut new_w = old_w;
        new_w[1..].copy_from_slice(&new_qp);
        ucs = checksum::update_bytes(ucs, &old_w, &new_w);
        // ICRC: its offset from the UDP header may be odd (pad octets are
        // counted so normally not); then the 16-bit word before it holds
        // the last payload octet, which `head` must reach.
        let rel = ic - l.udp_offset();
        let mut old_ic = [0u8; 6];
        let (wl, k) = if rel.is_multiple_of(2) {
            (4, 0)
        } else {
            if head.len() != ic {
                return Err(Error::Unrecognized);
            }
            old_ic[0] = head[ic - 1];
            (5, 1)
        };
        old_ic[k..k + 4].copy_from_slice(&icrc[..4]);
        let mut new_ic = old_ic;
        new_ic[k..k + 4].copy_from_slice(&new_icrc.to_le_bytes());
        ucs = checksum::update_bytes(ucs, &old_ic[..wl], &new_ic[..wl]);
        if ucs == 0 {
            ucs = 0xffff;
        }
        head[uc..uc + 2].copy_from_slice(&ucs.to_be_bytes());
    }
    head[24..40].copy_from_slice(dst);
    head[qp_off..qp_off + 3].copy_from_slice(&new_qp);
    icrc[..4].copy_from_slice(&new_icrc.to_le_bytes());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn unhex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    /// scapy 2.8 `IP()/UDP(dport=4791)/BTH(opcode=0x04, dqpn=200,
    /// psn=0x123456, ackreq=1, solicited=1)/Raw(bytes(range(32)))`.
    const SCAPY_V4: &str = "4502004c12344000401114670a0000010a000004c00012b70038f0310480ffff000000c880123456000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f8b46f297";
    /// scapy 2.8 `IPv6(tc=0x0a, fl=0x12345)/UDP/BTH(opcode=0x11, dqpn=100,
    /// psn=0xabcdef)/AETH(syndrome=0x1f, msn=0x102)`.
    const SCAPY_V6: &str = "60a12345001c114020010db800000000000000000000000120010db8000000000000000000000002c00112b7001c17621100ffff0000006400abcdef1f000102e676d3ae";
    /// scapy 2.8 `IPv6()/UDP(sport=4791, dport=4791)/cnp(100)`.
    const SCAPY_CNP6: &str = "600000000028114020010db800000000000000000000000420010db800000000000000000000000112b712b70028de7f8100ffff40000064000000000000000000000000000000000000000043a29b32";

    /// A naive reference: copy everything, mask, crc32.
    fn naive_icrc(d: &[u8]) -> u32 {
        let l = IcrcLayout::of(d).unwrap();
        let mut v = vec![0xffu8; 8];
        v.extend_from_slice(&d[..l.covered_len()]);
        let m = &mut v[8..];
        if l.ip_version == 4 {
            m[1] = 0xff;
            m[8] = 0xff;
            m[10] = 0xff;
            m[11] = 0xff;
        } else {
            m[0] |= 0x0f;
            m[1] = 0xff;
            m[2] = 0xff;
            m[3] = 0xff;
            m[7] = 0xff;
        }
        let u = l.udp_offset();
        m[u + 6] = 0xff;
        m[u + 7] = 0xff;
        m[l.bth_offset() + 4] = 0xff;
        crc32fast::hash(&v)
    }

    #[test]
    fn prefix_constant() {
        assert_eq!(PREFIX_CRC, crc32fast::hash(&[0xff; 8]));
    }

    #[test]
    fn scapy_v4_known_answer() {
        let d = unhex(SCAPY_V4);
        assert_eq!(icrc_full(&d).unwrap(), 0x97f2_468b);
        assert_eq!(icrc_stored(&d).unwrap(), 0x97f2_468b);
        icrc_check(&d).unwrap();
        assert_eq!(naive_icrc(&d), 0x97f2_468b);
        let bth = Bth::new_checked(&d[28..]).unwrap();
        let r = BthRepr::parse(&bth).unwrap();
        assert_eq!(r.opcode, opcode::SEND_ONLY);
        assert!(r.solicited && r.ack_req && !r.fecn && !r.becn && !r.ext);
        assert_eq!((r.pkey, r.dest_qp, r.psn), (0xffff, 200, 0x123456));
        assert_eq!(bth.payload(), &(0..32).collect::<Vec<u8>>()[..]);
        // Any change to an invariant octet breaks it; variant ones do not.
        let mut e = d.clone();
        e[8] = 1; // TTL
        e[1] = 0xb8; // TOS
        e[10] ^= 0x55; // IPv4 checksum
        e[26] = 0x12; // UDP checksum
        e[32] = 0xc0; // FECN | BECN
        icrc_check(&e).unwrap();
        e[40] ^= 1; // payload
        assert_eq!(icrc_check(&e), Err(Error::Checksum));
    }

    #[test]
    fn scapy_v6_known_answer() {
        let d = unhex(SCAPY_V6);
        assert_eq!(icrc_full(&d).unwrap(), 0xaed3_76e6);
        icrc_check(&d).unwrap();
        let bth = Bth::new_checked(&d[48..]).unwrap();
        let r = BthRepr::parse(&bth).unwrap();
        assert_eq!(
            (r.opcode, r.dest_qp, r.psn),
            (opcode::RC_ACKNOWLEDGE, 100, 0xabcdef)
        );
        assert!(opcode::has_aeth(r.opcode));
        let a = AethRepr::parse(&Aeth::new_checked(bth.payload()).unwrap()).unwrap();
        assert_eq!(
            a,
            AethRepr {
                syndrome: Syndrome::Ack { credits: 31 },
                msn: 0x102
            }
        );
        let mut e = d.clone();
        e[0] = 0x6f; // traffic class
        e[3] = 0; // flow label
        e[7] = 1; // hop limit
        icrc_check(&e).unwrap();
        e[39] ^= 1; // destination address
        assert_eq!(icrc_check(&e), Err(Error::Checksum));
    }

    #[test]
    fn scapy_cnp_v6_known_answer() {
        let d = unhex(SCAPY_CNP6);
        icrc_check(&d).unwrap();
        let c = CnpRepr::parse(&Bth::new_checked(&d[48..]).unwrap()).unwrap();
        assert_eq!(
            c,
            CnpRepr {
                pkey: 0xffff,
                dest_qp: 100,
                fecn: false
            }
        );
        // Our emitter produces the same octets.
        let ipudp = IpUdpRepr {
            ip: IpHeader::V6 {
                src: d[8..24].try_into().unwrap(),
                dst: d[24..40].try_into().unwrap(),
                traffic_class: 0,
                flow_label: 0,
                hop_limit: 64,
            },
            src_port: 4791,
            dst_port: 4791,
            udp_checksum: true,
        };
        let mut buf = [0u8; 128];
        let n = emit_cnp_datagram(&ipudp, &c, &mut buf).unwrap();
        assert_eq!(&buf[..n], &d[..]);
    }

    #[test]
    fn bth_bits() {
        let mut b = [0u8; 16];
        let mut v = Bth::new_unchecked(&mut b[..]);
        v.set_ext(true);
        assert_eq!(v.as_ref()[4], 0x20);
        v.set_becn(true);
        v.set_fecn(true);
        assert_eq!(v.as_ref()[4], 0xe0);
        v.set_pad_count(3);
        v.set_tver(0xf);
        v.set_solicited(true);
        assert_eq!(v.as_ref()[1], 0xbf);
        v.set_dest_qp(0x1ab_cdef);
        assert_eq!(&v.as_ref()[5..8], &[0xab, 0xcd, 0xef]);
        v.set_icrc(0x1122_3344);
        assert_eq!(&v.as_ref()[12..], &[0x44, 0x33, 0x22, 0x11]);
        assert_eq!(v.icrc(), 0x1122_3344);
    }

    #[test]
    fn aeth_syndromes() {
        assert_eq!(Syndrome::from_octet(0x00), Ok(Syndrome::Ack { credits: 0 }));
        assert_eq!(
            Syndrome::from_octet(0x2e),
            Ok(Syndrome::RnrNak { timer: 14 })
        );
        assert_eq!(
            Syndrome::from_octet(0x60),
            Ok(Syndrome::Nak(NakCode::PsnSequenceError))
        );
        assert_eq!(
            Syndrome::from_octet(0x63),
            Ok(Syndrome::Nak(NakCode::RemoteOperationalError))
        );
        assert_eq!(
            Syndrome::from_octet(0x64),
            Ok(Syndrome::Nak(NakCode::InvalidRdRequest))
        );
        assert_eq!(
            Syndrome::from_octet(0x6a),
            Ok(Syndrome::Nak(NakCode::Reserved(10)))
        );
        assert_eq!(Syndrome::from_octet(0x40), Err(Error::Unrecognized));
        assert_eq!(Syndrome::from_octet(0x80), Err(Error::Malformed));
        assert_eq!(Syndrome::Nak(NakCode::RemoteAccessError).to_octet(), 0x62);
    }

    #[test]
    fn opcode_classes() {
        assert!(opcode::has_reth(opcode::RDMA_WRITE_FIRST));
        assert!(opcode::has_reth(opcode::UC | opcode::RDMA_WRITE_ONLY));
        assert!(!opcode::has_reth(opcode::UC | opcode::RDMA_READ_REQUEST));
        assert!(!opcode::has_reth(opcode::RDMA_WRITE_MIDDLE));
        assert!(opcode::has_aeth(opcode::RDMA_READ_RESPONSE_ONLY));
        assert!(!opcode::has_aeth(opcode::RDMA_READ_RESPONSE_MIDDLE));
        assert!(!opcode::has_aeth(opcode::CNP));
        assert!(opcode::has_immediate(opcode::SEND_ONLY_WITH_IMMEDIATE));
        assert!(!opcode::has_immediate(
            opcode::CNP | opcode::SEND_ONLY_WITH_IMMEDIATE
        ));
    }

    #[test]
    fn zero_operator() {
        // Appending n zero octets to a raw crc equals the operator.
        for n in [
            0usize,
            1,
            2,
            3,
            7,
            100,
            255,
            256,
            257,
            4096,
            65535,
            65536,
            1 << 20,
        ] {
            let d = 0xdead_beefu32;
            let mut c = d;
            for _ in 0..n {
                c = CRC_TABLE[(c & 0xff) as usize] ^ (c >> 8);
            }
            assert_eq!(append_zeros(d, n), c, "n={n}");
        }
    }

    #[test]
    fn layout_errors() {
        let d = unhex(SCAPY_V4);
        assert_eq!(IcrcLayout::of(&[]), Err(Error::Truncated));
        assert_eq!(IcrcLayout::of(&d[..d.len() - 1]), Err(Error::Truncated));
        let mut e = d.clone();
        e[0] = 0x44;
        assert_eq!(IcrcLayout::of(&e), Err(Error::BadLength));
        let mut e = d.clone();
        e[9] = 6;
        assert_eq!(IcrcLayout::of(&e), Err(Error::Unrecognized));
        let mut e = d.clone();
        e[25] -= 1; // UDP length
        assert_eq!(IcrcLayout::of(&e), Err(Error::BadLength));
        // Ethernet padding after the datagram is ignored.
        let mut e = d.clone();
        e.extend_from_slice(&[0; 6]);
        icrc_check(&e).unwrap();
    }

    fn arb_ip() -> impl Strategy<Value = IpHeader> {
        prop_oneof![
            (
                any::<[u8; 4]>(),
                any::<[u8; 4]>(),
                any::<u8>(),
                any::<u8>(),
                any::<u16>()
            )
                .prop_map(|(src, dst, tos, ttl, ident)| IpHeader::V4 {
                    src,
                    dst,
                    tos,
                    ttl,
                    ident
                }),
            (
                any::<[u8; 16]>(),
                any::<[u8; 16]>(),
                any::<u8>(),
                0u32..0x10_0000,
                any::<u8>()
            )
                .prop_map(|(src, dst, traffic_class, flow_label, hop_limit)| {
                    IpHeader::V6 {
                        src,
                        dst,
                        traffic_class,
                        flow_label,
                        hop_limit,
                    }
                }),
        ]
    }

    fn arb_bth() -> impl Strategy<Value = BthRepr> {
        (
            any::<u8>(),
            any::<(bool, bool, bool, bool, bool, bool)>(),
            0u8..4,
            any::<u16>(),
            0u32..0x100_0000,
            0u32..0x100_0000,
        )
            .prop_map(
                |(
                    opcode,
                    (solicited, migreq, fecn, becn, ext, ack_req),
                    pad_count,
                    pkey,
                    dest_qp,
                    psn,
                )| {
                    BthRepr {
                        opcode,
                        solicited,
                        migreq,
                        pad_count,
                        tver: 0,
                        pkey,
                        fecn,
                        becn,
                        ext,
                        dest_qp,
                        ack_req,
                        psn,
                    }
                },
            )
    }

    fn build(ip: IpHeader, udp_checksum: bool, bth: &BthRepr, payload: &[u8]) -> Vec<u8> {
        let r = IpUdpRepr {
            ip,
            src_port: 0xc000,
            dst_port: 4791,
            udp_checksum,
        };
        let hl = r.header_len();
        let plen = BTH_LEN + payload.len() + ICRC_LEN;
        let mut v = vec![0u8; hl + plen];
        r.emit_headers(&mut v, plen).unwrap();
        let mut b = Bth::new_unchecked(&mut v[hl..]);
        bth.emit(&mut b);
        b.payload_mut().copy_from_slice(payload);
        r.finish(&mut v).unwrap();
        v
    }

    fn udp_ok(d: &[u8]) -> bool {
        let l = IcrcLayout::of(d).unwrap();
        let u = l.udp_offset();
        let c = u16::from_be_bytes([d[u + 6], d[u + 7]]);
        if c == 0 {
            return true;
        }
        let ulen = l.datagram_len - u;
        let ps = if l.ip_version == 4 {
            checksum::pseudo_v4(
                d[12..16].try_into().unwrap(),
                d[16..20].try_into().unwrap(),
                17,
                ulen as u16,
            )
        } else {
            checksum::pseudo_v6(
                d[8..24].try_into().unwrap(),
                d[24..40].try_into().unwrap(),
                17,
                ulen as u32,
            )
        };
        checksum::fold(checksum::combine(ps, checksum::sum(&d[u..l.datagram_len]))) == 0xffff
    }

    proptest! {
        #[test]
        fn full_equals_naive(ip in arb_ip(), bth in arb_bth(), payload in proptest::collection::vec(any::<u8>(), 0..4096)) {
            let d = build(ip, false, &bth, &payload);
            prop_assert_eq!(icrc_full(&d).unwrap(), naive_icrc(&d));
            icrc_check(&d).unwrap();
        }

        #[test]
        fn incremental_equals_full(
            ip in arb_ip(),
            bth in arb_bth(),
            payload in proptest::collection::vec(any::<u8>(), 0..4096),
            new_da in any::<[u8; 16]>(),
            new_qp in 0u32..0x100_0000,
            extra in proptest::collection::vec((any::<prop::sample::Index>(), proptest::collection::vec(any::<u8>(), 1..8)), 0..4),
        ) {
            let d = build(ip, true, &bth, &payload);
            let l = IcrcLayout::of(&d).unwrap();
            let old = icrc_full(&d).unwrap();
            let mut e = d.clone();
            // DA (IPv4: 4 octets at 16, IPv6: 16 at 24) and DestQPN.
            let (da_off, da_len) = if l.ip_version == 4 { (16, 4) } else { (24, 16) };
            e[da_off..da_off + da_len].copy_from_slice(&new_da[..da_len]);
            let q = l.bth_offset() + 5;
            e[q..q + 3].copy_from_slice(&new_qp.to_be_bytes()[1..]);
            let mut rw: Vec<(usize, Vec<u8>, Vec<u8>)> = vec![
                (da_off, d[da_off..da_off + da_len].to_vec(), e[da_off..da_off + da_len].to_vec()),
                (q, d[q..q + 3].to_vec(), e[q..q + 3].to_vec()),
            ];
            // Random payload rewrites (non-overlapping with the above, in the payload).
            let p0 = l.bth_offset() + BTH_LEN;
            let mut cur = e.clone();
            for (ix, bytes) in &extra {
                let room = l.covered_len() - p0;
                if room < bytes.len() { continue; }
                let off = p0 + ix.index(room - bytes.len() + 1);
                let before = cur[off..off + bytes.len()].to_vec();
                cur[off..off + bytes.len()].copy_from_slice(bytes);
                rw.push((off, before, bytes.clone()));
            }
            let rws: Vec<(usize, &[u8], &[u8])> = rw.iter().map(|(o, a, b)| (*o, &a[..], &b[..])).collect();
            let inc = icrc_update(old, l.covered_len(), &rws);
            prop_assert_eq!(inc, icrc_full(&cur).unwrap());
        }

        #[test]
        fn end_mt_rewrite(
            bth in arb_bth(),
            payload in proptest::collection::vec(any::<u8>(), 0..2048),
            src in any::<[u8; 16]>(), dst in any::<[u8; 16]>(), new_da in any::<[u8; 16]>(),
            new_qp in 0u32..0x100_0000, csum in any::<bool>(),
        ) {
            let ip = IpHeader::V6 { src, dst, traffic_class: 0, flow_label: 0, hop_limit: 64 };
            let mut d = build(ip, csum, &bth, &payload);
            rewrite_v6_dst_qpn(&mut d, &new_da, new_qp).unwrap();
            let mut b2 = bth;
            b2.dest_qp = new_qp;
            let ip2 = IpHeader::V6 { src, dst: new_da, traffic_class: 0, flow_label: 0, hop_limit: 64 };
            let want = build(ip2, csum, &b2, &payload);
            icrc_check(&d).unwrap();
            prop_assert!(udp_ok(&d));
            // Identical except possibly 0x0000 vs 0xffff-equivalent checksums.
            let u = 40 + 6;
            prop_assert_eq!(&d[..u], &want[..u]);
            prop_assert_eq!(&d[u + 2..], &want[u + 2..]);
        }

        /// The piecewise rewrite (header and ICRC only, payload untouched)
        /// yields the same datagram as the contiguous one.
        #[test]
        fn end_mt_rewrite_parts_equals_contiguous(
            bth in arb_bth(),
            payload in proptest::collection::vec(any::<u8>(), 0..2048),
            src in any::<[u8; 16]>(), dst in any::<[u8; 16]>(), new_da in any::<[u8; 16]>(),
            new_qp in 0u32..0x100_0000, csum in any::<bool>(), cut in any::<proptest::sample::Index>(),
        ) {
            let ip = IpHeader::V6 { src, dst, traffic_class: 0, flow_label: 0, hop_limit: 64 };
            let d = build(ip, csum, &bth, &payload);
            let mut whole = d.clone();
            rewrite_v6_dst_qpn(&mut whole, &new_da, new_qp).unwrap();
            let ic = d.len() - ICRC_LEN;
            let min = 40 + 8 + BTH_LEN;
            let k = min + cut.index(ic - min + 1);
            let mut head = d[..k].to_vec();
            let mut icrc = [d[ic], d[ic + 1], d[ic + 2], d[ic + 3]];
            match rewrite_v6_dst_qpn_parts(&mut head, &mut icrc, &new_da, new_qp) {
                Ok(()) => {
                    prop_assert_eq!(&head[..], &whole[..k]);
                    prop_assert_eq!(&d[k..ic], &whole[k..ic]);
                    prop_assert_eq!(&icrc[..], &whole[ic..]);
                }
                // Only an odd ICRC offset with a head short of the ICRC.
                Err(e) => prop_assert!(e == Error::Unrecognized && (ic - 40) % 2 == 1 && k < ic, "{:?}", e),
            }
        }

        #[test]
        fn raw_crc_matches_crc32(d in proptest::collection::vec(any::<u8>(), 0..100)) {
            let zeros = vec![0u8; d.len()];
            // raw CRC = crc32 with initial register 0 and no final xor.
            let mut h = crc32fast::Hasher::new_with_initial(0xffff_ffff);
            h.update(&d);
            let want = !h.finalize();
            prop_assert_eq!(raw_crc_xor(&d, &zeros), want);
        }

        #[test]
        fn mulmod_matches_bitwise(a in any::<u32>(), b in any::<u32>()) {
            prop_assert_eq!(mulmod(a, b), multmodp(a, b));
            prop_assert_eq!(clmul32(a, b), clmul32_soft(a, b));
        }

        #[test]
        fn bth_roundtrip(bth in arb_bth(), plen in 3usize..64) {
            let mut v = vec![0u8; BTH_LEN + plen + ICRC_LEN];
            bth.emit(&mut Bth::new_unchecked(&mut v[..]));
            let p = BthRepr::parse(&Bth::new_checked(&v[..]).unwrap()).unwrap();
            prop_assert_eq!(p, bth);
        }

        #[test]
        fn aeth_roundtrip(kind in 0u8..3, low in 0u8..32, msn in 0u32..0x100_0000) {
            let syndrome = match kind { 0 => Syndrome::Ack { credits: low }, 1 => Syndrome::RnrNak { timer: low }, _ => Syndrome::Nak(NakCode::from(low)) };
            let r = AethRepr { syndrome, msn };
            let mut v = [0u8; 4];
            r.emit(&mut Aeth::new_unchecked(&mut v[..]));
            prop_assert_eq!(AethRepr::parse(&Aeth::new_checked(&v[..]).unwrap()).unwrap(), r);
        }

        #[test]
        fn reth_roundtrip(va in any::<u64>(), rkey in any::<u32>(), len in any::<u32>()) {
            let r = RethRepr { virtual_address: va, rkey, dma_length: len };
            let mut v = [0u8; 16];
            r.emit(&mut Reth::new_unchecked(&mut v[..]));
            prop_assert_eq!(RethRepr::parse(&Reth::new_checked(&v[..]).unwrap()).unwrap(), r);
        }

        #[test]
        fn cnp_roundtrip(ip in arb_ip(), pkey in any::<u16>(), dest_qp in 0u32..0x100_0000, fecn in any::<bool>()) {
            let c = CnpRepr { pkey, dest_qp, fecn };
            let r = IpUdpRepr { ip, src_port: 1, dst_port: 4791, udp_checksum: true };
            let mut buf = [0u8; 128];
            let n = emit_cnp_datagram(&r, &c, &mut buf).unwrap();
            icrc_check(&buf[..n]).unwrap();
            prop_assert!(udp_ok(&buf[..n]));
            let hl = r.header_len();
            prop_assert_eq!(CnpRepr::parse(&Bth::new_checked(&buf[hl..n]).unwrap()).unwrap(), c);
        }

        /// No input makes the parsers or the ICRC functions panic; any
        /// truncation or length-field corruption yields an error.
        #[test]
        fn never_panics(data in proptest::collection::vec(any::<u8>(), 0..200)) {
            if let Ok(b) = Bth::new_checked(&data[..]) {
                let _ = BthRepr::parse(&b);
                let _ = CnpRepr::parse(&b);
                let _ = b.payload();
                let _ = b.icrc();
            }
            let _ = Aeth::new_checked(&data[..]).map(|a| AethRepr::parse(&a));
            let _ = Reth::new_checked(&data[..]).map(|a| RethRepr::parse(&a));
            let _ = icrc_full(&data);
            let _ = icrc_check(&data);
            let mut m = data.clone();
            let _ = icrc_fill(&mut m);
            let _ = rewrite_v6_dst_qpn(&mut m, &[0; 16], 5);
        }

        #[test]
        fn truncation_and_length_corruption(ip in arb_ip(), bth in arb_bth(), payload in proptest::collection::vec(any::<u8>(), 0..64), cut in 1usize..200, which in 0usize..2, delta in 1u16..100) {
            let d = build(ip, false, &bth, &payload);
            let cut = cut.min(d.len());
            prop_assert!(icrc_full(&d[..d.len() - cut]).is_err());
            let l = IcrcLayout::of(&d).unwrap();
            let mut e = d.clone();
            // Corrupt the IP length or the UDP length.
            let off = match (which, l.ip_version) { (0, 4) => 2, (0, _) => 4, _ => l.udp_offset() + 4 };
            let v = u16::from_be_bytes([e[off], e[off + 1]]).wrapping_add(delta);
            e[off..off + 2].copy_from_slice(&v.to_be_bytes());
            prop_assert!(icrc_full(&e).is_err());
            let mut e = d.clone();
            let v = u16::from_be_bytes([e[off], e[off + 1]]).wrapping_sub(delta);
            e[off..off + 2].copy_from_slice(&v.to_be_bytes());
            prop_assert!(icrc_full(&e).is_err());
        }
    }
}
