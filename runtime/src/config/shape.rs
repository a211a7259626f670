//! Shape checks for the config schema: a section (or any struct in it) is read only from a TOML table.
//!
//! serde's derived `Deserialize` for a struct also accepts a *sequence* of its fields in order, so
//! `approval = [true, true, true]` would fill `[approval]` positionally and pass every check written for
//! tables. Every struct-typed position of the schema goes through [`table`] (or [`tables`] for arrays of
//! tables), which asks the deserializer for a map and hands the map itself to the struct, so the struct never
//! sees a sequence and errors keep their position.

use std::fmt;
use std::marker::PhantomData;

use serde::de::value::MapAccessDeserializer;
use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

/// Reads a struct from a TOML table only (`[section]`, `section.key = …` or `section = { … }`).
pub(crate) fn table<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    deserializer.deserialize_map(TableOnly(PhantomData))
}

/// Reads an array of structs, each from a table only (`[[section.key]]` or `key = [{ … }]`).
pub(crate) fn tables<'de, D, T>(deserializer: D) -> Result<Vec<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    deserializer.deserialize_seq(TablesOnly(PhantomData))
}

/// A value that is read through [`table`]: the element type of [`tables`].
struct Strict<T>(T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Strict<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        table(deserializer).map(Strict)
    }
}

struct TableOnly<T>(PhantomData<T>);

impl<'de, T: Deserialize<'de>> Visitor<'de> for TableOnly<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a table")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
        T::deserialize(MapAccessDeserializer::new(map))
    }
}

struct TablesOnly<T>(PhantomData<T>);

impl<'de, T: Deserialize<'de>> Visitor<'de> for TablesOnly<T> {
    type Value = Vec<T>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array of tables")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<T>, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(64));
        while let Some(Strict(item)) = seq.next_element::<Strict<T>>()? {
            items.push(item);
        }
        Ok(items)
    }
}
