//! Families of rules the core proves a row clean of, one module each. A family's `clean` returns
//! true only when the Python path would find nothing of any of its rules on the row: when in
//! doubt, false. `trajlint.check.fast.FAMILIES` names the rules of each bit.

use std::cell::{Cell, OnceCell};

use crate::build::ledger::{self, Ledger};
use crate::doc::Object;

pub mod counts;
pub mod drift;
pub mod health;
pub mod ownership;
pub mod schema;
pub mod structure;

/// TL101-TL107: the row and its sections validate against the schemas, values are canonical.
pub const SCHEMA: u32 = 1;
/// TL301-TL304: counts, token totals and times.
pub const COUNTS: u32 = 2;
/// TL402-TL410: ids, turn numbers, parents and invocations.
pub const STRUCTURE: u32 = 4;
/// TL201-TL209: who owns each model call (the ownership ledger).
pub const OWNERSHIP: u32 = 8;
/// TL501-TL502: the stated trajectory against the turns and join gaps of its evidence.
pub const DRIFT: u32 = 16;

/// TL601-TL609: NeMo Gym's rollout health checks (and the row's health judgement).
pub const HEALTH: u32 = 32;

/// The families whose proof is written: `trajlint.check.fast` asks the core only about these.
pub const PROVED: u32 = SCHEMA | COUNTS | STRUCTURE | OWNERSHIP | DRIFT | HEALTH;

/// A row as the families read it: its line, the line's document (a JSON object), and what
/// several families derive from it, derived once.
pub struct Row<'d> {
    pub text: &'d str,
    pub doc: Object<'d>,
    ledger: OnceCell<Option<Ledger<'d>>>,
    evidence: OnceCell<u32>,
    sections_valid: Cell<bool>,
}

impl<'d> Row<'d> {
    pub fn new(text: &'d str, doc: Object<'d>) -> Self {
        Row {
            text,
            doc,
            ledger: OnceCell::new(),
            evidence: OnceCell::new(),
            sections_valid: Cell::new(false),
        }
    }

    /// Whether the schema family proved the row's trajectory, observations and capture gaps
    /// valid on their own documents (`schema::clean_row`): the health family then need not
    /// validate them again. False when not known.
    pub fn sections_valid(&self) -> bool {
        self.sections_valid.get()
    }

    pub(crate) fn sections_proved_valid(&self) {
        self.sections_valid.set(true);
    }

    /// The evidence the row holds (`row::evidence`), which the ownership and drift families
    /// both read: found on first use.
    pub fn evidence(&self) -> u32 {
        *self.evidence.get_or_init(|| crate::row::evidence(self.doc))
    }

    /// The row's ownership ledger (`ledger::build`), which the ownership, drift and health
    /// families all read: built on first use.
    pub fn ledger(&self) -> Option<&Ledger<'d>> {
        self.ledger.get_or_init(|| ledger::build(self.doc)).as_ref()
    }
}

pub type Proof = fn(&Row<'_>) -> bool;

pub const ALL: [(u32, Proof); 6] = [
    (SCHEMA, schema::clean_row),
    (COUNTS, |row| counts::clean(row.doc)),
    (STRUCTURE, |row| structure::clean(row.doc)),
    (OWNERSHIP, ownership::clean),
    (DRIFT, drift::clean),
    (HEALTH, health::clean),
];

/// Whether `clean` proves the row written as `json` (a test's row; it must be a strict JSON
/// object).
#[cfg(test)]
pub(crate) fn proves(clean: fn(Object<'_>) -> bool, json: &str) -> bool {
    let (_, doc) = crate::strict::scan_doc(json);
    let doc = doc.unwrap_or_else(|| panic!("not strict JSON: {json}"));
    let row = doc.root().as_object();
    clean(row.unwrap_or_else(|| panic!("not an object: {json}")))
}
