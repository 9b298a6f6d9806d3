//! The maps and sets of the families and the build, with foldhash's seeded hasher in place of
//! std's SipHash: keys are short ids and small tuples, hashed thousands of times a row.

pub type HashMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;
pub type HashSet<T> = std::collections::HashSet<T, foldhash::fast::RandomState>;
