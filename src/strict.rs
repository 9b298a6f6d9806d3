//! Strict JSON, one line at a time: does orjson accept the line, and does it hold a repeated key
//! or an integer beyond 64 bits (which orjson reads silently, as the last value and as a float)?
//!
//! The scanner accepts exactly what orjson accepts: RFC 8259 JSON in valid UTF-8, nesting at
//! most 1,024 deep, no unpaired UTF-16 surrogate escape, no number that is infinite as a double.
//! It builds nothing: keys are compared as bytes (decoded only when they hold an escape), and
//! only numbers that may not fit are converted. It never recurses, so no input can overflow the
//! stack, and it never indexes out of bounds (every access is checked).
//!
//! `scan_doc` also builds the line's document (`crate::doc`) in the same pass.

use crate::doc::{Doc, Node, Span, Tag, DECODED};

/// orjson refuses the line (or may: the caller asks orjson, which explains why).
pub const INVALID: u32 = 1;
/// Some object holds a key more than once.
pub const REPEATED: u32 = 2;
/// Some integer does not fit in 64 bits (signed or unsigned).
pub const OVERSIZED: u32 = 4;

/// orjson's limit: 1,024 nested arrays or objects are read, one more is refused.
const MAX_DEPTH: usize = 1024;
/// An object's first this many keys are each compared, as it is read, with the keys before it
/// that `Open::seen` says may equal it; an object with more keys has them all sorted when it
/// closes.
const PAIRWISE_KEYS: usize = 24;

/// serde_json's recursion limit: it reads arrays and objects nested fewer levels than this, and a
/// `Doc` holds what serde_json reads (`scan_doc`).
pub const DOC_DEPTH: usize = 128;

/// Where a key's bytes are: in the line (no escape) or in the scanner's decoded text.
#[derive(Clone, Copy)]
struct Key {
    start: usize,
    end: usize,
    decoded: bool,
    /// The key's length and first bytes in one word (`signature`): equal keys have equal
    /// signatures, so most pairs of keys are told apart without comparing their bytes.
    signature: u64,
}

/// A key's length (its top byte, saturated) and its first seven bytes.
#[inline]
fn signature(bytes: &[u8]) -> u64 {
    let head = match bytes.first_chunk::<8>() {
        Some(first) => u64::from_le_bytes(*first) & 0x00ff_ffff_ffff_ffff,
        None => bytes
            .iter()
            .rev()
            .fold(0, |word, &byte| word << 8 | u64::from(byte)),
    };
    head | (bytes.len().min(255) as u64) << 56
}

/// `signature` of `line[start..end]`, read as one word when the line holds eight bytes from
/// `start` (a short key is followed by at least its closing quote and a colon): most keys are
/// shorter than eight bytes, which `signature` reads one byte at a time. Inlined into the
/// reading of a key, which otherwise called it.
#[inline(always)]
fn line_signature(line: &[u8], start: usize, end: usize) -> u64 {
    let len = end - start;
    match line.get(start..).and_then(<[u8]>::first_chunk::<8>) {
        Some(first) => {
            let mask = (1u64 << (8 * len.min(7))) - 1;
            u64::from_le_bytes(*first) & mask | (len.min(255) as u64) << 56
        }
        None => signature(&line[start..end]),
    }
}

/// The bit of `Open::seen` for a key of this signature: one of 64, from the signature's
/// product with an odd constant (its top bits mix all of the signature's).
#[inline]
fn seen_bit(signature: u64) -> u64 {
    1 << (signature.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 58)
}

/// Where the bytes of a member's key are, from its node's span (its signature left 0).
fn span_key(span: Span) -> Key {
    let start = span.start as usize;
    Key {
        start,
        end: start + (span.len & !DECODED) as usize,
        decoded: span.len & DECODED != 0,
        signature: 0,
    }
}

/// What the value being read is in: a container, or nothing (the line's top).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Top,
    Object,
    Array,
}

/// The container whose members are being read (or the line's top): in the scan's locals while
/// its members are read, on `frames` while a member nests deeper.
#[derive(Clone, Copy)]
struct Open {
    kind: Kind,
    /// Its node in the document, when one is built.
    node: u32,
    /// Its members so far, written to its node once, when it closes: counted on the node, each
    /// member cost a load and a store through the node's index.
    members: u32,
    /// An object's keys start at this index of `keys` (for a verdict alone: a document's keys
    /// are read from its members' nodes).
    keys: usize,
    /// A bit for each of an object's keys so far (`seen_bit`): a key whose bit is clear is not
    /// one of them. Comparing every pair of keys when the object closed cost a quarter of the
    /// scan.
    seen: u64,
}

const TOP: Open = Open {
    kind: Kind::Top,
    node: 0,
    members: 0,
    keys: 0,
    seen: 0,
};

struct Scanner<'a> {
    /// The line, as text (numbers are read from it) and as bytes.
    text: &'a str,
    line: &'a [u8],
    flags: u32,
    /// The keys of the objects being read, for a verdict alone; scratch for an object's keys
    /// sorted when it closes, for a document.
    keys: Vec<Key>,
    /// The containers around the one being read, the line's top first.
    frames: Vec<Open>,
    /// The document being built (`scan_doc`): its nodes, its decoded strings and keys, and
    /// whether it nests deeper than a `Doc` holds. For a verdict alone, no node, and the decoded
    /// keys (at most the line's length).
    nodes: Vec<Node>,
    decoded: Vec<u8>,
    too_deep: bool,
}

