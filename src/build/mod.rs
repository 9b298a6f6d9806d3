//! What the core reads of a row's build (trajlint.builder): the parts that rules of several
//! families judge, each modelled for the shapes it knows and refused (None) for any other.

pub mod join;
pub mod ledger;
pub mod turns;

/// The document of a line, for the tests: leaked, so that a test holds its values freely.
#[cfg(test)]
pub(crate) fn parsed(text: &str) -> crate::doc::Value<'static> {
    let text: &'static str = Box::leak(text.to_owned().into_boxed_str());
    let doc = crate::strict::scan_doc(text).1.expect("a strict JSON line");
    Box::leak(Box::new(doc)).root()
}
