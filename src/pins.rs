//! Which pool blocks a plan's recorded work may touch ([`crate::Device::capture`]): each pool
//! stamps a block with a serial when it hands it out, and a capture pins every serial below the
//! pool's at its end (while it is under way, every serial). A block released under a pin is
//! parked instead of reused, and comes back when the last pin covering it goes.

/// The pin bookkeeping of one pool; `T` is what the pool keeps of a released block.
pub(crate) struct Pins<T> {
    serial: u64,
    /// The bound of each live pin: blocks stamped below it are pinned (`u64::MAX` for a capture
    /// under way).
    bounds: Vec<u64>,
    parked: Vec<(T, u64)>,
}

impl<T> Default for Pins<T> {
    fn default() -> Self {
        Pins { serial: 0, bounds: vec![], parked: vec![] }
    }
}

impl<T> Pins<T> {
    /// The serial of a block handed out now.
    pub(crate) fn stamp(&mut self) -> u64 {
        self.serial += 1;
        self.serial
    }

    /// `block`, released, back for reuse; or `None`, parked because a pin covers `serial`.
    pub(crate) fn release(&mut self, block: T, serial: u64) -> Option<T> {
        if self.bounds.iter().any(|&b| serial < b) {
            self.parked.push((block, serial));
            None
        } else {
            Some(block)
        }
    }

    /// Pins every block until [`Pins::end`] (a capture starts).
    pub(crate) fn begin(&mut self) {
        self.bounds.push(u64::MAX);
    }

    /// The capture ended: its pin now covers the blocks handed out so far. Returns the pin.
    pub(crate) fn end(&mut self) -> u64 {
        let bound = self.serial + 1;
        if let Some(b) = self.bounds.iter_mut().find(|b| **b == u64::MAX) {
            *b = bound;
        }
        bound
    }

    /// Drops pin `bound` (a plan went, or `u64::MAX`: a capture was abandoned); returns the
    /// parked blocks no pin covers any more.
    pub(crate) fn unpin(&mut self, bound: u64) -> Vec<T> {
        if let Some(i) = self.bounds.iter().position(|&b| b == bound) {
            self.bounds.swap_remove(i);
        }
        let top = self.bounds.iter().copied().max().unwrap_or(0);
        let (free, kept): (Vec<_>, Vec<_>) = std::mem::take(&mut self.parked).into_iter().partition(|(_, s)| *s >= top);
        self.parked = kept;
        free.into_iter().map(|(b, _)| b).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_under_a_pin_wait_for_it() {
        let mut p = Pins::default();
        let before = p.stamp();
        p.begin();
        let inside = p.stamp();
        // Released inside the capture: parked, whenever it was handed out.
        assert_eq!(p.release('t', inside), None);
        let bound = p.end();
        let after = p.stamp();
        // Existed at the end: pinned; handed out after: free to reuse.
        assert_eq!(p.release('w', before), None);
        assert_eq!(p.release('n', after), Some('n'));
        // A second plan pins more; the first going frees nothing the second covers.
        p.begin();
        let second = p.end();
        assert_eq!(p.release('a', after), None);
        assert!(p.unpin(bound).is_empty());
        let mut back = p.unpin(second);
        back.sort();
        assert_eq!(back, ['a', 't', 'w']);
        assert_eq!(p.release('x', before), Some('x'));
    }

    #[test]
    fn an_abandoned_capture_returns_what_it_parked() {
        let mut p = Pins::default();
        let s = p.stamp();
        p.begin();
        assert_eq!(p.release(1, s), None);
        assert_eq!(p.unpin(u64::MAX), [1]);
    }
}