type Step = Result<(), ()>;

/// The verdict on one line: 0 (clean), or `INVALID`, or `REPEATED` and/or `OVERSIZED`.
pub fn scan(line: &[u8]) -> u32 {
    match std::str::from_utf8(line) {
        Ok(text) => scan_text(text),
        Err(_) => INVALID,
    }
}

/// `scan` of a line already known to be UTF-8.
pub fn scan_text(text: &str) -> u32 {
    let mut scanner = Scanner::new(text);
    match scanner.document::<false>() {
        Ok(()) => scanner.flags,
        Err(()) => INVALID,
    }
}

/// `scan_text`, and in the same pass the line's document when the verdict is clean (0) and it
/// nests fewer than `DOC_DEPTH` levels.
pub fn scan_doc(text: &str) -> (u32, Option<Doc<'_>>) {
    scan_doc_reusing(text, &mut Spare::default())
}

/// The vectors a scan fills, kept from one line to the next (`scan_doc_reusing`,
/// `Spare::recycle`): a row otherwise grows its key, frame and decoded-text vectors from empty
/// and allocates its nodes afresh, a dozen allocations and copies a row.
#[derive(Default)]
pub struct Spare {
    keys: Vec<Key>,
    frames: Vec<Open>,
    nodes: Vec<Node>,
    decoded: Vec<u8>,
}

/// A spare vector larger than this many bytes is dropped rather than kept: one very long line
/// must not hold its memory for the rest of the run. Rollout rows take a few tens of kilobytes.
const SPARE_BYTES: usize = 1 << 20;

impl Spare {
    /// Takes back the vectors of a document `scan_doc_reusing` built.
    pub fn recycle(&mut self, doc: Doc<'_>) {
        self.nodes = doc.nodes;
        self.decoded = doc.decoded.into_bytes();
    }

    /// The spare without any vector over `SPARE_BYTES`.
    pub fn trimmed(mut self) -> Spare {
        fn trim<T>(vector: &mut Vec<T>) {
            if vector.capacity() * std::mem::size_of::<T>() > SPARE_BYTES {
                *vector = Vec::new();
            }
        }
        trim(&mut self.keys);
        trim(&mut self.frames);
        trim(&mut self.nodes);
        trim(&mut self.decoded);
        self
    }
}

/// `scan_doc`, filling the vectors of `spare` (whatever they hold is cleared first). The
/// document takes the node and decoded-text vectors: `Spare::recycle` gives them back.
pub fn scan_doc_reusing<'t>(text: &'t str, spare: &mut Spare) -> (u32, Option<Doc<'t>>) {
    let mut scanner = Scanner::new(text);
    std::mem::swap(&mut scanner.keys, &mut spare.keys);
    std::mem::swap(&mut scanner.frames, &mut spare.frames);
    std::mem::swap(&mut scanner.nodes, &mut spare.nodes);
    std::mem::swap(&mut scanner.decoded, &mut spare.decoded);
    scanner.keys.clear();
    scanner.frames.clear();
    scanner.nodes.clear();
    scanner.decoded.clear();
    // A node holds offsets as 32-bit numbers, and a string's length one bit less.
    let building = text.len() < DECODED as usize;
    let scanned = if building {
        // Room for the nodes of a typical row at once (rollout rows average ~28 bytes a
        // value): growing the vector by doubling copied it and faulted in fresh pages.
        scanner.nodes.reserve(text.len() / 16 + 8);
        scanner.document::<true>()
    } else {
        scanner.document::<false>()
    };
    spare.keys = std::mem::take(&mut scanner.keys);
    spare.frames = std::mem::take(&mut scanner.frames);
    let flags = if scanned.is_err() {
        INVALID
    } else {
        scanner.flags
    };
    if !building || flags != 0 || scanner.too_deep {
        spare.nodes = scanner.nodes;
        spare.decoded = scanner.decoded;
        return (flags, None);
    }
    let doc = String::from_utf8(scanner.decoded).ok().map(|decoded| Doc {
        text,
        nodes: scanner.nodes,
        decoded,
    });
    (flags, doc)
}

const HIGHS: u64 = 0x8080_8080_8080_8080;

/// The high bit of the first byte of `word` (little-endian) that is a quote, a backslash or a
/// control character (below 0x20); none when no byte is. Bits above the first may be set too (a
/// borrow runs on from a matching byte into the next), never below it: the scan only asks where
/// the first is. Each test is the classic `(x - 0x01..) & !x` (`x - 0x20..` for control
/// characters), whose lowest set bit is exact; a third fewer operations than testing each byte
/// exactly. The three share one `& !word`: a byte below 0x80 is the same byte XORed with a quote
/// or a backslash (both below 0x80) only in its high bit, and a byte from 0x80 is never special.
#[inline]
fn special_bytes(word: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    let quote = (word ^ (ONES * b'"' as u64)).wrapping_sub(ONES);
    let backslash = (word ^ (ONES * b'\\' as u64)).wrapping_sub(ONES);
    let control = word.wrapping_sub(ONES * 0x20);
    (quote | backslash | control) & !word & HIGHS
}

fn hex_value(digits: &[u8]) -> Option<u32> {
    let mut value = 0u32;
    for &d in digits {
        value = value * 16 + (d as char).to_digit(16)?;
    }
    Some(value)
}

