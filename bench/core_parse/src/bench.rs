//! `core_parse LINES_FILE [--rounds N] [--verify]`: parses every line of the file (one JSON text a
//! line) with each parser, round after round (the parsers interleaved, so a busy machine slows
//! them alike), and prints one JSON object a parser: the fastest round's seconds and how many
//! lines it read as a JSON object. `bench/core_parse.py` drives it and prints the table.

#[path = "typed.rs"]
mod typed;

use _core::{row, strict, value};
use serde::Deserialize;
use std::hint::black_box;
use std::time::Instant;

/// The reusable state a parser may keep between lines.
#[derive(Default)]
struct State {
    copy: Vec<u8>,
    simd: Option<simd_json::Buffers>,
}

type Parse = fn(&[u8], &mut State) -> bool;

/// serde_json's `Value` deserializer with `BTreeMap` objects: the `Value` serde_json builds
/// without `preserve_order` (a replica: the feature is on for the whole build).
mod btree {
    use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
    use std::collections::BTreeMap;
    use std::fmt;

    #[allow(dead_code)]
    pub enum Value {
        Null,
        Bool(bool),
        Number(serde_json::Number),
        String(String),
        Array(Vec<Value>),
        Object(BTreeMap<String, Value>),
    }

    impl<'de> Deserialize<'de> for Value {
        fn deserialize<D: Deserializer<'de>>(de: D) -> Result<Value, D::Error> {
            struct V;
            impl<'de> Visitor<'de> for V {
                type Value = Value;
                fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                    f.write_str("JSON")
                }
                fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
                    Ok(Value::Bool(v))
                }
                fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
                    Ok(Value::Number(v.into()))
                }
                fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
                    Ok(Value::Number(v.into()))
                }
                fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
                    Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
                }
                fn visit_str<E>(self, v: &str) -> Result<Value, E> {
                    Ok(Value::String(v.to_owned()))
                }
                fn visit_string<E>(self, v: String) -> Result<Value, E> {
                    Ok(Value::String(v))
                }
                fn visit_unit<E>(self) -> Result<Value, E> {
                    Ok(Value::Null)
                }
                fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
                    let mut items = Vec::new();
                    while let Some(item) = seq.next_element()? {
                        items.push(item);
                    }
                    Ok(Value::Array(items))
                }
                fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
                    let mut object = BTreeMap::new();
                    while let Some((key, value)) = map.next_entry()? {
                        object.insert(key, value);
                    }
                    Ok(Value::Object(object))
                }
            }
            de.deserialize_any(V)
        }
    }
}

/// simd-json's borrowed DOM turned into serde_json's `Value`: parsing once into a faster
/// representation, then converting.
fn simd_to_serde(value: &simd_json::BorrowedValue) -> serde_json::Value {
    use simd_json::{BorrowedValue as B, StaticNode as S};
    match value {
        B::Static(S::Null) => serde_json::Value::Null,
        B::Static(S::Bool(b)) => serde_json::Value::Bool(*b),
        B::Static(S::I64(i)) => serde_json::Value::Number((*i).into()),
        B::Static(S::U64(u)) => serde_json::Value::Number((*u).into()),
        B::Static(S::F64(f)) => serde_json::Number::from_f64(*f)
            .map_or(serde_json::Value::Null, serde_json::Value::Number),
        B::String(s) => serde_json::Value::String(s.to_string()),
        B::Array(items) => serde_json::Value::Array(items.iter().map(simd_to_serde).collect()),
        B::Object(map) => {
            let mut object = serde_json::Map::with_capacity(map.len());
            for (key, item) in map.iter() {
                object.insert(key.to_string(), simd_to_serde(item));
            }
            serde_json::Value::Object(object)
        }
    }
}

