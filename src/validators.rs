//! The packaged schemas' validators for the Python rules: compiled by the same `jsonschema`
//! crate, on the same registry of the packaged documents, as the schema family's, so that a
//! process that runs the core holds one validation engine rather than this one and
//! jsonschema-rs's (about 10 MiB of its code and validators in each process of a run).
//!
//! An instance comes as the JSON text orjson writes of the Python value; the Python side hands
//! over only text that reads back as the value itself, and validates the rest with jsonschema-rs.
//! The errors are jsonschema-rs's, not always in its order: the `properties` keyword walks an
//! object by its members or by the schema's properties, whichever is shorter, and jsonschema-rs's
//! Python binding chooses otherwise for some objects. trajlint's findings never depend on that
//! order (python-jsonschema, its other backend, has its own).
//! Each error is given back as jsonschema-rs's Python binding gives it: the instance path as its
//! segments (an index for a segment of digits, as that binding splits the path), the kind's
//! keyword, the absolute keyword location, and the failing instance as JSON text.

use jsonschema::paths::LocationSegment;
use jsonschema::Validator;
use pyo3::prelude::*;

use crate::doc::schema::DocJson;
use crate::families::schema::packaged;
use crate::strict::scan_doc;

/// One segment of an instance path: a property's name or an array index.
#[derive(IntoPyObject)]
pub enum Segment {
    Property(String),
    Index(usize),
}

/// (instance path, keyword, absolute keyword location, the instance as JSON text).
type ErrorTuple = (Vec<Segment>, String, Option<String>, String);

/// A packaged schema (or a part of one), compiled in the registry of the packaged documents.
#[pyclass(frozen, module = "trajlint._core")]
pub struct SchemaValidator {
    validator: Validator<DocJson>,
}

#[pymethods]
impl SchemaValidator {
    /// Whether the instance is valid; None when the text is not one the core reads (invalid
    /// JSON, nested deeper than the document holds): the Python side then asks jsonschema-rs.
    fn is_valid(&self, py: Python<'_>, text: &[u8]) -> Option<bool> {
        py.allow_threads(|| {
            let text = std::str::from_utf8(text).ok()?;
            let (_, doc) = scan_doc(text);
            Some(self.validator.is_valid(doc?.root()))
        })
    }

    /// Every error of the instance, in the order the crate finds them; None as for `is_valid`.
    fn errors(&self, py: Python<'_>, text: &[u8]) -> Option<Vec<ErrorTuple>> {
        py.allow_threads(|| {
            let text = std::str::from_utf8(text).ok()?;
            let (_, doc) = scan_doc(text);
            let doc = doc?;
            let errors = self
                .validator
                .iter_errors(doc.root())
                .map(|error| {
                    let path = error
                        .instance_path()
                        .iter()
                        .map(|segment| match segment {
                            LocationSegment::Property(name) => Segment::Property(name.into_owned()),
                            LocationSegment::Index(index) => Segment::Index(index),
                        })
                        .collect();
                    (
                        path,
                        error.kind().keyword().to_owned(),
                        error
                            .absolute_keyword_location()
                            .map(|location| location.as_str().to_owned()),
                        error.instance().to_string(),
                    )
                })
                .collect();
            Some(errors)
        })
    }
}

/// A validator of `schema` (JSON text), or None when the packaged documents do not register or
/// the schema does not compile: the Python side then validates with jsonschema-rs.
#[pyfunction]
pub fn schema_validator(py: Python<'_>, schema: &[u8]) -> Option<SchemaValidator> {
    py.allow_threads(|| {
        let schema: serde_json::Value = serde_json::from_slice(schema).ok()?;
        let validator = packaged()?.validator(&schema)?;
        Some(SchemaValidator { validator })
    })
}
