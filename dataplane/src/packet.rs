//! The test seam: behaviours work on any [`PacketBuffer`], i.e. on plain byte
//! buffers in unit tests and on DPDK mbufs in production.

/// A packet whose bytes are contiguous and which has room to grow at the
/// front (headroom) and the back (tailroom).
pub trait PacketBuffer {
    /// The packet bytes.
    fn data(&self) -> &[u8];
    /// The packet bytes, writable.
    fn data_mut(&mut self) -> &mut [u8];
    /// Grow the packet at the front by `n` bytes; returns false (and leaves
    /// the packet as it was) when the headroom is too small.
    fn prepend(&mut self, n: usize) -> bool;
    /// Remove `n` bytes from the front; false when the packet is shorter.
    fn adj(&mut self, n: usize) -> bool;
    /// Room in front of the packet.
    fn headroom(&self) -> usize;
    /// Grow the packet at the front by `n` bytes like
    /// [`prepend`](Self::prepend), moving the packet toward the back first
    /// when the headroom is too small and the tailroom makes up for it (an
    /// outer header longer than the headroom: an SRH with End.MT and HMAC
    /// TLVs). False, the packet as it was, when neither has room.
    fn prepend_shift(&mut self, n: usize) -> bool {
        if self.prepend(n) {
            return true;
        }
        let h = self.headroom();
        let Some(need) = n.checked_sub(h).filter(|&x| x > 0) else { return false };
        let len = self.len();
        if !self.append(need) {
            return false;
        }
        self.data_mut().copy_within(0..len, need);
        self.prepend(h)
    }
    /// Grow the packet at the back by `n` bytes (contents unspecified).
    fn append(&mut self, n: usize) -> bool;
    /// Remove `n` bytes from the back.
    fn trim(&mut self, n: usize) -> bool;
    /// Packet length in bytes.
    fn len(&self) -> usize {
        self.data().len()
    }
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Length of the whole packet on the wire: [`len`](Self::len) plus any
    /// chained segments (zero-copy replicas); `data()` is the first segment.
    fn pkt_len(&self) -> usize {
        self.len()
    }
    /// Set the length to exactly `n` bytes, growing or shrinking at the back.
    fn set_len(&mut self, n: usize) -> bool {
        let l = self.len();
        if n >= l {
            self.append(n - l)
        } else {
            self.trim(l - n)
        }
    }
}

/// A heap packet with headroom, for tests, the simulation harness and
/// control-plane generated packets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VecPacket {
    buf: Vec<u8>,
    start: usize,
    end: usize,
}

impl VecPacket {
    pub const DEFAULT_HEADROOM: usize = 128;
    pub const CAPACITY: usize = 2048 + Self::DEFAULT_HEADROOM;

    pub fn from_bytes(bytes: &[u8]) -> Self {
        Self::with_headroom(bytes, Self::DEFAULT_HEADROOM)
    }

    pub fn with_headroom(bytes: &[u8], headroom: usize) -> Self {
        let cap = (headroom + bytes.len()).max(Self::CAPACITY);
        let mut buf = vec![0u8; cap];
        buf[headroom..headroom + bytes.len()].copy_from_slice(bytes);
        VecPacket { buf, start: headroom, end: headroom + bytes.len() }
    }

    pub fn to_vec(&self) -> Vec<u8> {
        self.data().to_vec()
    }

    /// An empty packet of `capacity` bytes (default headroom included).
    pub fn with_capacity(capacity: usize) -> Self {
        let h = Self::DEFAULT_HEADROOM;
        VecPacket { buf: vec![0u8; capacity.max(h)], start: h, end: h }
    }

    /// Reuse the buffer for `bytes` with the default headroom again (a
    /// recycled packet may have been decapsulated or encapsulated).
    pub fn reset(&mut self, bytes: &[u8]) {
        self.reload(bytes, bytes.len());
    }

