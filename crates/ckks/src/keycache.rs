//! The bookkeeping of both engines' key caches: which evaluation keys are held, their exact
//! bytes, a byte capacity, and the order in which keys leave when a new one needs room
//! (least recently used first; decision 0530).
//!
//! A key cache holds keys made on first use (`rotate_by_step`, `rotate_many_by_steps`,
//! `relinearize` without a key argument). At the seed preset each key is 18 MiB, so an
//! unbounded cache grows by 18 MiB per distinct rotation step. With a capacity the cache
//! never holds more than that many bytes: admitting a new key first lets go of the least
//! recently used keys until the new one fits, and a key larger than the whole capacity is
//! refused ([`crate::CkksError::KeyCacheCapacity`]) before any work, so the refusal changes
//! nothing (no key is made, no random words are drawn, no key leaves).
//!
//! The order is deterministic: every lookup and every admission takes the next value of a
//! counter, and the key with the smallest one leaves first.

use std::collections::BTreeMap;
use std::fmt;

/// Which key of a cache: the relinearization key, or the rotation key of a Galois element
/// (steps equal modulo the slot count share one element and one key).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CachedKey {
    /// The relinearization key (`s^2` switched to `s`).
    Relinearization,
    /// The rotation key of this Galois element (see `CpuEngine::galois_element_for_step`).
    Rotation {
        /// The Galois element.
        galois_element: u64,
        /// The canonical step (in `[-slots/2, slots/2)`, never 0) the element belongs to.
        step: i64,
    },
}

impl fmt::Display for CachedKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Relinearization => f.write_str("relinearization key"),
            Self::Rotation {
                galois_element,
                step,
            } => write!(
                f,
                "rotation key for step {step} (Galois element {galois_element})"
            ),
        }
    }
}

/// Runs `admit` (which admits `slot`, `bytes` long, and returns the keys that left and the
/// bytes held afterwards) inside a `ckks.key_cache.admit` span (design rule 7: `location`,
/// `slot`, `bytes`, `held`), each key that left recorded as a `ckks.key_cache.evict` child.
pub(crate) fn traced_admission<V>(
    location: impl std::fmt::Display,
    slot: CachedKey,
    bytes: u64,
    bytes_of: impl Fn(&V) -> u64,
    admit: impl FnOnce() -> (Vec<(CachedKey, V)>, u64),
) -> Vec<(CachedKey, V)> {
    let span = tracing::debug_span!(
        "ckks.key_cache.admit",
        location = %location,
        slot = %slot,
        bytes = bytes,
        held = tracing::field::Empty,
    );
    let _entered = span.enter();
    let (gone, held) = admit();
    span.record("held", held);
    trace_evictions(&location, &gone, bytes_of);
    gone
}

/// Records each key that left a cache as a `ckks.key_cache.evict` span (`location`, `slot`,
/// `bytes`).
pub(crate) fn trace_evictions<V>(
    location: &impl std::fmt::Display,
    gone: &[(CachedKey, V)],
    bytes_of: impl Fn(&V) -> u64,
) {
    for (slot, v) in gone {
        tracing::debug_span!(
            "ckks.key_cache.evict",
            location = %location,
            slot = %slot,
            bytes = bytes_of(v),
        )
        .in_scope(|| ());
    }
}

/// One held key: the value, its exact bytes and when it was last used.
#[derive(Debug)]
struct Entry<V> {
    value: V,
    bytes: u64,
    last_use: u64,
}

/// Held keys with a byte capacity and least-recently-used departures (see the module docs).
#[derive(Debug)]
pub(crate) struct KeyLru<V> {
    capacity: Option<u64>,
    clock: u64,
    bytes: u64,
    entries: BTreeMap<CachedKey, Entry<V>>,
}

impl<V> Default for KeyLru<V> {
    fn default() -> Self {
        Self {
            capacity: None,
            clock: 0,
            bytes: 0,
            entries: BTreeMap::new(),
        }
    }
}

