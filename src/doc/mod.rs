//! A parsed line as the families read it: a flat array of nodes built by the strict scanner in
//! the same pass that decides the line is strict JSON (`strict::scan_doc`).
//!
//! serde_json's `Value` costs one allocation per string, key, array and object and a hash table
//! per object; building it was most of the core's time on a row. Here a row is one vector of
//! fixed-size nodes: strings and keys point into the line (or, when they hold an escape, into
//! one buffer of decoded text), a container records where its descendants end, so its members
//! are walked in order by skipping, never looked up in a table. Rows' objects are small: a
//! lookup by key is a scan of the members, as a `preserve_order` map would do for them anyway.
//!
//! Every value reads as serde_json's `Value` of the same text reads (`Value::to_serde`, which the
//! tests compare on every corpus line): keys in order, strings decoded, numbers of the same kind
//! and bits (a non-negative integer is a `u64`, a negative one an `i64`, `-0` and every number
//! with a fraction or exponent a correctly rounded `f64`).

use serde_json::Map;

pub mod schema;

/// What a node is, and how its payload reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Tag {
    Null,
    False,
    True,
    /// payload: the u64.
    PosInt,
    /// payload: the i64's bits.
    NegInt,
    /// payload: the f64's bits.
    Float,
    /// payload: `Span` bits.
    Str,
    /// payload: (index past its last descendant) << 32 | number of elements.
    Array,
    /// payload: (index past its last descendant) << 32 | number of members.
    Object,
}

/// Bytes of a string: in the line, or (high bit of `len`) in the decoded buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub(crate) struct Span {
    pub(crate) start: u32,
    pub(crate) len: u32,
}

pub(crate) const DECODED: u32 = 1 << 31;

impl Span {
    pub(crate) fn bits(self) -> u64 {
        (u64::from(self.start) << 32) | u64::from(self.len)
    }

    fn from_bits(bits: u64) -> Span {
        Span {
            start: (bits >> 32) as u32,
            len: bits as u32,
        }
    }
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct Node {
    pub(crate) tag: Tag,
    /// The key of an object's member (unused elsewhere).
    pub(crate) key: Span,
    pub(crate) payload: u64,
    /// Where the value is written in the line: `raw` reads it back exactly as written.
    pub(crate) start: u32,
    pub(crate) end: u32,
    /// The index past the node and its descendants (where its next sibling is): a walk over
    /// an object's members skips each with one load and no test of its kind. It takes room the
    /// node had as padding.
    pub(crate) after: u32,
}

/// One parsed line.
pub struct Doc<'a> {
    pub(crate) text: &'a str,
    pub(crate) nodes: Vec<Node>,
    pub(crate) decoded: String,
}

impl<'a> Doc<'a> {
    /// The document's top value.
    pub fn root(&self) -> Value<'_> {
        Value { doc: self, at: 0 }
    }

    fn str_of(&self, span: Span) -> &str {
        let (source, len) = if span.len & DECODED != 0 {
            (self.decoded.as_str(), span.len & !DECODED)
        } else {
            (self.text, span.len)
        };
        let start = span.start as usize;
        source.get(start..start + len as usize).unwrap_or("")
    }

    /// Whether the key at `span` is `wanted`.
    fn key_is(&self, span: Span, wanted: &[u8]) -> bool {
        if (span.len & !DECODED) as usize != wanted.len() {
            return false;
        }
        let source = if span.len & DECODED != 0 {
            self.decoded.as_bytes()
        } else {
            self.text.as_bytes()
        };
        let start = span.start as usize;
        source
            .get(start..start + wanted.len())
            .is_some_and(|key| same_bytes(key, wanted))
    }

    fn node(&self, at: u32) -> &Node {
        &self.nodes[at as usize]
    }

    /// The index past node `at` and its descendants.
    fn after(&self, at: u32) -> u32 {
        self.node(at).after
    }
}

/// Whether two slices of the same length hold the same bytes. Keys are short: up to 16 bytes
/// they are compared as two words, which a call to `memcmp` costs several times over.
#[inline]
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    if n < 8 {
        return a.iter().zip(b).fold(0, |diff, (x, y)| diff | (x ^ y)) == 0;
    }
    if n > 16 {
        return a == b;
    }
    let word = |s: &[u8], at: usize| {
        s.get(at..at + 8)
            .map(|w| u64::from_le_bytes(w.try_into().unwrap_or([0; 8])))
    };
    word(a, 0) == word(b, 0) && word(a, n - 8) == word(b, n - 8)
}

