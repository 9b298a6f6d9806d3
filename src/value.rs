//! serde_json's `Value`, built with exact capacities.
//!
//! serde_json's own visitor grows each object's map and each array's vector as it reads them
//! (JSON gives no length up front), reallocating every one of them a few times on a row of
//! thousands of small objects. Here each object's entries and each array's items gather on a
//! stack shared by the whole parse, then move into a map or vector allocated once at its final
//! size. The deserializer is serde_json's, so what it accepts, its nesting limit and every
//! number are unchanged: the `Value` is the one `serde_json::from_str` builds, key order
//! included (`bench/core_parse.py --verify` compares them on every benchmark line).

use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// The entries and items of the containers being read, innermost last.
#[derive(Default)]
struct Stacks {
    entries: Vec<(String, Value)>,
    items: Vec<Value>,
}

struct Seed<'s>(&'s mut Stacks);

impl<'de> DeserializeSeed<'de> for Seed<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Seed<'_> {
    type Value = Value;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("any JSON value")
    }

    fn visit_bool<E>(self, value: bool) -> Result<Value, E> {
        Ok(Value::Bool(value))
    }

    fn visit_i64<E>(self, value: i64) -> Result<Value, E> {
        Ok(Value::Number(value.into()))
    }

    fn visit_u64<E>(self, value: u64) -> Result<Value, E> {
        Ok(Value::Number(value.into()))
    }

    fn visit_f64<E>(self, value: f64) -> Result<Value, E> {
        // As serde_json's own visitor (a JSON number is never infinite or NaN there).
        Ok(Number::from_f64(value).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, value: &str) -> Result<Value, E> {
        Ok(Value::String(value.to_owned()))
    }

    fn visit_string<E>(self, value: String) -> Result<Value, E> {
        Ok(Value::String(value))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let stacks = self.0;
        let base = stacks.items.len();
        while let Some(item) = seq.next_element_seed(Seed(&mut *stacks))? {
            stacks.items.push(item);
        }
        Ok(Value::Array(stacks.items.drain(base..).collect()))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let stacks = self.0;
        let base = stacks.entries.len();
        while let Some(key) = map.next_key::<String>()? {
            let value = map.next_value_seed(Seed(&mut *stacks))?;
            stacks.entries.push((key, value));
        }
        let mut object = Map::with_capacity(stacks.entries.len() - base);
        // A repeated key keeps its first place and its last value, as in serde_json's visitor
        // (the strict scan refuses such a line before it is parsed).
        object.extend(stacks.entries.drain(base..));
        Ok(Value::Object(object))
    }
}

/// The `Value` of a JSON text: `serde_json::from_str::<Value>(text)`, allocated once per
/// container.
pub fn from_str(text: &str) -> serde_json::Result<Value> {
    let mut stacks = Stacks::default();
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let value = Seed(&mut stacks).deserialize(&mut deserializer)?;
    deserializer.end()?;
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each text builds, to the key order and each number's bits, what serde_json builds, and
    /// each text serde_json refuses is refused.
    #[test]
    fn builds_what_serde_json_builds() {
        let texts = [
            r#"{"b":1,"a":[1,-1,-0,0.1,1e300,18446744073709551615,-9223372036854775808,2.5e-324],"c":{}}"#,
            r#"{"z":{"y":{"x":[[],[{}],[null,true,false,"\u00e9\n\"",""]]}},"a":"plain","é":"ü"}"#,
            r#"[1,2,{"k":[3,4,{"k":[5]}]}]"#,
            r#""a string""#,
            "123.456e7",
            r#"{"a":1,"a":2,"b":3}"#,
            r#"{"a":[1,2,}"#,
            "[1e400]",
            "{} x",
            &format!("{}{}", "[".repeat(129), "]".repeat(129)),
            &format!("{}{}", "[".repeat(127), "]".repeat(127)),
        ];
        for text in texts {
            let expected = serde_json::from_str::<Value>(text);
            let built = from_str(text);
            match (&expected, &built) {
                (Ok(expected), Ok(built)) => {
                    assert_eq!(built.to_string(), expected.to_string(), "{text}")
                }
                (Err(_), Err(_)) => {}
                _ => panic!("{text}: serde_json {expected:?}, built {built:?}"),
            }
        }
    }
}
