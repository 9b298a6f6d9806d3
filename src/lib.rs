//! trajlint's native core. The Python package (`trajlint/`) stays the reference: every answer
//! given here is one the Python path can give too, and `TRAJLINT_CORE=check` compares them.

use pyo3::prelude::*;

pub mod build;
pub mod families;
pub mod row;
pub mod strict;
pub mod value;

#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The strict-JSON verdict on one line: 0 when orjson reads it exactly as written, else a
/// combination of `INVALID`, `REPEATED` and `OVERSIZED`.
#[pyfunction]
fn scan_line(line: &[u8]) -> u32 {
    strict::scan(line)
}

/// What the core hands back of a line it proves clean: its evidence bits, the JSON text of its
/// identity keys, the JSON text of the parts the run's remaining rules read, and its health
/// judgement when asked for.
type Proof = (
    u32,
    Vec<(&'static str, String)>,
    Vec<(&'static str, &'static str, String)>,
    Option<(u32, Vec<u8>)>,
);

/// A line proved clean of every family in `wanted`, with the parts of `row::EXTRACTS` that
/// `extracts` asks for. None when the core proves less, or cannot hand back the identity or a
/// part exactly: the Python path then checks the line. With `judge`, a line is proved only with
/// its health judgement, which the core does not give yet: the health report's runs go the
/// Python way.
#[pyfunction]
#[pyo3(signature = (line, wanted, extracts=0, judge=false))]
fn check_row(
    py: Python<'_>,
    line: &[u8],
    wanted: u32,
    extracts: u32,
    judge: bool,
) -> Option<Proof> {
    if judge {
        return None;
    }
    py.allow_threads(|| {
        let row = row::parse(line)?;
        if row::clean_families(&row, wanted) != wanted {
            return None;
        }
        Some((
            row::evidence(&row),
            row::identity(&row)?,
            row::extracted(&row, extracts)?,
            None,
        ))
    })
}

/// The families of `wanted` the line is proved clean of (0 for a line that is not a strict JSON
/// object): what the differential tests compare family by family.
#[pyfunction]
fn clean_families(py: Python<'_>, line: &[u8], wanted: u32) -> u32 {
    py.allow_threads(|| row::parse(line).map_or(0, |row| row::clean_families(&row, wanted)))
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    // What the Python side expects of this module; raised whenever a function changes.
    m.add("API", 3)?;
    m.add("INVALID", strict::INVALID)?;
    m.add("REPEATED", strict::REPEATED)?;
    m.add("OVERSIZED", strict::OVERSIZED)?;
    m.add("SCHEMA", families::SCHEMA)?;
    m.add("COUNTS", families::COUNTS)?;
    m.add("STRUCTURE", families::STRUCTURE)?;
    m.add("OWNERSHIP", families::OWNERSHIP)?;
    m.add("DRIFT", families::DRIFT)?;
    m.add("PROVED", families::PROVED)?;
    m.add("GAPS", row::GAPS)?;
    m.add("STATED_ID", row::STATED_ID)?;
    // What the schema family is proved with: the fast path and the tests compare them with the
    // Python side's jsonschema-rs and packaged schemas.
    m.add("JSONSCHEMA", families::schema::JSONSCHEMA)?;
    m.add("SCHEMA_DOCUMENTS", families::schema::DOCUMENTS.to_vec())?;
    m.add_function(wrap_pyfunction!(scan_line, m)?)?;
    m.add_function(wrap_pyfunction!(check_row, m)?)?;
    m.add_function(wrap_pyfunction!(clean_families, m)?)?;
    Ok(())
}