/// A JSON number, as serde_json's `Number` holds it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Number {
    PosInt(u64),
    NegInt(i64),
    Float(f64),
}

impl Number {
    pub fn as_u64(self) -> Option<u64> {
        match self {
            Number::PosInt(n) => Some(n),
            _ => None,
        }
    }

    pub fn as_i64(self) -> Option<i64> {
        match self {
            Number::PosInt(n) => i64::try_from(n).ok(),
            Number::NegInt(n) => Some(n),
            Number::Float(_) => None,
        }
    }

    pub fn as_f64(self) -> Option<f64> {
        Some(match self {
            Number::PosInt(n) => n as f64,
            Number::NegInt(n) => n as f64,
            Number::Float(x) => x,
        })
    }

    pub fn is_u64(self) -> bool {
        matches!(self, Number::PosInt(_))
    }

    pub fn is_i64(self) -> bool {
        self.as_i64().is_some()
    }

    pub fn is_f64(self) -> bool {
        matches!(self, Number::Float(_))
    }

    pub fn to_serde(self) -> serde_json::Number {
        match self {
            Number::PosInt(n) => n.into(),
            Number::NegInt(n) => n.into(),
            // Finite by construction (the scanner refuses a number infinite as a double).
            Number::Float(x) => serde_json::Number::from_f64(x).unwrap_or_else(|| 0.into()),
        }
    }
}

/// A value of a document (a cheap handle: copy it freely).
#[derive(Clone, Copy)]
pub struct Value<'d> {
    pub(crate) doc: &'d Doc<'d>,
    pub(crate) at: u32,
}

/// What a value is, for a `match` (serde_json's `Value` variants, borrowed).
#[derive(Clone, Copy)]
pub enum Json<'d> {
    Null,
    Bool(bool),
    Number(Number),
    String(&'d str),
    Array(Array<'d>),
    Object(Object<'d>),
}

impl<'d> Value<'d> {
    fn node(self) -> &'d Node {
        self.doc.node(self.at)
    }

    pub fn view(self) -> Json<'d> {
        let node = self.node();
        match node.tag {
            Tag::Null => Json::Null,
            Tag::False => Json::Bool(false),
            Tag::True => Json::Bool(true),
            Tag::PosInt | Tag::NegInt | Tag::Float => Json::Number(self.number_of(node)),
            Tag::Str => Json::String(self.doc.str_of(Span::from_bits(node.payload))),
            Tag::Array => Json::Array(Array {
                doc: self.doc,
                at: self.at,
            }),
            Tag::Object => Json::Object(Object {
                doc: self.doc,
                at: self.at,
            }),
        }
    }

    fn number_of(self, node: &Node) -> Number {
        match node.tag {
            Tag::PosInt => Number::PosInt(node.payload),
            Tag::NegInt => Number::NegInt(node.payload as i64),
            _ => Number::Float(f64::from_bits(node.payload)),
        }
    }

    pub fn is_null(self) -> bool {
        self.node().tag == Tag::Null
    }

    pub fn as_bool(self) -> Option<bool> {
        match self.node().tag {
            Tag::True => Some(true),
            Tag::False => Some(false),
            _ => None,
        }
    }

    pub fn is_boolean(self) -> bool {
        self.as_bool().is_some()
    }

    pub fn as_str(self) -> Option<&'d str> {
        let node = self.node();
        (node.tag == Tag::Str).then(|| self.doc.str_of(Span::from_bits(node.payload)))
    }

    pub fn is_string(self) -> bool {
        self.node().tag == Tag::Str
    }

    pub fn as_number(self) -> Option<Number> {
        let node = self.node();
        matches!(node.tag, Tag::PosInt | Tag::NegInt | Tag::Float).then(|| self.number_of(node))
    }

    pub fn is_number(self) -> bool {
        self.as_number().is_some()
    }

    pub fn as_u64(self) -> Option<u64> {
        self.as_number().and_then(Number::as_u64)
    }

    pub fn as_i64(self) -> Option<i64> {
        self.as_number().and_then(Number::as_i64)
    }

    pub fn as_f64(self) -> Option<f64> {
        self.as_number().and_then(Number::as_f64)
    }

    pub fn is_u64(self) -> bool {
        self.as_number().is_some_and(Number::is_u64)
    }

    pub fn is_i64(self) -> bool {
        self.as_number().is_some_and(Number::is_i64)
    }

    pub fn is_f64(self) -> bool {
        self.as_number().is_some_and(Number::is_f64)
    }

    pub fn as_array(self) -> Option<Array<'d>> {
        (self.node().tag == Tag::Array).then_some(Array {
            doc: self.doc,
            at: self.at,
        })
    }

    pub fn is_array(self) -> bool {
        self.node().tag == Tag::Array
    }

    pub fn as_object(self) -> Option<Object<'d>> {
        (self.node().tag == Tag::Object).then_some(Object {
            doc: self.doc,
            at: self.at,
        })
    }

    pub fn is_object(self) -> bool {
        self.node().tag == Tag::Object
    }

    /// The member `key` of an object (None for any other value), as serde_json's `get`.
    pub fn get(self, key: &str) -> Option<Value<'d>> {
        self.as_object()?.get(key)
    }

    /// The value's text exactly as the line writes it.
    pub fn raw(self) -> &'d str {
        let node = self.node();
        self.doc
            .text
            .get(node.start as usize..node.end as usize)
            .unwrap_or("")
    }

    /// Where the value is in the document (unique among its values).
    pub fn index(self) -> u32 {
        self.at
    }

    /// serde_json's `Value` of the same text (for the tests, and the schema validator's
    /// error paths).
    pub fn to_serde(self) -> serde_json::Value {
        match self.view() {
            Json::Null => serde_json::Value::Null,
            Json::Bool(b) => serde_json::Value::Bool(b),
            Json::Number(n) => serde_json::Value::Number(n.to_serde()),
            Json::String(s) => serde_json::Value::String(s.to_owned()),
            Json::Array(items) => {
                serde_json::Value::Array(items.iter().map(Value::to_serde).collect())
            }
            Json::Object(members) => {
                let mut map = Map::with_capacity(members.len());
                for (key, value) in members.iter() {
                    map.insert(key.to_owned(), value.to_serde());
                }
                serde_json::Value::Object(map)
            }
        }
    }
}