/// Past the whitespace from `at`.
#[inline(always)]
fn whitespace(line: &[u8], mut at: usize) -> usize {
    while let Some(b' ' | b'\t' | b'\n' | b'\r') = line.get(at) {
        at += 1;
    }
    at
}

/// Past the digits from `at`.
#[inline]
fn digits(line: &[u8], mut at: usize) -> usize {
    while let Some(b'0'..=b'9') = line.get(at) {
        at += 1;
    }
    at
}

/// Past `word`, which must be written at `at`. Its length a constant, the comparison is one
/// load and compare, where a slice's called `memcmp`.
#[inline]
fn literal<const N: usize>(line: &[u8], at: usize, word: &[u8; N]) -> Result<usize, ()> {
    match line.get(at..).and_then(<[u8]>::first_chunk::<N>) {
        Some(written) if written == word => Ok(at + N),
        _ => Err(()),
    }
}

/// A string from its opening quote at `quote`: where its closing quote is, and whether it holds
/// an escape. Inlined into its two callers: most strings are a word or two, and a call's saving
/// and restoring of registers cost as much as scanning them.
#[inline(always)]
fn string(line: &[u8], quote: usize) -> Result<(usize, bool), ()> {
    let mut at = quote + 1;
    let mut escaped = false;
    loop {
        // Eight bytes at a time up to the next quote, backslash or control character (the last
        // seven of the line one at a time, below). Most strings end within two or three words:
        // cutting the rest of the line into words first cost more than testing each word's
        // bounds.
        while at + 8 <= line.len() {
            let word = line[at..at + 8].try_into().unwrap_or_default();
            let special = special_bytes(u64::from_le_bytes(word));
            if special != 0 {
                at += (special.trailing_zeros() / 8) as usize;
                break;
            }
            at += 8;
        }
        match line.get(at).copied().ok_or(())? {
            b'"' => return Ok((at, escaped)),
            b'\\' => {
                escaped = true;
                at = escape(line, at)?;
            }
            0x00..=0x1f => return Err(()),
            _ => at += 1,
        }
    }
}

/// One escape sequence from its backslash at `at`, and past it; a high surrogate must be
/// followed by a low one.
fn escape(line: &[u8], at: usize) -> Result<usize, ()> {
    match line.get(at + 1).ok_or(())? {
        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => Ok(at + 2),
        b'u' => match unit(line, at)? {
            0xD800..=0xDBFF => {
                if line.get(at + 6) != Some(&b'\\') || line.get(at + 7) != Some(&b'u') {
                    return Err(());
                }
                if !(0xDC00..=0xDFFF).contains(&unit(line, at + 6)?) {
                    return Err(());
                }
                Ok(at + 12)
            }
            0xDC00..=0xDFFF => Err(()),
            _ => Ok(at + 6),
        },
        _ => Err(()),
    }
}

/// The code unit of the `\uXXXX` escape at `at`.
fn unit(line: &[u8], at: usize) -> Result<u32, ()> {
    hex_value(line.get(at + 2..at + 6).ok_or(())?).ok_or(())
}

impl<'a> Scanner<'a> {
    fn new(text: &'a str) -> Self {
        Scanner {
            text,
            line: text.as_bytes(),
            flags: 0,
            keys: Vec::new(),
            frames: Vec::new(),
            nodes: Vec::new(),
            decoded: Vec::new(),
            too_deep: false,
        }
    }

    /// A node for the value read from `start` to `end`; its index. A container's is completed
    /// when it closes (`close_container`).
    #[inline(always)]
    fn push(&mut self, tag: Tag, key: Span, payload: u64, start: usize, end: usize) -> u32 {
        let index = self.nodes.len() as u32;
        self.nodes.push(Node {
            tag,
            key,
            payload,
            start: start as u32,
            end: end as u32,
            after: index + 1,
        });
        index
    }

    /// `container` closed at `at`: its members, where its descendants end, and its text.
    fn close_container(&mut self, container: Open, at: usize) {
        let end = self.nodes.len();
        if let Some(node) = self.nodes.get_mut(container.node as usize) {
            node.payload = (end as u64) << 32 | u64::from(container.members);
            node.end = at as u32;
            node.after = end as u32;
        }
    }

