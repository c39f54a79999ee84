//! The counters' maps: read on every send or pull, written once per new key (a topic, a
//! group, a request code). An `ArcSwap` of the whole map makes the read a guard and a hash
//! lookup, no lock and no `Arc` count moved; a new key copies the map (read-copy-update).
//! The statistic tables (`stats_items`) and the exporter's histograms and pull offsets
//! (`metrics`) keep theirs this way.

use std::borrow::Borrow;
use std::hash::Hash;
use std::sync::Arc;

use arc_swap::ArcSwap;
use rmq_common::fx::FxHashMap;

/// A map from `K` to shared values, swapped whole when a key is added.
pub(crate) type RcuMap<K, V> = ArcSwap<FxHashMap<K, Arc<V>>>;

/// Run `f` on the value of `key`, created with `V::default()` when the key is new.
pub(crate) fn with_entry<K, Q, V>(map: &RcuMap<K, V>, key: &Q, f: impl FnOnce(&V))
where
    K: Borrow<Q> + Hash + Eq + Clone,
    Q: ToOwned<Owned = K> + Hash + Eq + ?Sized,
    V: Default,
{
    if let Some(v) = map.load().get(key) {
        return f(v);
    }
    let mut created = None;
    map.rcu(|old| {
        let mut new = FxHashMap::clone(old);
        created = Some(Arc::clone(new.entry(key.to_owned()).or_default()));
        new
    });
    if let Some(v) = created {
        f(&v);
    }
}