impl std::fmt::Debug for Value<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.raw())
    }
}

/// Two values are equal when they hold the same JSON (serde_json's `Value` equality: numbers of
/// the same kind and value, keys in any order).
impl PartialEq for Value<'_> {
    fn eq(&self, other: &Self) -> bool {
        match (self.view(), other.view()) {
            (Json::Null, Json::Null) => true,
            (Json::Bool(a), Json::Bool(b)) => a == b,
            (Json::Number(a), Json::Number(b)) => a == b,
            (Json::String(a), Json::String(b)) => a == b,
            (Json::Array(a), Json::Array(b)) => {
                a.len() == b.len() && a.iter().zip(b.iter()).all(|(x, y)| x == y)
            }
            (Json::Object(a), Json::Object(b)) => {
                a.len() == b.len() && a.iter().all(|(key, x)| b.get(key).is_some_and(|y| x == y))
            }
            _ => false,
        }
    }
}

/// An array of a document.
#[derive(Clone, Copy)]
pub struct Array<'d> {
    doc: &'d Doc<'d>,
    at: u32,
}

impl<'d> Array<'d> {
    pub fn len(self) -> usize {
        (self.doc.node(self.at).payload & 0xffff_ffff) as usize
    }

    pub fn is_empty(self) -> bool {
        self.len() == 0
    }

    pub fn iter(self) -> Children<'d> {
        Children::of(self.doc, self.at)
    }

    /// The element at `index` (a walk: collect the elements when reading many by position).
    pub fn get(self, index: usize) -> Option<Value<'d>> {
        self.iter().nth(index)
    }

    pub fn first(self) -> Option<Value<'d>> {
        self.iter().next()
    }

    pub fn as_value(self) -> Value<'d> {
        Value {
            doc: self.doc,
            at: self.at,
        }
    }
}

impl<'d> IntoIterator for Array<'d> {
    type Item = Value<'d>;
    type IntoIter = Children<'d>;

    fn into_iter(self) -> Children<'d> {
        self.iter()
    }
}

/// An object of a document, its members in the order the line writes them.
#[derive(Clone, Copy)]
pub struct Object<'d> {
    doc: &'d Doc<'d>,
    at: u32,
}

impl<'d> Object<'d> {
    pub fn len(self) -> usize {
        (self.doc.node(self.at).payload & 0xffff_ffff) as usize
    }

