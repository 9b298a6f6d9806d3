//! The row path on arbitrary bytes (`check_row` and `clean_families` of the extension): parsing a
//! line, proving it clean of every family, naming its evidence and its identity never panics or
//! hangs, whatever the families prove, and what it answers is consistent:
//!
//! - a line is parsed into a row exactly when the line scanner accepts it as strict JSON, it is an
//!   object, and it nests no deeper than serde_json reads (deeper rows go to the Python path);
//! - the families proved together are the union of each proved alone, and no bit outside those
//!   asked for is ever answered;
//! - the identity is the row's identity keys, in order, each as JSON text that reads back as the
//!   value the row holds; so is each part of `EXTRACTS` the row holds (the gap lists).
#![no_main]

use _core::families::{self, Row};
use _core::row::{self, EXTRACTS, IDENTITY_KEYS};
use _core::{strict, value};
use libfuzzer_sys::fuzz_target;
use serde_json::value::RawValue;
use serde_json::Value;
use std::collections::HashMap;

/// serde_json refuses a document whose arrays and objects nest this deep (its recursion limit,
/// 128, counts the outermost one).
const SERDE_DEPTH: usize = 128;

/// How deep the arrays and objects of a strict JSON line nest (strings skipped).
fn depth(line: &[u8]) -> usize {
    let (mut now, mut most, mut in_string, mut escaped) = (0usize, 0usize, false, false);
    for &byte in line {
        if in_string {
            match (escaped, byte) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match byte {
            b'"' => in_string = true,
            b'{' | b'[' => {
                now += 1;
                most = most.max(now);
            }
            b'}' | b']' => now = now.saturating_sub(1),
            _ => {}
        }
    }
    most
}

fuzz_target!(|data: &[u8]| {
    let every = families::ALL.iter().fold(0, |bits, (bit, _)| bits | bit);
    let checked = row::with_row(data, |row| check(data, row, every));
    if checked.is_none() {
        // Not a row: either the scanner refuses it, or it is no object, or it nests too deep
        // for serde_json (the Python path reads it and explains it).
        if strict::scan(data) == 0 && depth(data) < SERDE_DEPTH {
            let first = data.iter().find(|b| !b" \t\r\n".contains(b));
            assert_ne!(
                first,
                Some(&b'{'),
                "a strict JSON object serde_json does not read"
            );
        }
    }
});

fn check(data: &[u8], row: &Row<'_>, every: u32) {
    assert_eq!(strict::scan(data), 0);
    assert!(depth(data) < SERDE_DEPTH);
    // The document reads as serde_json reads the line.
    let serde = value::from_str(row.text).expect("a row serde_json does not read");
    assert_eq!(
        row.doc.as_value().to_serde().to_string(),
        serde.to_string(),
        "a document that reads otherwise than serde_json"
    );
    let Value::Object(map) = &serde else {
        panic!("a row that is no object to serde_json");
    };

    let clean = row::clean_families(row, every);
    assert_eq!(clean & !every, 0, "a family bit no family has");
    let mut alone = 0;
    for (bit, _) in families::ALL {
        alone |= row::clean_families(row, bit);
    }
    assert_eq!(
        alone, clean,
        "families proved alone differ from families proved together"
    );
    assert_eq!(row::clean_families(row, 0), 0);

    assert!(row::evidence(row.doc) < 32, "an evidence bit beyond EVIDENCE");

    assert_eq!(row::extracted(row.doc, 0).len(), 0);
    let parts = row::extracted(row.doc, row::GAPS | row::STATED_ID);
    let held: Vec<(&str, &str)> = EXTRACTS
        .iter()
        .map(|(section, key, _)| (*section, *key))
        .filter(|(section, key)| {
            map.get(*section)
                .and_then(Value::as_object)
                .is_some_and(|members| members.contains_key(*key))
        })
        .collect();
    let named: Vec<(&str, &str)> = parts.iter().map(|(s, k, _)| (*s, *k)).collect();
    assert_eq!(named, held, "extracted parts other than those the row holds");
    for (section, key, text) in &parts {
        let value: Value = serde_json::from_str(text).expect("a part whose text is not JSON");
        assert_eq!(
            &value, &map[*section][*key],
            "a part whose text reads back as another value"
        );
        assert_eq!(
            strict::scan(text.as_bytes()),
            0,
            "a part's text orjson would not read as is"
        );
    }

    // The identity's text must read back, through orjson, as what the line holds: the same
    // value, and each number an integer exactly where the line writes one (orjson reads `-0` as
    // the integer 0, serde_json as the float -0.0).
    let identity = row::identity(row.doc);
    let expected: Vec<&str> = IDENTITY_KEYS
        .iter()
        .copied()
        .filter(|key| map.contains_key(*key))
        .collect();
    let keys: Vec<&str> = identity.iter().map(|(key, _)| *key).collect();
    assert_eq!(keys, expected);
    let raw: HashMap<String, Box<RawValue>> = serde_json::from_slice(data).expect("a row");
    for (key, text) in &identity {
        let value: Value = serde_json::from_str(text).expect("identity text that is not JSON");
        assert_eq!(
            &value, &map[*key],
            "identity text that reads back as another value"
        );
        assert_eq!(
            strict::scan(text.as_bytes()),
            0,
            "identity text orjson would not read as is"
        );
        assert_eq!(
            integers(text.as_bytes()),
            integers(raw[*key].get().as_bytes()),
            "identity text with a number read as another kind than the line's"
        );
    }
}

/// For each number of a JSON text, in order, whether it is written as an integer (orjson reads
/// it as an int, else as a float).
fn integers(text: &[u8]) -> Vec<bool> {
    let (mut kinds, mut in_string, mut escaped, mut number) = (Vec::new(), false, false, None);
    for &byte in text {
        if in_string {
            match (escaped, byte) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match (number, byte) {
            (Some(_), b'.' | b'e' | b'E') => number = Some(false),
            (Some(_), b'0'..=b'9' | b'+' | b'-') => {}
            (None, b'-' | b'0'..=b'9') => number = Some(true),
            (Some(integer), _) => {
                kinds.push(integer);
                number = None;
            }
            _ => {}
        }
        if number.is_none() && byte == b'"' {
            in_string = true;
        }
    }
    kinds.extend(number);
    kinds
}