fn simd_parse<'a>(line: &[u8], state: &'a mut State) -> Option<simd_json::BorrowedValue<'a>> {
    state.copy.clear();
    state.copy.extend_from_slice(line);
    let buffers = state
        .simd
        .get_or_insert_with(|| simd_json::Buffers::new(line.len()));
    simd_json::value::borrowed::to_value_with_buffers(&mut state.copy, buffers).ok()
}

const PARSERS: &[(&str, Parse)] = &[
    ("strict scan", |line, _| strict::scan(line) == 0),
    ("strict scan + doc (one pass)", |line, _| {
        std::str::from_utf8(line).is_ok_and(|text| {
            let (_, doc) = strict::scan_doc(text);
            black_box(&doc);
            doc.is_some_and(|d| d.root().is_object())
        })
    }),
    ("serde_json Value (from_slice, now)", |line, _| {
        matches!(
            black_box(serde_json::from_slice::<serde_json::Value>(line)),
            Ok(serde_json::Value::Object(_))
        )
    }),
    ("serde_json Value (from_str)", |line, _| {
        std::str::from_utf8(line).is_ok_and(|text| {
            matches!(
                black_box(serde_json::from_str::<serde_json::Value>(text)),
                Ok(serde_json::Value::Object(_))
            )
        })
    }),
    (
        "serde_json Value (from_str, sized: core::value)",
        |line, _| {
            std::str::from_utf8(line).is_ok_and(|text| {
                matches!(
                    black_box(value::from_str(text)),
                    Ok(serde_json::Value::Object(_))
                )
            })
        },
    ),
    ("scan + Value (from_slice): row::parse before", |line, _| {
        strict::scan(line) == 0
            && matches!(
                black_box(serde_json::from_slice::<serde_json::Value>(line)),
                Ok(serde_json::Value::Object(_))
            )
    }),
    ("row::with_row (scan + document, as built)", |line, _| {
        black_box(row::with_row(line, |row| row.doc.len())).is_some()
    }),
    ("check_row(raw, 0) minus Python, as built", |line, _| {
        row::with_row(line, |row| {
            black_box((
                row::clean_families(row, 0),
                row::evidence(row.doc),
                row::identity(row.doc),
            ));
        })
        .is_some()
    }),
    (
        "serde_json Value, BTreeMap (no preserve_order)",
        |line, _| {
            matches!(
                black_box(serde_json::from_slice::<btree::Value>(line)),
                Ok(btree::Value::Object(_))
            )
        },
    ),
    ("simd-json BorrowedValue", |line, state| {
        matches!(
            black_box(simd_parse(line, state)),
            Some(simd_json::BorrowedValue::Object(_))
        )
    }),
    ("simd-json Borrowed -> serde_json Value", |line, state| {
        simd_parse(line, state).is_some_and(|value| {
            matches!(
                black_box(simd_to_serde(&value)),
                serde_json::Value::Object(_)
            )
        })
    }),
    ("sonic-rs Value", |line, _| {
        use sonic_rs::JsonValueTrait;
        sonic_rs::from_slice::<sonic_rs::Value>(line)
            .is_ok_and(|value| black_box(value).is_object())
    }),
    ("jiter JsonValue", |line, _| {
        matches!(
            black_box(jiter::JsonValue::parse(line, false)),
            Ok(jiter::JsonValue::Object(_))
        )
    }),
    ("typed skeleton (borrowed, IgnoredAny)", |line, _| {
        let mut de = serde_json::Deserializer::from_slice(line);
        typed::Row::deserialize(&mut de).is_ok_and(|row| {
            black_box(row);
            de.end().is_ok()
        })
    }),
];

