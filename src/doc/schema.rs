//! The document as a representation the `jsonschema` crate validates (its `json::Json` traits),
//! so the schema family validates a line's document in place, with the same compiled schemas
//! and keywords as for serde_json's `Value`, and no `Value` is built.
//!
//! Each accessor answers as the crate's own serde_json representation answers for the `Value`
//! of the same text: the tests validate both on every corpus line and compare.

use std::borrow::Cow;

use jsonschema::json::{
    cmp, Array as SchemaArray, Json, JsonNumber, Node, NodeIdentity, Object as SchemaObject,
};
use jsonschema::JsonType;
use serde_json::Value as Serde;

use super::{
    Array, Children, Doc, Json as View, Members, Number, Object, Span, Tag, Value, DECODED,
};

/// The document representation, for `jsonschema::options_for::<DocJson>()`.
pub struct DocJson;

impl Json for DocJson {
    type Node<'a> = Value<'a>;
    type PreparedKey = String;
    type StringBuffer = ();

    // A lookup scans the members, so one pass over them is never dearer than a few lookups.
    const KEYS_PER_LOOKUP: usize = 2;
    // A node's descendants follow it in the document: none is its own descendant.
    const ACYCLIC: bool = true;

    fn prepare_key(key: &str) -> String {
        key.to_owned()
    }

    fn with_string_node<T>((): &mut (), string: &str, f: impl FnOnce(Value<'_>) -> T) -> T {
        let doc = Doc {
            text: "",
            nodes: vec![super::Node {
                tag: Tag::Str,
                key: Span::default(),
                payload: Span {
                    start: 0,
                    len: string.len() as u32 | DECODED,
                }
                .bits(),
                start: 0,
                end: 0,
                after: 1,
            }],
            decoded: string.to_owned(),
        };
        f(doc.root())
    }
}

impl JsonNumber for Number {
    fn as_u64(&self) -> Option<u64> {
        Number::as_u64(*self)
    }

    fn as_i64(&self) -> Option<i64> {
        Number::as_i64(*self)
    }

    fn as_f64(&self) -> Option<f64> {
        Number::as_f64(*self)
    }

    fn as_str(&self) -> Cow<'_, str> {
        Cow::Owned(self.to_serde().to_string())
    }

    fn to_number(&self) -> Cow<'_, serde_json::Number> {
        Cow::Owned(self.to_serde())
    }

    fn is_integer(&self) -> bool {
        match *self {
            Number::PosInt(_) | Number::NegInt(_) => true,
            Number::Float(x) => x.fract() == 0.0,
        }
    }
}

impl<'a> Node<'a, DocJson> for Value<'a> {
    type Object = Object<'a>;
    type Array = Array<'a>;
    type Number = Number;

    fn as_object(&self) -> Option<Object<'a>> {
        Value::as_object(*self)
    }

    fn as_array(&self) -> Option<Array<'a>> {
        Value::as_array(*self)
    }

    fn as_string(&self) -> Option<Cow<'a, str>> {
        Value::as_str(*self).map(Cow::Borrowed)
    }

    fn as_number(&self) -> Option<Number> {
        Value::as_number(*self)
    }

    fn as_boolean(&self) -> Option<bool> {
        Value::as_bool(*self)
    }

    fn is_null(&self) -> bool {
        Value::is_null(*self)
    }

    fn json_type(&self) -> JsonType {
        match self.view() {
            View::Null => JsonType::Null,
            View::Bool(_) => JsonType::Boolean,
            View::Number(_) => JsonType::Number,
            View::String(_) => JsonType::String,
            View::Array(_) => JsonType::Array,
            View::Object(_) => JsonType::Object,
        }
    }

    fn string_length(&self) -> Option<u64> {
        Value::as_str(*self).map(|s| s.chars().count() as u64)
    }

    fn equals_value(&self, expected: &Serde) -> bool {
        equals(*self, expected)
    }

    fn to_value(&self) -> Cow<'a, Serde> {
        Cow::Owned(self.to_serde())
    }

    fn identity(&self) -> Option<NodeIdentity> {
        Some(NodeIdentity::tagged(
            std::ptr::from_ref(self.doc) as usize,
            self.at,
        ))
    }
}

/// JSON Schema equality (`const`, `enum`): numbers compare mathematically, keys in any order.
fn equals(value: Value<'_>, expected: &Serde) -> bool {
    match (value.view(), expected) {
        (View::Null, Serde::Null) => true,
        (View::Bool(a), Serde::Bool(b)) => a == *b,
        (View::String(a), Serde::String(b)) => a == b,
        (View::Number(a), Serde::Number(b)) => cmp::equal_numbers(&a, b),
        (View::Array(a), Serde::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| equals(x, y))
        }
        (View::Object(a), Serde::Object(b)) => {
            a.len() == b.len()
                && b.iter()
                    .all(|(key, y)| a.get(key).is_some_and(|x| equals(x, y)))
        }
        _ => false,
    }
}

