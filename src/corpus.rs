//! The repository's corpora for the core's tests: every line of the `.jsonl` files of
//! `examples/`, `tests/data/real/` and `tests/data/`, as text (lines that are no UTF-8 left out).

pub fn lines() -> Vec<String> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut lines = Vec::new();
    for dir in ["examples", "tests/data/real", "tests/data"] {
        let Ok(entries) = std::fs::read_dir(root.join(dir)) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.extension().is_none_or(|e| e != "jsonl") {
                continue;
            }
            let bytes = std::fs::read(&path).expect("a corpus file");
            for line in bytes.split(|&b| b == b'\n') {
                if let Ok(text) = std::str::from_utf8(line) {
                    lines.push(text.to_owned());
                }
            }
        }
    }
    lines
}
