//! trajlint's native core. The Python package (`trajlint/`) stays the reference: every answer
//! given here is one the Python path can give too, and `TRAJLINT_CORE=check` compares them.

use pyo3::prelude::*;

pub mod strict;

/// The strict-JSON verdict on one line: 0 when orjson reads it exactly as written, else a
/// combination of `INVALID`, `REPEATED` and `OVERSIZED`.
#[pyfunction]
fn scan_line(line: &[u8]) -> u32 {
    strict::scan(line)
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    // What the Python side expects of this module; raised whenever a function changes.
    m.add("API", 1)?;
    m.add("INVALID", strict::INVALID)?;
    m.add("REPEATED", strict::REPEATED)?;
    m.add("OVERSIZED", strict::OVERSIZED)?;
    m.add_function(wrap_pyfunction!(scan_line, m)?)?;
    Ok(())
}