/// The sonic-rs value holds what serde_json's does: key order, strings, and each number as the
/// same kind (unsigned, signed, float) and the same bits.
fn same(sonic: &sonic_rs::Value, value: &serde_json::Value) -> bool {
    use serde_json::Value as V;
    use sonic_rs::{JsonContainerTrait, JsonValueTrait};
    match value {
        V::Null => sonic.is_null(),
        V::Bool(b) => sonic.as_bool() == Some(*b),
        V::String(text) => sonic.as_str() == Some(text.as_str()),
        V::Number(number) => {
            let agree = if let Some(u) = number.as_u64() {
                sonic.is_u64() && sonic.as_u64() == Some(u)
            } else if let Some(i) = number.as_i64() {
                sonic.is_i64() && sonic.as_i64() == Some(i)
            } else {
                sonic.is_f64()
                    && sonic.as_f64().map(f64::to_bits) == number.as_f64().map(f64::to_bits)
            };
            if !agree {
                eprintln!("sonic-rs reads {sonic:?} where serde_json reads {number}");
            }
            agree
        }
        V::Array(items) => sonic.as_array().is_some_and(|array| {
            array.len() == items.len() && array.iter().zip(items).all(|(s, v)| same(s, v))
        }),
        V::Object(map) => sonic.as_object().is_some_and(|object| {
            object.len() == map.len()
                && object
                    .iter()
                    .zip(map)
                    .all(|((sk, s), (k, v))| sk == k && same(s, v))
        }),
    }
}

/// Every line whose serde_json `Value` some parser meant to be a drop-in builds differently
/// (serialized: key order and each number's text count).
fn verify(lines: &[&[u8]]) {
    let mut state = State::default();
    let mut differ = [0usize; 3];
    for (index, line) in lines.iter().enumerate() {
        let Ok(reference) = serde_json::from_slice::<serde_json::Value>(line) else {
            continue;
        };
        let reference = reference.to_string();
        let text = std::str::from_utf8(line).unwrap();
        if value::from_str(text).map(|v| v.to_string()).ok().as_ref() != Some(&reference) {
            differ[0] += 1;
        }
        if simd_parse(line, &mut state)
            .map(|v| simd_to_serde(&v).to_string())
            .as_ref()
            != Some(&reference)
        {
            differ[1] += 1;
        }
        let sonic = sonic_rs::from_slice::<sonic_rs::Value>(line);
        if !sonic.is_ok_and(|sonic| same(&sonic, &serde_json::from_slice(line).unwrap())) {
            differ[2] += 1;
            eprintln!("sonic-rs differs on line {}", index + 1);
        }
    }
    println!(
        "{{\"lines\": {}, \"differ\": {{\"core::value\": {}, \"simd-json -> serde_json\": {}, \"sonic-rs\": {}}}}}",
        lines.len(),
        differ[0],
        differ[1],
        differ[2]
    );
}

pub fn main(alloc: &str) {
    let args: Vec<String> = std::env::args().collect();
    let path = args
        .get(1)
        .expect("usage: core_parse LINES_FILE [--rounds N] [--verify]");
    let rounds: usize = args
        .iter()
        .position(|a| a == "--rounds")
        .map_or(5, |i| args[i + 1].parse().expect("--rounds N"));
    let data = std::fs::read(path).expect("read the lines file");
    let lines: Vec<&[u8]> = data
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .collect();
    if args.iter().any(|a| a == "--verify") {
        verify(&lines);
        return;
    }
    let mut best = vec![f64::INFINITY; PARSERS.len()];
    let mut objects = vec![0usize; PARSERS.len()];
    let mut state = State::default();
    for _ in 0..rounds {
        for (i, (_, parse)) in PARSERS.iter().enumerate() {
            let start = Instant::now();
            let mut ok = 0;
            for line in &lines {
                ok += usize::from(parse(line, &mut state));
            }
            best[i] = best[i].min(start.elapsed().as_secs_f64());
            objects[i] = ok;
        }
    }
    for (i, (name, _)) in PARSERS.iter().enumerate() {
        println!(
            "{{\"parser\": {:?}, \"alloc\": {:?}, \"seconds\": {}, \"objects\": {}}}",
            name, alloc, best[i], objects[i]
        );
    }
}