    /// [`VecPacket::reset`] copying only the first `prefix` bytes: the
    /// rest of the buffer is known to hold `bytes` already (benchmarks
    /// restore what a run rewrote).
    pub fn reload(&mut self, bytes: &[u8], prefix: usize) {
        let h = Self::DEFAULT_HEADROOM;
        if self.buf.len() < h + bytes.len() {
            self.buf.resize(h + bytes.len(), 0);
        }
        let n = prefix.min(bytes.len());
        self.buf[h..h + n].copy_from_slice(&bytes[..n]);
        self.start = h;
        self.end = h + bytes.len();
    }

    /// The whole buffer, headroom and tailroom included.
    pub(crate) fn raw_mut(&mut self) -> &mut [u8] {
        &mut self.buf
    }

    /// Make `start..end` of the whole buffer the packet.
    pub(crate) fn set_window(&mut self, start: usize, end: usize) -> bool {
        if start > end || end > self.buf.len() {
            return false;
        }
        self.start = start;
        self.end = end;
        true
    }

    /// Empty, with the default headroom.
    pub fn clear(&mut self) {
        self.start = Self::DEFAULT_HEADROOM;
        self.end = self.start;
    }
}

impl PacketBuffer for VecPacket {
    fn data(&self) -> &[u8] {
        &self.buf[self.start..self.end]
    }
    fn data_mut(&mut self) -> &mut [u8] {
        &mut self.buf[self.start..self.end]
    }
    fn prepend(&mut self, n: usize) -> bool {
        if n > self.start {
            return false;
        }
        self.start -= n;
        true
    }
    fn adj(&mut self, n: usize) -> bool {
        if n > self.end - self.start {
            return false;
        }
        self.start += n;
        true
    }
    fn headroom(&self) -> usize {
        self.start
    }
    fn append(&mut self, n: usize) -> bool {
        if self.end + n > self.buf.len() {
            return false;
        }
        self.end += n;
        true
    }
    fn trim(&mut self, n: usize) -> bool {
        if n > self.end - self.start {
            return false;
        }
        self.end -= n;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prepend_shift_moves_the_packet_back_when_the_headroom_is_short() {
        let bytes: Vec<u8> = (0..100u8).collect();
        // Enough headroom: a plain prepend.
        let mut p = VecPacket::with_headroom(&bytes, 64);
        assert!(p.prepend_shift(40));
        assert_eq!((p.headroom(), &p.data()[40..]), (24, &bytes[..]));
        // 16 in front, 200 wanted: moved back by 184, then 16 prepended.
        let mut p = VecPacket::with_headroom(&bytes, 16);
        assert!(p.prepend_shift(200));
        assert_eq!(p.len(), 300);
        assert_eq!((p.headroom(), &p.data()[200..]), (0, &bytes[..]));
        // No room at the back either: false, the packet as it was.
        let cap = VecPacket::CAPACITY;
        let full: Vec<u8> = (0..cap - 16).map(|i| i as u8).collect();
        let mut p = VecPacket::with_headroom(&full, 16);
        assert!(!p.prepend_shift(40));
        assert_eq!((p.headroom(), p.data()), (16, &full[..]));
    }

    #[test]
    fn vec_packet_grow_shrink() {
        let mut p = VecPacket::from_bytes(&[1, 2, 3]);
        assert!(p.prepend(2));
        assert_eq!(p.len(), 5);
        p.data_mut()[..2].copy_from_slice(&[9, 9]);
        assert_eq!(p.data(), &[9, 9, 1, 2, 3]);
        assert!(p.adj(4));
        assert_eq!(p.data(), &[3]);
        assert!(!p.adj(2));
        assert!(p.set_len(3));
        assert_eq!(p.len(), 3);
        assert!(!p.prepend(10_000));
        assert!(p.trim(3));
        assert!(p.is_empty());
        // A recycled buffer gets its full headroom back.
        p.reset(&[7, 8]);
        assert_eq!(p.data(), &[7, 8]);
        assert!(p.prepend(VecPacket::DEFAULT_HEADROOM));
        assert!(!p.prepend(1));
    }
}
