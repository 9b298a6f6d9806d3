//! trajlint's native core. The Python package (`trajlint/`) stays the reference: every answer
//! given here is one the Python path can give too, and `TRAJLINT_CORE=check` compares them.

use pyo3::prelude::*;

pub mod build;
pub mod doc;
pub mod families;
pub mod hash;
pub mod row;
pub mod strict;
pub mod validators;
pub mod value;

#[cfg(test)]
mod corpus;

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
/// identity keys, the JSON text of the parts the run's remaining rules read, its health
/// judgement when asked for, and the calls TL209 reports (`families::ownership::unowned`) when
/// the ownership family is asked.
type Proof = (
    u32,
    Vec<(&'static str, String)>,
    Vec<(&'static str, &'static str, String)>,
    Option<(u32, DigestTuple)>,
    Vec<UnownedTuple>,
);

/// (stated position, capture position, model_call_id, response_id) of an unowned call.
type UnownedTuple = (Option<usize>, Option<usize>, Option<String>, Option<String>);

/// What `check_row` says of a line it reads as a row: proved clean (`Proof`), or, when asked
/// for with `partial`, the families it is proved clean of although it is not proved clean of
/// all of `wanted`. Health is never among them (the Python path judges such a row's health from
/// its findings), and the ownership bit there proves TL201-TL208 only: TL209 reports what it
/// finds on a row the ownership family is otherwise clean of, so the Python path runs it.
#[derive(IntoPyObject)]
enum Checked {
    Proved(Proof),
    Partly(u32),
}

/// A line proved clean of every family in `wanted`, with the parts of `row::EXTRACTS` that
/// `extracts` asks for and, with `judge`, its health judgement (a line is then proved only when
/// the core judges it, which proves it clean of the health family too). None when the core
/// proves less, or cannot hand back the identity or a part exactly: the Python path then checks
/// the line. With `partial`, a row proved less is not None but the bits of the families it is
/// proved clean of (see `Checked`), so that the Python path runs only the other families' rules.
#[pyfunction]
#[pyo3(signature = (line, wanted, extracts=0, judge=false, partial=false))]
fn check_row(
    py: Python<'_>,
    line: &[u8],
    wanted: u32,
    extracts: u32,
    judge: bool,
    partial: bool,
) -> Option<Checked> {
    py.allow_threads(|| checked(line, wanted, extracts, judge, partial))
}

/// `check_row` of each line of `lines` (a list of bytes), in order, with the interpreter's lock
/// released once for them all: a thread that proves lines ahead of the one that takes them
/// (`trajlint.check.ahead`) then holds the lock only to hand the answers back.
#[pyfunction]
#[pyo3(signature = (lines, wanted, extracts=0, judge=false, partial=false))]
fn check_rows(
    py: Python<'_>,
    lines: &Bound<'_, pyo3::types::PyList>,
    wanted: u32,
    extracts: u32,
    judge: bool,
    partial: bool,
) -> PyResult<Vec<Option<Checked>>> {
    let held = lines
        .iter()
        .map(|line| line.downcast_into::<pyo3::types::PyBytes>())
        .collect::<Result<Vec<_>, _>>()?;
    let texts: Vec<&[u8]> = held.iter().map(|line| line.as_bytes()).collect();
    Ok(py.allow_threads(|| {
        texts
            .iter()
            .map(|line| checked(line, wanted, extracts, judge, partial))
            .collect()
    }))
}

fn checked(line: &[u8], wanted: u32, extracts: u32, judge: bool, partial: bool) -> Option<Checked> {
    row::with_row(line, |row| {
        let mut clean = 0;
        let proof = prove(row, wanted, extracts, judge, partial.then_some(&mut clean));
        match proof {
            Some(proof) => Some(Checked::Proved(proof)),
            None if partial => Some(Checked::Partly(clean)),
            None => None,
        }
    })
    .flatten()
}

/// `check_row`'s proof of a row. With `clean`, a family that is not proved does not end the
/// proof before every other family but health was asked: `clean` gets the bits of those
/// proved (see `Checked`).
fn prove(
    row: &families::Row<'_>,
    wanted: u32,
    extracts: u32,
    judge: bool,
    mut clean: Option<&mut u32>,
) -> Option<Proof> {
    // The health family's proof is its judgement: made once, whether asked for or proved. The
    // ownership family's is the list of calls TL209 reports. The others are asked one by one,
    // and the first unproved ends the line, unless `clean` asks for all of them.
    let others = wanted & !(families::HEALTH | families::OWNERSHIP);
    let mut proved = true;
    for (bit, proves) in families::ALL {
        if others & bit == 0 {
            continue;
        }
        if proves(row) {
            if let Some(clean) = clean.as_deref_mut() {
                *clean |= bit;
            }
        } else if clean.is_some() {
            proved = false;
        } else {
            return None;
        }
    }
    let unowned = if wanted & families::OWNERSHIP != 0 {
        let unowned = families::ownership::unowned(row);
        if let (Some(clean), Some(_)) = (clean.as_deref_mut(), &unowned) {
            *clean |= families::OWNERSHIP;
        }
        unowned
    } else {
        Some(Vec::new())
    };
    let unowned = unowned.filter(|_| proved)?;
    let judgement = if judge || wanted & families::HEALTH != 0 {
        Some(families::health::judge(row)?)
    } else {
        None
    };
    Some((
        row.evidence(),
        row::identity(row.doc),
        row::extracted(row.doc, extracts),
        judgement.filter(|_| judge).map(judgement_tuple),
        unowned
            .into_iter()
            .map(|call| {
                (
                    call.stated,
                    call.capture,
                    call.model_call_id.map(str::to_owned),
                    call.response_id.map(str::to_owned),
                )
            })
            .collect(),
    ))
}

/// The families of `wanted` the line is proved clean of (0 for a line that is not a strict JSON
/// object): what the differential tests compare family by family.
#[pyfunction]
fn clean_families(py: Python<'_>, line: &[u8], wanted: u32) -> u32 {
    py.allow_threads(|| row::with_row(line, |row| row::clean_families(row, wanted)).unwrap_or(0))
}

/// The row's digest as a tuple of `trajlint.health.view.Digest`'s fields, in their order.
type DigestTuple = (
    u64,
    u64,
    bool,
    Vec<(String, u64)>,
    bool,
    u64,
    u64,
    u64,
    u64,
    u64,
    bool,
);

/// The health judgement of a line proved clean of TL601-TL609: (the unobserved checks, bit i
/// for `ROW_CHECKS[i]`; the row's digest). None when the core proves less: what the
/// differential tests compare with the Python health view.
#[pyfunction]
fn health_judgement(py: Python<'_>, line: &[u8]) -> Option<(u32, DigestTuple)> {
    py.allow_threads(|| {
        row::with_row(line, |row| {
            families::health::judge(row).map(judgement_tuple)
        })
        .flatten()
    })
}

fn judgement_tuple(judgement: families::health::Judgement) -> (u32, DigestTuple) {
    let d = judgement.digest;
    (
        judgement.unobserved,
        (
            d.calls,
            d.successful_turn_calls,
            d.policy_calls_observed,
            d.failed_by_status,
            d.ended_on_error,
            d.duplicated_calls,
            d.transcript_prompt,
            d.transcript_completion,
            d.capture_prompt,
            d.capture_completion,
            d.stated_invalid,
        ),
    )
}

/// The SHA-256 of the chunks one after another, in lowercase hex: what
/// `trajlint.findings.sha256_hex` computes with hashlib, without loading OpenSSL.
#[pyfunction]
#[pyo3(signature = (*chunks))]
fn sha256_hex(chunks: &Bound<'_, pyo3::types::PyTuple>) -> PyResult<String> {
    use sha2::{Digest, Sha256};
    let mut digest = Sha256::new();
    for chunk in chunks.iter() {
        digest.update(chunk.downcast::<pyo3::types::PyBytes>()?.as_bytes());
    }
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut hex = String::with_capacity(64);
    for byte in digest.finalize() {
        hex.push(HEX[usize::from(byte >> 4)] as char);
        hex.push(HEX[usize::from(byte & 15)] as char);
    }
    Ok(hex)
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    // What the Python side expects of this module; raised whenever a function changes.
    m.add("API", 8)?;
    m.add("INVALID", strict::INVALID)?;
    m.add("REPEATED", strict::REPEATED)?;
    m.add("OVERSIZED", strict::OVERSIZED)?;
    m.add("SCHEMA", families::SCHEMA)?;
    m.add("COUNTS", families::COUNTS)?;
    m.add("STRUCTURE", families::STRUCTURE)?;
    m.add("OWNERSHIP", families::OWNERSHIP)?;
    m.add("DRIFT", families::DRIFT)?;
    m.add("HEALTH", families::HEALTH)?;
    m.add("PROVED", families::PROVED)?;
    m.add("GAPS", row::GAPS)?;
    m.add("STATED_ID", row::STATED_ID)?;
    // What the schema family is proved with: the fast path and the tests compare them with the
    // Python side's jsonschema-rs and packaged schemas.
    m.add("JSONSCHEMA", families::schema::JSONSCHEMA)?;
    m.add("SCHEMA_DOCUMENTS", families::schema::DOCUMENTS.to_vec())?;
    m.add_function(wrap_pyfunction!(scan_line, m)?)?;
    m.add_function(wrap_pyfunction!(check_row, m)?)?;
    m.add_function(wrap_pyfunction!(check_rows, m)?)?;
    m.add_function(wrap_pyfunction!(clean_families, m)?)?;
    m.add_function(wrap_pyfunction!(health_judgement, m)?)?;
    m.add_function(wrap_pyfunction!(sha256_hex, m)?)?;
    m.add_function(wrap_pyfunction!(validators::schema_validator, m)?)?;
    m.add_class::<validators::SchemaValidator>()?;
    Ok(())
}