    /// One JSON text: a value, surrounded by whitespace only; with `BUILD`, its document too.
    /// The position, the container being read and the next member's key are locals, and after
    /// each value the container's kind picks the branch: held in the scanner, they were
    /// stored and loaded again around every value.
    fn document<const BUILD: bool>(&mut self) -> Step {
        let line = self.line;
        let mut at = 0;
        let mut open = TOP;
        // The key of the member whose value comes next (none in an array or at the top).
        let mut key = Span::default();
        'value: loop {
            at = whitespace(line, at);
            let start = at;
            open.members += 1;
            match line.get(at).copied().ok_or(())? {
                opening @ (b'{' | b'[') => {
                    let (kind, tag, closing) = if opening == b'{' {
                        (Kind::Object, Tag::Object, b'}')
                    } else {
                        (Kind::Array, Tag::Array, b']')
                    };
                    // Room for one more level of nesting (an empty container is a level too):
                    // `frames` holds the top and every container around this one.
                    if self.frames.len() >= MAX_DEPTH {
                        return Err(());
                    }
                    if BUILD {
                        self.too_deep |= self.frames.len() + 1 >= DOC_DEPTH;
                    }
                    at = whitespace(line, at + 1);
                    if line.get(at) == Some(&closing) {
                        at += 1;
                        if BUILD {
                            let next = self.nodes.len() as u64;
                            self.push(tag, std::mem::take(&mut key), (next + 1) << 32, start, at);
                        }
                    } else {
                        let node = if BUILD {
                            self.push(tag, std::mem::take(&mut key), 0, start, at)
                        } else {
                            0
                        };
                        self.frames.push(open);
                        open = Open {
                            kind,
                            node,
                            members: 0,
                            keys: self.keys.len(),
                            seen: 0,
                        };
                        if kind == Kind::Object {
                            at = self.member_key::<BUILD>(at, &mut open, &mut key)?;
                        }
                        continue 'value;
                    }
                }
                b'"' => {
                    let (end, escaped) = string(line, at)?;
                    at = end + 1;
                    if BUILD {
                        let span = self.span(start + 1, end, escaped)?;
                        self.push(Tag::Str, std::mem::take(&mut key), span.bits(), start, at);
                    }
                }
                b'-' | b'0'..=b'9' => {
                    let (tag, payload);
                    (at, tag, payload) = self.number::<BUILD>(start)?;
                    if BUILD {
                        self.push(tag, std::mem::take(&mut key), payload, start, at);
                    }
                }
                first @ (b't' | b'f' | b'n') => {
                    let tag;
                    (at, tag) = match first {
                        b't' => (literal(line, at, b"true")?, Tag::True),
                        b'f' => (literal(line, at, b"false")?, Tag::False),
                        _ => (literal(line, at, b"null")?, Tag::Null),
                    };
                    if BUILD {
                        self.push(tag, std::mem::take(&mut key), 0, start, at);
                    }
                }
                _ => return Err(()),
            }
            // After a value: a separator, the end of its container, or the end of the line.
            loop {
                at = whitespace(line, at);
                let byte = line.get(at).copied();
                match open.kind {
                    Kind::Object => match byte {
                        Some(b',') => {
                            at = whitespace(line, at + 1);
                            at = self.member_key::<BUILD>(at, &mut open, &mut key)?;
                            continue 'value;
                        }
                        Some(b'}') => {
                            at += 1;
                            self.close_object::<BUILD>(open, at);
                        }
                        _ => return Err(()),
                    },
                    Kind::Array => match byte {
                        Some(b',') => {
                            at += 1;
                            continue 'value;
                        }
                        Some(b']') => {
                            at += 1;
                            if BUILD {
                                self.close_container(open, at);
                            }
                        }
                        _ => return Err(()),
                    },
                    Kind::Top => return if byte.is_none() { Ok(()) } else { Err(()) },
                }
                open = self.frames.pop().ok_or(())?;
            }
        }
    }

    /// `"key" :` of an object member from `at` (whitespace before it already skipped), and
    /// past it. Inlined for the same reason as `string`.
    #[inline(always)]
    fn member_key<const BUILD: bool>(
        &mut self,
        at: usize,
        object: &mut Open,
        key: &mut Span,
    ) -> Result<usize, ()> {
        let line = self.line;
        if line.get(at) != Some(&b'"') {
            return Err(());
        }
        let (end, escaped) = string(line, at)?;
        let start = at + 1;
        let entry = if escaped {
            self.decode_key(start, end)?
        } else {
            Key {
                start,
                end,
                decoded: false,
                signature: line_signature(line, start, end),
            }
        };
        let index = if BUILD {
            object.members as usize
        } else {
            self.keys.len() - object.keys
        };
        if index < PAIRWISE_KEYS {
            let bit = seen_bit(entry.signature);
            if object.seen & bit != 0
                && self.flags & REPEATED == 0
                && self.seen::<BUILD>(object, entry)
            {
                self.flags |= REPEATED;
            }
            object.seen |= bit;
        }
        // A document's keys are its members' (`seen`, `close_object`): no list of its own.
        if BUILD {
            *key = Span {
                start: entry.start as u32,
                len: (entry.end - entry.start) as u32 | if escaped { DECODED } else { 0 },
            };
        } else {
            self.keys.push(entry);
        }
        let at = whitespace(line, end + 1);
        if line.get(at) == Some(&b':') {
            Ok(at + 1)
        } else {
            Err(())
        }
    }

    /// The document's span of the string between `start` and `end`: in the line, or decoded.
    #[inline(always)]
    fn span(&mut self, start: usize, end: usize, escaped: bool) -> Result<Span, ()> {
        if !escaped {
            return Ok(Span {
                start: start as u32,
                len: (end - start) as u32,
            });
        }
        self.decoded_span(start, end)
    }

    /// `span` of a string with an escape: decoded onto the document's buffer.
    #[inline(never)]
    fn decoded_span(&mut self, start: usize, end: usize) -> Result<Span, ()> {
        let from = self.decoded.len();
        decode(self.line, start, end, &mut self.decoded)?;
        Ok(Span {
            start: from as u32,
            len: (self.decoded.len() - from) as u32 | DECODED,
        })
    }

    /// `object` closed at `at`: its node, and whether it holds a key twice.
    fn close_object<const BUILD: bool>(&mut self, object: Open, at: usize) {
        if !BUILD {
            if self.keys.len() - object.keys > PAIRWISE_KEYS
                && self.flags & REPEATED == 0
                && self.repeats(object.keys)
            {
                self.flags |= REPEATED;
            }
            self.keys.truncate(object.keys);
            return;
        }
        self.close_container(object, at);
        if object.members as usize > PAIRWISE_KEYS && self.flags & REPEATED == 0 {
            self.keys.clear();
            let mut member = object.node as usize + 1;
            while let Some(&node) = self.nodes.get(member) {
                let key = span_key(node.key);
                let signature = signature(self.key_bytes(key));
                self.keys.push(Key { signature, ..key });
                member = node.after as usize;
            }
            if self.repeats(0) {
                self.flags |= REPEATED;
            }
            self.keys.clear();
        }
    }

    fn key_bytes(&self, key: Key) -> &[u8] {
        let source = if key.decoded {
            &self.decoded[..]
        } else {
            self.line
        };
        source.get(key.start..key.end).unwrap_or_default()
    }

    /// Whether two keys of the same signature are the same key. Not inlined: keys' signatures
    /// seldom agree, and inlined, the bytes of each key were sliced before its comparisons
    /// whether any signature agreed or not.
    #[inline(never)]
    fn same_key(&self, a: Key, b: Key) -> bool {
        self.key_bytes(a) == self.key_bytes(b)
    }

    /// Whether `key` is one of the keys of `object` so far: in `keys`, or its members' nodes
    /// (`BUILD`). Not inlined: a key's bit is seldom set already.
    #[inline(never)]
    fn seen<const BUILD: bool>(&self, object: &Open, key: Key) -> bool {
        if !BUILD {
            return self.keys[object.keys..]
                .iter()
                .any(|&seen| seen.signature == key.signature && self.same_key(seen, key));
        }
        let bytes = self.key_bytes(key);
        let mut member = object.node as usize + 1;
        while let Some(node) = self.nodes.get(member) {
            if self.key_bytes(span_key(node.key)) == bytes {
                return true;
            }
            member = node.after as usize;
        }
        false
    }

    /// Whether the keys from index `first` on hold one twice.
    fn repeats(&self, first: usize) -> bool {
        let keys = &self.keys[first..];
        // Equal keys have equal signatures: sorted by signature, they are in the same run.
        let mut sorted: Vec<Key> = keys.to_vec();
        sorted.sort_unstable_by_key(|key| key.signature);
        sorted
            .chunk_by(|a, b| a.signature == b.signature)
            .filter(|run| run.len() > 1)
            .any(|run| {
                run.iter().enumerate().any(|(i, &a)| {
                    run[i + 1..]
                        .iter()
                        .any(|&b| self.key_bytes(a) == self.key_bytes(b))
                })
            })
    }

    /// The number from `start`: where it ends and, with `BUILD`, its node's tag and payload.
    fn number<const BUILD: bool>(&mut self, start: usize) -> Result<(usize, Tag, u64), ()> {
        let line = self.line;
        let negative = line.get(start) == Some(&b'-');
        let mut at = start + usize::from(negative);
        let integer_digits = match line.get(at) {
            Some(b'0') => {
                at += 1;
                if let Some(b'0'..=b'9') = line.get(at) {
                    return Err(()); // a leading zero
                }
                1
            }
            Some(b'1'..=b'9') => {
                let from = at;
                at = digits(line, at);
                at - from
            }
            _ => return Err(()),
        };
        let integer_end = at;
        let mut real = false;
        let mut exponent = false;
        if line.get(at) == Some(&b'.') {
            let from = at + 1;
            at = digits(line, from);
            if at == from {
                return Err(());
            }
            real = true;
        }
        if let Some(b'e' | b'E') = line.get(at) {
            at += 1;
            if let Some(b'+' | b'-') = line.get(at) {
                at += 1;
            }
            let from = at;
            at = digits(line, from);
            if at == from {
                return Err(());
            }
            real = true;
            exponent = true;
        }
        if !real {
            let digits = &line[integer_end - integer_digits..integer_end];
            if !fits_64_bits(digits, negative) {
                self.flags |= OVERSIZED;
                // orjson reads it as a double, and refuses one too large for that.
                if integer_digits > 300 && self.infinite(start, at) {
                    return Err(());
                }
            }
        } else if (exponent || integer_digits > 300) && self.infinite(start, at) {
            return Err(());
        }
        if !BUILD {
            return Ok((at, Tag::Null, 0));
        }
        let (tag, payload) = self.number_value(start, at, negative, real)?;
        Ok((at, tag, payload))
    }

    /// The number from `start` to `end` as serde_json reads it: a non-negative integer as a
    /// u64, a negative one as an i64, and `-0`, an integer beyond 64 bits and any number with a
    /// fraction or an exponent as the nearest double.
    fn number_value(
        &self,
        start: usize,
        end: usize,
        negative: bool,
        real: bool,
    ) -> Result<(Tag, u64), ()> {
        if !real {
            // Up to 19 digits always fit in a u64: summed digit by digit, without parsing text.
            let digits = self
                .line
                .get(start + usize::from(negative)..end)
                .ok_or(())?;
            if digits.len() <= 19 {
                let magnitude = digits
                    .iter()
                    .fold(0u64, |n, &digit| n * 10 + u64::from(digit - b'0'));
                if !negative {
                    return Ok((Tag::PosInt, magnitude));
                }
                // An i64 from -1 to its minimum, -2^63 (`-0` is a float, below); as its bits.
                if magnitude != 0 && magnitude <= 1 << 63 {
                    return Ok((Tag::NegInt, magnitude.wrapping_neg()));
                }
            } else if negative {
                if let Ok(value) = self.number_text(start, end)?.parse::<i64>() {
                    return Ok((Tag::NegInt, value as u64));
                }
            } else if let Ok(value) = self.number_text(start, end)?.parse::<u64>() {
                return Ok((Tag::PosInt, value));
            }
        }
        let value = self
            .number_text(start, end)?
            .parse::<f64>()
            .map_err(|_| ())?;
        Ok((Tag::Float, value.to_bits()))
    }

    /// The text of the number from `start` to `end`.
    fn number_text(&self, start: usize, end: usize) -> Result<&'a str, ()> {
        self.text.get(start..end).ok_or(())
    }

    /// Whether the number from `start` to `end` is infinite as a (correctly rounded) double.
    fn infinite(&self, start: usize, end: usize) -> bool {
        match self.number_text(start, end) {
            Ok(text) => text
                .parse::<f64>()
                .map_or(true, |value| value.is_infinite()),
            Err(()) => true,
        }
    }

    /// The key between `start` and `end` (escapes already checked), decoded onto the decoded
    /// text: a document's key, as its value's span (`member_key`), with no second decoding.
    fn decode_key(&mut self, start: usize, end: usize) -> Result<Key, ()> {
        let from = self.decoded.len();
        decode(self.line, start, end, &mut self.decoded)?;
        Ok(Key {
            start: from,
            end: self.decoded.len(),
            decoded: true,
            signature: signature(&self.decoded[from..]),
        })
    }
}

