//! JSON read strictly: serde keeps the last of two equal keys in one object
//! without a word, so a hand-edited `{"seed":1,"seed":2}` would run seed 2;
//! this walk refuses the second key instead, naming it.

use std::collections::BTreeSet;
use std::fmt;

use serde::Deserializer;
use serde::de::{DeserializeSeed, Error as _, MapAccess, SeqAccess, Visitor};

/// Refuses `text` if any object in it repeats a key. Syntax errors are left
/// to the real parse that follows, which reports them with their place.
pub fn refuse_duplicate_keys(text: &str) -> Result<(), String> {
    let mut reader = serde_json::Deserializer::from_str(text);
    match Walk.deserialize(&mut reader) {
        Err(error) if error.to_string().starts_with(DUPLICATE) => {
            let message = error.to_string();
            let message = message
                .rsplit_once(" at line ")
                .map_or(message.as_str(), |(message, _)| message);
            // A token is one line; a summary is many.
            match error.line() {
                1 => Err(format!("column {}: {message}", error.column())),
                line => Err(format!("line {line}, column {}: {message}", error.column())),
            }
        }
        _ => Ok(()),
    }
}

const DUPLICATE: &str = "duplicate key";

/// Visits any value, checking each object's keys.
#[derive(Clone, Copy)]
struct Walk;

impl<'de> DeserializeSeed<'de> for Walk {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Walk {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen = BTreeSet::new();
        while let Some(key) = map.next_key::<String>()? {
            if !seen.insert(key.clone()) {
                return Err(A::Error::custom(format!(
                    "{DUPLICATE} {key:?} in one object"
                )));
            }
            map.next_value_seed(Walk)?;
        }
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(Walk)?.is_some() {}
        Ok(())
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
}