impl<'a> SchemaObject<'a, DocJson> for Object<'a> {
    type Node = Value<'a>;
    type MemberName = &'a str;
    type MembersIter = Members<'a>;

    fn len(&self) -> usize {
        Object::len(*self)
    }

    fn get(&self, key: &String) -> Option<Value<'a>> {
        Object::get(*self, key)
    }

    fn members(&self) -> Members<'a> {
        self.iter()
    }
}

impl<'a> SchemaArray<'a, DocJson> for Array<'a> {
    type Node = Value<'a>;
    type ElementsIter = Children<'a>;

    fn len(&self) -> usize {
        Array::len(*self)
    }

    fn elements(&self) -> Children<'a> {
        self.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::families::schema::DOCUMENTS;
    use crate::strict::scan_doc;
    use jsonschema::{Registry, Validator};

    /// Every packaged schema, and each of its `$defs`, compiled for both representations.
    fn validators() -> Vec<(String, Validator, Validator<DocJson>)> {
        let mut documents = Vec::new();
        for (_, text) in DOCUMENTS {
            let document: Serde = serde_json::from_str(text).expect("a schema");
            let uri = document["$id"].as_str().expect("an $id").to_owned();
            documents.push((uri, document));
        }
        let registry = Registry::new()
            .extend(documents.clone())
            .expect("a registry")
            .prepare()
            .expect("a prepared registry");
        let mut schemas = Vec::new();
        for (uri, document) in &documents {
            schemas.push((uri.clone(), document.clone()));
            if let Some(defs) = document.get("$defs").and_then(Serde::as_object) {
                for name in defs.keys() {
                    schemas.push((
                        format!("{uri}#/$defs/{name}"),
                        serde_json::json!({
                            "$schema": "https://json-schema.org/draft/2020-12/schema",
                            "$ref": format!("{uri}#/$defs/{name}"),
                        }),
                    ));
                }
            }
        }
        schemas
            .into_iter()
            .map(|(name, schema)| {
                let serde = jsonschema::options()
                    .with_registry(&registry)
                    .offline()
                    .build(&schema)
                    .expect("a validator");
                let doc = jsonschema::options_for::<DocJson>()
                    .with_registry(&registry)
                    .offline()
                    .build(&schema)
                    .expect("a validator");
                (name, serde, doc)
            })
            .collect()
    }

    /// Each schema gives the same verdict on a document's every value as on serde_json's
    /// `Value` of it.
    fn agree(validators: &[(String, Validator, Validator<DocJson>)], text: &str) -> usize {
        let (_, Some(doc)) = scan_doc(text) else {
            return 0;
        };
        let mut compared = 0;
        let mut pending = vec![doc.root()];
        while let Some(value) = pending.pop() {
            let serde = value.to_serde();
            for (name, by_serde, by_doc) in validators {
                assert_eq!(
                    by_doc.is_valid(value),
                    by_serde.is_valid(&serde),
                    "{name} on {}",
                    value.raw()
                );
                compared += 1;
            }
            match value.view() {
                View::Array(items) => pending.extend(items.iter()),
                View::Object(members) => pending.extend(members.values()),
                _ => {}
            }
        }
        compared
    }

    #[test]
    fn verdicts_are_serde_jsons_on_the_corpora() {
        let validators = validators();
        let mut compared = 0;
        for text in crate::corpus::lines() {
            compared += agree(&validators, &text);
        }
        assert!(compared > 10_000, "{compared} verdicts compared");
    }

    #[test]
    fn equality_is_json_schemas() {
        for (text, expected, equal) in [
            ("1", "1.0", true),
            ("1.0", "1", true),
            ("-0.0", "0", true),
            (r#"{"a":[1,{"b":2}]}"#, r#"{"a":[1.0,{"b":2}]}"#, true),
            (r#"{"a":1,"b":2}"#, r#"{"b":2,"a":1}"#, true),
            (r#"{"a":1}"#, r#"{"a":1,"b":2}"#, false),
            ("true", "1", false),
            (r#""x""#, r#""x""#, true),
            ("null", "null", true),
            ("[1,2]", "[2,1]", false),
        ] {
            let (_, doc) = scan_doc(text);
            let doc = doc.expect("a document");
            let expected: Serde = serde_json::from_str(expected).expect("JSON");
            assert_eq!(equals(doc.root(), &expected), equal, "{text}");
        }
    }
}
