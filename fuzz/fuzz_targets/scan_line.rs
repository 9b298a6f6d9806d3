//! The line entry point on arbitrary bytes: it never panics, and what it says does not depend on
//! the JSON whitespace around the line or on the bytes after it in memory.
#![no_main]

use _core::strict::{scan, scan_doc, INVALID};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let verdict = scan(data);
    assert!(verdict <= 7);
    if let Ok(text) = std::str::from_utf8(data) {
        // Building the document changes no verdict, and a document is built only when clean.
        let (flags, doc) = scan_doc(text);
        assert_eq!(flags, verdict);
        assert!(doc.is_none() || verdict == 0);
    }
    let padded = [b" \t", data, b"\r "].concat();
    assert_eq!(scan(&padded), verdict);
    if verdict & INVALID == 0 {
        // Two JSON texts on one line are never one.
        let twice = [data, b" ", data].concat();
        assert_eq!(scan(&twice), INVALID);
    }
});