    pub fn is_empty(self) -> bool {
        self.len() == 0
    }

    pub fn get(self, key: &str) -> Option<Value<'d>> {
        // The lookup every family makes most: compared by length first, then as bytes, so that a
        // member whose key cannot match costs no slicing of the text.
        let doc = self.doc;
        let wanted = key.as_bytes();
        let nodes = doc.nodes.as_slice();
        let object = nodes.get(self.at as usize)?;
        // The members are the nodes from the one after the object's to the end of its
        // descendants, each followed by its own descendants, which its `after` skips.
        let end = (object.after as usize).min(nodes.len());
        let mut at = self.at as usize + 1;
        while at < end {
            let node = &nodes[at];
            if doc.key_is(node.key, wanted) {
                return Some(Value { doc, at: at as u32 });
            }
            // Always forward, whatever a node says.
            at = (node.after as usize).max(at + 1);
        }
        None
    }

    pub fn contains_key(self, key: &str) -> bool {
        self.get(key).is_some()
    }

    pub fn iter(self) -> Members<'d> {
        Members(Children::of(self.doc, self.at))
    }

    pub fn keys(self) -> impl Iterator<Item = &'d str> {
        self.iter().map(|(key, _)| key)
    }

    pub fn values(self) -> Children<'d> {
        Children::of(self.doc, self.at)
    }

    pub fn as_value(self) -> Value<'d> {
        Value {
            doc: self.doc,
            at: self.at,
        }
    }
}

impl<'d> IntoIterator for Object<'d> {
    type Item = (&'d str, Value<'d>);
    type IntoIter = Members<'d>;

    fn into_iter(self) -> Members<'d> {
        self.iter()
    }
}

/// The elements of an array, or the values of an object's members, in order.
#[derive(Clone)]
pub struct Children<'d> {
    doc: Option<&'d Doc<'d>>,
    next: u32,
    end: u32,
    left: usize,
}

impl<'d> Children<'d> {
    const EMPTY: Children<'static> = Children {
        doc: None,
        next: 0,
        end: 0,
        left: 0,
    };

    fn of(doc: &'d Doc<'d>, at: u32) -> Self {
        let node = doc.node(at);
        Children {
            doc: Some(doc),
            next: at + 1,
            end: (node.payload >> 32) as u32,
            left: (node.payload & 0xffff_ffff) as usize,
        }
    }
}

impl<'d> Iterator for Children<'d> {
    type Item = Value<'d>;

    fn next(&mut self) -> Option<Value<'d>> {
        let doc = self.doc?;
        if self.next >= self.end || self.left == 0 {
            return None;
        }
        let at = self.next;
        self.next = doc.after(at);
        self.left -= 1;
        Some(Value { doc, at })
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl ExactSizeIterator for Children<'_> {}

/// The members of an object: (key, value), in order.
#[derive(Clone)]
pub struct Members<'d>(Children<'d>);

impl<'d> Iterator for Members<'d> {
    type Item = (&'d str, Value<'d>);

    fn next(&mut self) -> Option<(&'d str, Value<'d>)> {
        let value = self.0.next()?;
        let key = value.doc.str_of(value.node().key);
        Some((key, value))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.0.size_hint()
    }
}

impl ExactSizeIterator for Members<'_> {}