impl<V> KeyLru<V> {
    /// The capacity in bytes (`None`: unbounded).
    pub(crate) fn capacity(&self) -> Option<u64> {
        self.capacity
    }

    /// Bytes of every key held (exact: the sum of the admitted keys' bytes).
    pub(crate) fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Rotation keys held.
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    pub(crate) fn rotation_keys(&self) -> usize {
        self.entries
            .keys()
            .filter(|k| matches!(k, CachedKey::Rotation { .. }))
            .count()
    }

    /// Whether `key` is held (does not count as a use).
    pub(crate) fn contains(&self, key: &CachedKey) -> bool {
        self.entries.contains_key(key)
    }

    /// The keys held, least recently used first (the order in which they would leave).
    pub(crate) fn keys_by_age(&self) -> Vec<CachedKey> {
        let mut keys: Vec<(u64, CachedKey)> =
            self.entries.iter().map(|(k, e)| (e.last_use, *k)).collect();
        keys.sort_unstable();
        keys.into_iter().map(|(_, k)| k).collect()
    }

    fn tick(&mut self) -> u64 {
        self.clock += 1;
        self.clock
    }

    /// The held value of `key`, counted as a use.
    pub(crate) fn get_mut(&mut self, key: &CachedKey) -> Option<&mut V> {
        let now = self.tick();
        self.entries.get_mut(key).map(|e| {
            e.last_use = now;
            &mut e.value
        })
    }

    /// The first held value `pick` accepts, not counted as a use.
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    pub(crate) fn find_mut(&mut self, pick: impl Fn(&V) -> bool) -> Option<&mut V> {
        self.entries
            .values_mut()
            .map(|e| &mut e.value)
            .find(|v| pick(v))
    }

    /// Whether a key of `bytes` can be admitted at all: `Err(capacity)` when it is larger
    /// than the whole capacity. Checked before the key is made, so a refusal changes nothing.
    pub(crate) fn check_fits(&self, bytes: u64) -> Result<(), u64> {
        match self.capacity {
            Some(cap) if bytes > cap => Err(cap),
            _ => Ok(()),
        }
    }

    /// Holds `value` as `key` (`bytes` long, at most the capacity: see
    /// [`KeyLru::check_fits`]), first letting go of the least recently used keys until it
    /// fits. Returns the keys that left, oldest first, for the caller to free. A key already
    /// held is replaced (its old value is among those returned).
    pub(crate) fn insert(&mut self, key: CachedKey, value: V, bytes: u64) -> Vec<(CachedKey, V)> {
        let mut gone = Vec::new();
        if let Some(old) = self.entries.remove(&key) {
            self.bytes -= old.bytes;
            gone.push((key, old.value));
        }
        if let Some(cap) = self.capacity {
            gone.extend(self.shrink_to(cap.saturating_sub(bytes)));
        }
        let now = self.tick();
        self.bytes += bytes;
        self.entries.insert(
            key,
            Entry {
                value,
                bytes,
                last_use: now,
            },
        );
        gone
    }

    /// Sets the capacity (`None`: unbounded), letting go of the least recently used keys
    /// until the rest fit. Returns the keys that left, oldest first.
    pub(crate) fn set_capacity(&mut self, capacity: Option<u64>) -> Vec<(CachedKey, V)> {
        self.capacity = capacity;
        capacity.map_or_else(Vec::new, |cap| self.shrink_to(cap))
    }

    /// Lets go of every key. Returns them, oldest first.
    pub(crate) fn clear(&mut self) -> Vec<(CachedKey, V)> {
        self.shrink_to(0)
    }

    /// Lets go of `key` if held.
    pub(crate) fn remove(&mut self, key: &CachedKey) -> Option<V> {
        self.entries.remove(key).map(|e| {
            self.bytes -= e.bytes;
            e.value
        })
    }

