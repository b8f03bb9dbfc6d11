//! [`OptionBytes`]: the option area of an IPv4 or TCP header (up to 40 bytes, in 4-byte words) as a
//! `Copy` value, so that reprs stay plain values without lifetimes.

/// Up to 40 bytes of header options, a multiple of 4 (IPv4: RFC 791 §3.1; TCP: RFC 9293 §3.1).
#[derive(Clone, Copy)]
pub struct OptionBytes {
    bytes: [u8; 40],
    len: u8,
}

impl OptionBytes {
    /// No options.
    pub const EMPTY: OptionBytes = OptionBytes {
        bytes: [0; 40],
        len: 0,
    };
    /// Largest option area.
    pub const MAX_LEN: usize = 40;

    /// Options from their bytes; `None` unless the length is a multiple of 4 and at most 40
    /// (pad with End-of-Options / NOP first).
    pub fn new(bytes: &[u8]) -> Option<Self> {
        if bytes.len() > Self::MAX_LEN || bytes.len() & 3 != 0 {
            return None;
        }
        let mut o = Self::EMPTY;
        o.bytes[..bytes.len()].copy_from_slice(bytes);
        o.len = bytes.len() as u8;
        Some(o)
    }

    /// The option bytes.
    pub fn as_slice(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        usize::from(self.len)
    }

    /// True when there are no options.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl Default for OptionBytes {
    fn default() -> Self {
        Self::EMPTY
    }
}

impl PartialEq for OptionBytes {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl Eq for OptionBytes {}

impl core::hash::Hash for OptionBytes {
    fn hash<H: core::hash::Hasher>(&self, state: &mut H) {
        self.as_slice().hash(state);
    }
}

impl core::fmt::Debug for OptionBytes {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "OptionBytes({:02x?})", self.as_slice())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths() {
        assert!(OptionBytes::new(&[1, 1, 1]).is_none());
        assert!(OptionBytes::new(&[0; 44]).is_none());
        let o = OptionBytes::new(&[1, 2, 3, 4]).unwrap();
        assert_eq!(
            (o.as_slice(), o.len(), o.is_empty()),
            (&[1u8, 2, 3, 4][..], 4, false)
        );
        assert!(OptionBytes::default().is_empty());
        assert_eq!(OptionBytes::new(&[]).unwrap(), OptionBytes::EMPTY);
    }
}