/// The elements of an optional array: none when absent or not an array, as the families read
/// lists (`list` of Python's `x or []`, for the shapes they model).
pub fn items(value: Option<Value<'_>>) -> Children<'_> {
    match value.and_then(Value::as_array) {
        Some(array) => array.iter(),
        None => Children::EMPTY,
    }
}

#[cfg(test)]
mod tests {
    use crate::strict::{scan_doc, DOC_DEPTH};
    use crate::value;

    /// The document reads as serde_json reads the text: same values, same key order, same
    /// number kinds and bits (the text of each serializes identically).
    fn agrees(text: &str) {
        let (flags, doc) = scan_doc(text);
        let serde = value::from_str(text);
        match (flags, doc, serde) {
            (0, Some(doc), Ok(expected)) => {
                let found = doc.root().to_serde();
                assert_eq!(found.to_string(), expected.to_string(), "{text}");
                assert_eq!(found, expected);
                assert_eq!(doc.root().raw(), text.trim_matches([' ', '\t', '\n', '\r']));
            }
            (0, None, Err(_)) => {} // nests deeper than serde_json reads
            (flags, None, _) if flags != 0 => {}
            (flags, doc, serde) => panic!(
                "{text}: flags {flags}, doc {}, serde {}",
                doc.is_some(),
                serde.is_ok()
            ),
        }
    }

    #[test]
    fn reads_as_serde_json_reads() {
        for text in [
            r#"{"b":1,"a":[1,-1,-0,0.1,1e300,18446744073709551615,-9223372036854775808,2.5e-324],"c":{}}"#,
            r#"{"z":{"y":{"x":[[],[{}],[null,true,false,"\u00e9\n\"",""]]}},"a":"plain","é":"ü"}"#,
            r#"[1,2,{"k":[3,4,{"k":[5]}]}]"#,
            r#""a string""#,
            "123.456e7",
            " {\"a\" : [ 1 , 2 ] , \"b\" : { } } ",
            r#"{"\ud83e\udd80":"\ud83e\udd80 \/ \b\f\n\r\t","k\u0000":"x"}"#,
            "-0.0",
            "-0",
            "0",
            "1E2",
            "1e-400",
            "9223372036854775807",
            "9223372036854775808",
            "-9223372036854775809",
            "18446744073709551616",
            "0.1000000000000000055511151231257827021181583404541015625",
            "2.2250738585072011e-308",
            "[]",
            "{}",
            "[[],{},[{}]]",
        ] {
            agrees(text);
        }
    }

    #[test]
    fn depth_is_serde_jsons() {
        for depth in [DOC_DEPTH - 2, DOC_DEPTH - 1, DOC_DEPTH, DOC_DEPTH + 1] {
            let arrays = ["[".repeat(depth), "]".repeat(depth)].concat();
            agrees(&arrays);
            let objects = [r#"{"a":"#.repeat(depth), "1".into(), "}".repeat(depth)].concat();
            agrees(&objects);
            let empty = ["[".repeat(depth - 1), "{}".into(), "]".repeat(depth - 1)].concat();
            agrees(&empty);
        }
    }

    #[test]
    fn a_node_is_32_bytes() {
        // `row::MAX_PROVED_LINE` bounds a document's memory by this.
        assert_eq!(std::mem::size_of::<super::Node>(), 32);
    }

    #[test]
    fn accessors() {
        let text = r#"{"a":[1,{"b":null}],"c":"d","e":-2,"f":2.5,"g":true}"#;
        let (_, doc) = scan_doc(text);
        let doc = doc.expect("a document");
        let root = doc.root();
        let a = root.get("a").and_then(|v| v.as_array()).expect("an array");
        assert_eq!(a.len(), 2);
        assert_eq!(a.get(0).and_then(|v| v.as_u64()), Some(1));
        assert!(a
            .get(1)
            .and_then(|v| v.get("b"))
            .is_some_and(|v| v.is_null()));
        assert!(a.get(2).is_none());
        assert_eq!(root.get("c").and_then(|v| v.as_str()), Some("d"));
        assert_eq!(root.get("e").and_then(|v| v.as_i64()), Some(-2));
        assert_eq!(root.get("e").and_then(|v| v.as_u64()), None);
        assert_eq!(root.get("f").and_then(|v| v.as_f64()), Some(2.5));
        assert_eq!(root.get("g").and_then(|v| v.as_bool()), Some(true));
        assert!(root.get("missing").is_none());
        let keys: Vec<&str> = root.as_object().expect("an object").keys().collect();
        assert_eq!(keys, ["a", "c", "e", "f", "g"]);
        assert_eq!(root.get("a").map(|v| v.raw()), Some(r#"[1,{"b":null}]"#));
    }

    /// Every line of the repository's corpora.
    #[test]
    fn corpora() {
        let lines = crate::corpus::lines();
        for text in &lines {
            agrees(text);
        }
        assert!(lines.len() > 100, "{} corpus lines", lines.len());
    }

    #[test]
    fn same_bytes_is_slice_equality() {
        for n in 0..40usize {
            let a: Vec<u8> = (0..n).map(|i| b'a' + (i % 26) as u8).collect();
            assert!(super::same_bytes(&a, &a.clone()), "{n} bytes");
            for at in 0..n {
                let mut b = a.clone();
                b[at] ^= 0x20;
                assert!(!super::same_bytes(&a, &b), "{n} bytes, differing at {at}");
            }
            assert!(!super::same_bytes(&a, &a[..n.saturating_sub(1)]) || n == 0);
        }
    }
}