/// The string between `start` and `end` of `line` (its escapes already checked), decoded onto
/// `out`.
fn decode(line: &[u8], start: usize, end: usize, out: &mut Vec<u8>) -> Step {
    let unit =
        |at: usize| -> Result<u32, ()> { hex_value(line.get(at + 2..at + 6).ok_or(())?).ok_or(()) };
    let mut at = start;
    while at < end {
        let byte = line[at];
        if byte != b'\\' {
            // Up to the next escape at once.
            let next = backslash(&line[at..end]).map_or(end, |offset| at + offset);
            out.extend_from_slice(&line[at..next]);
            at = next;
            continue;
        }
        let kind = *line.get(at + 1).ok_or(())?;
        let simple = match kind {
            b'"' => Some(b'"'),
            b'\\' => Some(b'\\'),
            b'/' => Some(b'/'),
            b'b' => Some(0x08),
            b'f' => Some(0x0c),
            b'n' => Some(b'\n'),
            b'r' => Some(b'\r'),
            b't' => Some(b'\t'),
            _ => None,
        };
        if let Some(decoded) = simple {
            out.push(decoded);
            at += 2;
            continue;
        }
        let mut code = unit(at)?;
        at += 6;
        if (0xD800..=0xDBFF).contains(&code) {
            let low = unit(at)?;
            code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
            at += 6;
        }
        let character = char::from_u32(code).ok_or(())?;
        let mut buffer = [0u8; 4];
        out.extend_from_slice(character.encode_utf8(&mut buffer).as_bytes());
    }
    Ok(())
}