    /// Lets go of the least recently used keys until at most `limit` bytes are held.
    fn shrink_to(&mut self, limit: u64) -> Vec<(CachedKey, V)> {
        let mut gone = Vec::new();
        for key in self.keys_by_age() {
            if self.bytes <= limit {
                break;
            }
            if let Some(v) = self.remove(&key) {
                gone.push((key, v));
            }
        }
        gone
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rot(g: u64) -> CachedKey {
        CachedKey::Rotation {
            galois_element: g,
            step: i64::try_from(g).unwrap_or(0),
        }
    }

    fn names(gone: &[(CachedKey, &'static str)]) -> Vec<&'static str> {
        gone.iter().map(|(_, v)| *v).collect()
    }

    #[test]
    fn unbounded_holds_everything_and_counts_exact_bytes() {
        let mut c = KeyLru::default();
        assert!(c.insert(rot(5), "a", 10).is_empty());
        assert!(c.insert(rot(25), "b", 12).is_empty());
        assert!(c.insert(CachedKey::Relinearization, "r", 7).is_empty());
        assert_eq!(
            (c.keys_by_age().len(), c.rotation_keys(), c.bytes()),
            (3, 2, 29)
        );
        assert_eq!(c.check_fits(u64::MAX), Ok(()));
    }

    #[test]
    fn the_least_recently_used_keys_leave_first_until_the_new_one_fits() {
        let mut c = KeyLru::default();
        assert!(c.set_capacity(Some(30)).is_empty());
        c.insert(rot(5), "a", 10);
        c.insert(rot(25), "b", 10);
        c.insert(rot(125), "c", 10);
        // A use of `a` makes `b` the oldest.
        assert_eq!(c.get_mut(&rot(5)).copied(), Some("a"));
        assert_eq!(c.keys_by_age(), vec![rot(25), rot(125), rot(5)]);
        let gone = c.insert(CachedKey::Relinearization, "r", 15);
        assert_eq!(names(&gone), vec!["b", "c"]);
        assert_eq!(c.bytes(), 25);
        assert!(c.contains(&rot(5)) && c.contains(&CachedKey::Relinearization));
        // A lookup of a key not held still advances the clock but changes nothing else.
        assert!(c.get_mut(&rot(25)).is_none());
        assert_eq!(c.keys_by_age(), vec![rot(5), CachedKey::Relinearization]);
    }

    #[test]
    fn a_key_larger_than_the_capacity_is_refused_before_anything_changes() {
        let mut c = KeyLru::default();
        c.set_capacity(Some(20));
        c.insert(rot(5), "a", 20);
        assert_eq!(c.check_fits(21), Err(20));
        assert_eq!(c.check_fits(20), Ok(()));
        assert_eq!((c.keys_by_age().len(), c.bytes()), (1, 20));
    }

    #[test]
    fn lowering_the_capacity_lets_the_oldest_go_and_clear_lets_all_go() {
        let mut c = KeyLru::default();
        for (g, v) in [(5, "a"), (25, "b"), (125, "c")] {
            c.insert(rot(g), v, 10);
        }
        assert_eq!(names(&c.set_capacity(Some(15))), vec!["a", "b"]);
        assert_eq!(
            (c.keys_by_age().len(), c.bytes(), c.capacity()),
            (1, 10, Some(15))
        );
        assert!(c.set_capacity(None).is_empty());
        c.insert(rot(5), "a2", 10);
        assert_eq!(names(&c.clear()), vec!["c", "a2"]);
        assert_eq!((c.keys_by_age().len(), c.bytes()), (0, 0));
    }

    #[test]
    fn replacing_a_held_key_returns_the_old_value_and_keeps_the_bytes_exact() {
        let mut c = KeyLru::default();
        c.insert(rot(5), "old", 10);
        let gone = c.insert(rot(5), "new", 12);
        assert_eq!(names(&gone), vec!["old"]);
        assert_eq!((c.keys_by_age().len(), c.bytes()), (1, 12));
        assert_eq!(c.remove(&rot(5)), Some("new"));
        assert_eq!(c.bytes(), 0);
    }

    /// One step of the property test: a lookup, an admission (of `bytes`), or a capacity.
    #[derive(Debug, Clone)]
    enum Op {
        Get(u64),
        Insert(u64, u64),
        Capacity(Option<u64>),
        Clear,
    }

    fn op() -> impl proptest::strategy::Strategy<Value = Op> {
        use proptest::prelude::*;
        prop_oneof![
            (0u64..6).prop_map(Op::Get),
            (0u64..6, 1u64..40).prop_map(|(g, b)| Op::Insert(g, b)),
            proptest::option::of(0u64..100).prop_map(Op::Capacity),
            Just(Op::Clear),
        ]
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]

        /// Against a plain list kept in use order: the same keys leave, the bytes are the
        /// sum of what is held and never above the capacity, and what leaves is always the
        /// least recently used.
        #[test]
        fn matches_a_list_in_use_order(ops in proptest::collection::vec(op(), 1..60)) {
            let mut c: KeyLru<u64> = KeyLru::default();
            // (key, bytes), least recently used first.
            let mut model: Vec<(u64, u64)> = Vec::new();
            let mut cap: Option<u64> = None;
            let shrink = |model: &mut Vec<(u64, u64)>, limit: u64| {
                let mut gone = Vec::new();
                while model.iter().map(|e| e.1).sum::<u64>() > limit {
                    gone.push(model.remove(0).0);
                }
                gone
            };
            for o in ops {
                match o {
                    Op::Get(g) => {
                        let hit = c.get_mut(&rot(g)).is_some();
                        let pos = model.iter().position(|e| e.0 == g);
                        proptest::prop_assert_eq!(hit, pos.is_some());
                        if let Some(p) = pos {
                            let e = model.remove(p);
                            model.push(e);
                        }
                    }
                    Op::Insert(g, b) => {
                        if c.check_fits(b).is_err() {
                            proptest::prop_assert!(cap.is_some_and(|k| b > k));
                            continue;
                        }
                        let got: Vec<u64> = c
                            .insert(rot(g), g, b)
                            .into_iter()
                            .map(|(_, v)| v)
                            .collect();
                        let mut want = Vec::new();
                        if let Some(p) = model.iter().position(|e| e.0 == g) {
                            want.push(model.remove(p).0);
                        }
                        if let Some(k) = cap {
                            want.extend(shrink(&mut model, k - b));
                        }
                        model.push((g, b));
                        proptest::prop_assert_eq!(&got, &want);
                    }
                    Op::Capacity(k) => {
                        cap = k;
                        let got: Vec<u64> =
                            c.set_capacity(k).into_iter().map(|(_, v)| v).collect();
                        let want = k.map_or_else(Vec::new, |k| shrink(&mut model, k));
                        proptest::prop_assert_eq!(&got, &want);
                    }
                    Op::Clear => {
                        let got: Vec<u64> = c.clear().into_iter().map(|(_, v)| v).collect();
                        let want = shrink(&mut model, 0);
                        proptest::prop_assert_eq!(&got, &want);
                    }
                }
                let held: u64 = model.iter().map(|e| e.1).sum();
                proptest::prop_assert_eq!(c.bytes(), held);
                proptest::prop_assert!(cap.is_none_or(|k| held <= k));
                let order: Vec<CachedKey> = model.iter().map(|e| rot(e.0)).collect();
                proptest::prop_assert_eq!(c.keys_by_age(), order);
            }
        }
    }

    #[test]
    fn find_mut_changes_no_order() {
        let mut c = KeyLru::default();
        c.insert(rot(5), 50u32, 1);
        c.insert(rot(25), 250u32, 1);
        if let Some(v) = c.find_mut(|v| *v == 50) {
            *v = 51;
        }
        assert!(c.find_mut(|v| *v == 7).is_none());
        assert_eq!(c.keys_by_age(), vec![rot(5), rot(25)], "not a use");
        assert_eq!(c.remove(&rot(5)), Some(51));
    }

    #[test]
    fn keys_name_themselves() {
        assert_eq!(
            rot(25).to_string(),
            "rotation key for step 25 (Galois element 25)"
        );
        assert_eq!(
            CachedKey::Relinearization.to_string(),
            "relinearization key"
        );
    }
}
