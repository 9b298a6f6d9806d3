//! What the core reads of a row's build (trajlint.builder): the parts that rules of several
//! families judge, each modelled for the shapes it knows and refused (None) for any other.

pub mod join;
pub mod ledger;
pub mod turns;