/// Where the first backslash of `bytes` is: eight bytes at a time, as `special_bytes` (a
/// decoded string's text between escapes is often long).
fn backslash(bytes: &[u8]) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    let (words, rest) = bytes.as_chunks::<8>();
    for (i, word) in words.iter().enumerate() {
        let x = u64::from_le_bytes(*word) ^ (ONES * b'\\' as u64);
        let found = x.wrapping_sub(ONES) & !x & HIGHS;
        if found != 0 {
            return Some(i * 8 + (found.trailing_zeros() / 8) as usize);
        }
    }
    let tail = rest.iter().position(|&b| b == b'\\')?;
    Some(words.len() * 8 + tail)
}

/// Whether the integer written with these digits (and sign) is an i64 or a u64.
fn fits_64_bits(digits: &[u8], negative: bool) -> bool {
    // JSON integers have no leading zero, so the length orders them.
    let limit: &[u8] = if negative {
        b"9223372036854775808"
    } else {
        b"18446744073709551615"
    };
    digits.len() < limit.len() || (digits.len() == limit.len() && digits <= limit)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The verdict on a line, which a document's scan (which reads keys from its members'
    /// nodes) must give too.
    fn verdict(line: &[u8]) -> u32 {
        let flags = scan(line);
        let text = std::str::from_utf8(line).expect("UTF-8");
        assert_eq!(scan_doc(text).0, flags, "{text}");
        flags
    }

    #[test]
    fn verdicts() {
        assert_eq!(scan(br#"{"a":1,"b":[1,2,{"c":null}]}"#), 0);
        assert_eq!(scan(br#"{"a":1,"a":2}"#), REPEATED);
        assert_eq!(scan(br#"{"a":1,"\u0061":2}"#), REPEATED);
        assert_eq!(scan(br#"{"a":{"b":1},"c":{"b":2}}"#), 0);
        assert_eq!(scan(b"18446744073709551615"), 0);
        assert_eq!(scan(b"18446744073709551616"), OVERSIZED);
        assert_eq!(scan(b"-9223372036854775808"), 0);
        assert_eq!(scan(b"-9223372036854775809"), OVERSIZED);
        assert_eq!(scan(b"1e400"), INVALID);
        assert_eq!(scan(b"1e-400"), 0);
        assert_eq!(scan(b"NaN"), INVALID);
        assert_eq!(scan(br#""\ud800""#), INVALID);
        assert_eq!(scan(br#""\ud800\udc00""#), 0);
        assert_eq!(scan(b"\"\xed\xa0\x80\""), INVALID);
        assert_eq!(scan(b""), INVALID);
        assert_eq!(scan(b"[1,]"), INVALID);
        assert_eq!(scan(b"01"), INVALID);
    }

    #[test]
    fn special_bytes_are_exact() {
        for byte in 0..=255u8 {
            for lane in 0..8 {
                let mut bytes = [b'a'; 8];
                bytes[lane] = byte;
                let expected = byte == b'"' || byte == b'\\' || byte < 0x20;
                let found = special_bytes(u64::from_le_bytes(bytes));
                assert_eq!(
                    found,
                    if expected { 0x80 << (8 * lane) } else { 0 },
                    "byte {byte:#x} lane {lane}"
                );
            }
        }
        assert_eq!(scan(b"\"abcdefgh\tij\""), INVALID);
        assert_eq!(scan(b"\"abcdefghijklmnop\\\"q\""), 0);
    }

    /// Over words of mixed bytes (several specials, bytes just around each class's bounds),
    /// the lowest bit `special_bytes` sets is the first special byte's, and none is set when no
    /// byte is special.
    #[test]
    fn special_bytes_find_the_first() {
        const BYTES: [u8; 12] = [
            b'"', b'\\', 0x00, 0x01, 0x1f, 0x20, 0x21, 0x23, 0x5b, 0x5d, 0x80, 0xff,
        ];
        let mut state = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..200_000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let bytes: [u8; 8] =
                std::array::from_fn(|i| BYTES[(state >> (5 * i)) as usize % BYTES.len()]);
            let first = bytes
                .iter()
                .position(|&byte| byte == b'"' || byte == b'\\' || byte < 0x20);
            let found = special_bytes(u64::from_le_bytes(bytes));
            let position = (found != 0).then(|| found.trailing_zeros() as usize / 8);
            assert_eq!(position, first, "{bytes:?}");
        }
    }

    #[test]
    fn backslash_is_the_first() {
        // None, or a first backslash at each position (another at the end), across words.
        for n in 0..40 {
            for at in 0..=n {
                let mut bytes = vec![b'a'; n];
                if at < n {
                    bytes[at] = b'\\';
                    bytes[n - 1] = b'\\';
                }
                let expected = bytes.iter().position(|&b| b == b'\\');
                assert_eq!(backslash(&bytes), expected, "{n} bytes, {at}");
            }
        }
    }

    #[test]
    fn line_signature_is_signature() {
        let line = br#"{"a":1,"abcdefg":2,"abcdefgh":3,"":4,"abcdefghijklmnop":5,"x"#;
        for start in 0..line.len() {
            for end in start..=line.len() {
                assert_eq!(
                    line_signature(line, start, end),
                    signature(&line[start..end]),
                    "{start}..{end}"
                );
            }
        }
    }

    #[test]
    fn integers_read_as_serde_json_reads_them() {
        for text in [
            "0",
            "-0",
            "7",
            "-7",
            "9999999999999999999",
            "-999999999999999999",
            "-9223372036854775808",
            "-9223372036854775809",
            "9223372036854775808",
            "18446744073709551615",
            "10000000000000000000",
            "-1000000000000000000",
        ] {
            // An integer beyond 64 bits is OVERSIZED: no document.
            let (flags, doc) = scan_doc(text);
            let Some(doc) = doc else {
                assert_eq!(flags, OVERSIZED, "{text}");
                continue;
            };
            let expected: serde_json::Value = serde_json::from_str(text).expect("JSON");
            assert_eq!(
                doc.root().to_serde().to_string(),
                expected.to_string(),
                "{text}"
            );
            assert_eq!(doc.root().to_serde(), expected, "{text}");
        }
    }

    #[test]
    fn depth() {
        let ok = [b"[".repeat(1024), b"]".repeat(1024)].concat();
        assert_eq!(scan(&ok), 0);
        let deep = [b"[".repeat(1025), b"]".repeat(1025)].concat();
        assert_eq!(scan(&deep), INVALID);
    }

    #[test]
    fn many_keys() {
        let members: Vec<String> = (0..100).map(|i| format!("\"k{i}\":{i}")).collect();
        assert_eq!(verdict(format!("{{{}}}", members.join(",")).as_bytes()), 0);
        assert_eq!(
            verdict(format!("{{{},\"k7\":0}}", members.join(",")).as_bytes()),
            REPEATED
        );
    }

    #[test]
    fn keys_alike_in_length_and_first_bytes_are_told_apart() {
        // Same length and first seven bytes (one signature), pairwise and sorted; a key
        // written with an escape is the same key as the one written without.
        for count in [3, 40] {
            let members: Vec<String> = (0..count)
                .map(|i| format!("\"model_call_{i:03}\":{i}"))
                .collect();
            let object = members.join(",");
            assert_eq!(
                verdict(format!("{{{object}}}").as_bytes()),
                0,
                "{count} keys"
            );
            for repeated in ["\"model_call_001\"", "\"model_call_\\u0030\\u00301\""] {
                assert_eq!(
                    verdict(format!("{{{object},{repeated}:0}}").as_bytes()),
                    REPEATED,
                    "{count} keys and {repeated}"
                );
            }
            assert_eq!(
                verdict(format!("{{{object},\"model_call_999\":0}}").as_bytes()),
                0
            );
        }
        assert_eq!(verdict(br#"{"":1,"a":2,"":3}"#), REPEATED);
        assert_eq!(verdict(br#"{"abcdefgh":1,"abcdefgi":2}"#), 0);
    }

    /// A key repeated at any position of an object is found, whether its keys are compared as
    /// they are read (up to `PAIRWISE_KEYS`) or sorted when it closes.
    #[test]
    fn repeated_keys_are_found_at_every_position() {
        let object = |keys: &[String]| {
            let members: Vec<String> = keys.iter().map(|key| format!("\"{key}\":0")).collect();
            format!("{{{}}}", members.join(","))
        };
        for count in 1..=PAIRWISE_KEYS + 2 {
            let keys: Vec<String> = (0..count).map(|i| format!("key{i}")).collect();
            assert_eq!(verdict(object(&keys).as_bytes()), 0, "{count} keys");
            for first in 0..count {
                for at in first + 1..=count {
                    let mut repeated = keys.clone();
                    repeated.insert(at, keys[first].clone());
                    assert_eq!(
                        verdict(object(&repeated).as_bytes()),
                        REPEATED,
                        "{repeated:?}"
                    );
                }
            }
        }
    }

    /// Keys whose bits in `Open::seen` are the same are compared, and told apart.
    #[test]
    fn keys_of_one_seen_bit_are_told_apart() {
        let bit = |key: &str| seen_bit(signature(key.as_bytes()));
        let keys: Vec<String> = (0..100_000)
            .map(|i| format!("k{i}"))
            .filter(|key| bit(key) == bit("k0"))
            .take(PAIRWISE_KEYS)
            .collect();
        assert_eq!(keys.len(), PAIRWISE_KEYS);
        let members: Vec<String> = keys.iter().map(|key| format!("\"{key}\":0")).collect();
        assert_eq!(verdict(format!("{{{}}}", members.join(",")).as_bytes()), 0);
        // The first key again, as the last of `PAIRWISE_KEYS`.
        let first = &keys[0];
        let repeated = format!(
            "{{{},\"{first}\":1}}",
            members[..PAIRWISE_KEYS - 1].join(",")
        );
        assert_eq!(verdict(repeated.as_bytes()), REPEATED);
    }

    /// Each object's keys are its own: the same key in an object and in one nested in it, or in
    /// two sibling objects, is no repeat, and a key repeated around a nested object is.
    #[test]
    fn keys_of_nested_objects_are_apart() {
        assert_eq!(verdict(br#"{"a":{"a":1},"b":{"a":2,"b":3}}"#), 0);
        assert_eq!(verdict(br#"[{"a":1},{"a":1}]"#), 0);
        assert_eq!(verdict(br#"{"a":{"b":1},"b":2}"#), 0);
        assert_eq!(verdict(br#"{"a":{"b":1},"b":2,"a":3}"#), REPEATED);
        assert_eq!(verdict(br#"{"a":[{"a":1}],"a":2}"#), REPEATED);
        assert_eq!(verdict(br#"{"a":{"b":{"c":1,"c":2}}}"#), REPEATED);
        // A key with an escape, decoded, against one without, each first or second.
        assert_eq!(
            verdict(br#"{"x":[1,{"a":2}],"\u0061b":{"ab":3},"ab":4}"#),
            REPEATED
        );
        assert_eq!(verdict(br#"{"ab":{"a\u0062":1},"a\u0062":2}"#), REPEATED);
        assert_eq!(verdict(br#"{"\n":1,"n":2,"\\n":3}"#), 0);
    }

    /// A container's node counts its members, ends past its descendants and spans its text, at
    /// any depth and when empty.
    #[test]
    fn containers_count_their_members() {
        let text = r#"{"a":[1,[],{},[2,3]],"b":{"c":{"d":null}},"e":[],"f":"x"}"#;
        let (flags, doc) = scan_doc(text);
        assert_eq!(flags, 0);
        let doc = doc.expect("a document");
        let mut containers = 0;
        for (index, node) in doc.nodes.iter().enumerate() {
            let (opening, closing) = match node.tag {
                Tag::Object => (b'{', b'}'),
                Tag::Array => (b'[', b']'),
                _ => {
                    assert_eq!(node.after as usize, index + 1);
                    continue;
                }
            };
            containers += 1;
            let mut members = 0;
            let mut member = index + 1;
            while member < node.after as usize {
                member = doc.nodes[member].after as usize;
                members += 1;
            }
            assert_eq!(member, node.after as usize, "node {index}");
            assert_eq!(
                node.payload,
                u64::from(node.after) << 32 | members,
                "node {index}"
            );
            assert_eq!(text.as_bytes()[node.start as usize], opening);
            assert_eq!(text.as_bytes()[node.end as usize - 1], closing);
        }
        assert_eq!(containers, 8);
        assert_eq!(doc.nodes[0].payload & 0xffff_ffff, 4);
        assert_eq!(doc.nodes[0].after as usize, doc.nodes.len());
    }
}
