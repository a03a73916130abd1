//! Handler output to JSON, bounded by depth: the nesting depth of a
//! handler's return value is measured through its `Serialize`
//! implementation before it is turned into JSON.
//!
//! `serde_json::to_value` recurses once per level of the value (about a
//! kilobyte of stack per level in unoptimized builds), so a handler that
//! returns a value a few thousand levels deep would overflow a small thread
//! stack while being converted. The probe here serializes into nothing and
//! gives up at [`MAX_VALUE_DEPTH`] levels, so the conversion only ever runs
//! on values it can finish.

use std::fmt;

use serde::Serialize;
use serde::ser::{self, Serializer};
use serde_json::Value;

use crate::error::ActionError;
use crate::schema::MAX_VALUE_DEPTH;

/// Converts a handler's return value into JSON, refusing (as an invalid
/// output) one that nests deeper than [`MAX_VALUE_DEPTH`] levels. A value
/// refused for its depth is not dropped: its destructor would recurse once
/// per level and could overflow the thread's stack (a handler returning a `Value` 100 000 levels deep).
/// It is leaked instead — a host defect, logged — so the call settles
/// `EXECUTION_FAILED {reason: "output-invalid"}` and the process survives.
pub(crate) fn into_value<T: Serialize>(value: T) -> Result<Value, ActionError> {
    if too_deep(&value) {
        tracing::error!(
            max = MAX_VALUE_DEPTH,
            "a handler returned a value nested too deep to convert or drop safely; it is leaked"
        );
        std::mem::forget(value);
        return Err(refusal());
    }
    serde_json::to_value(&value).map_err(|err| ActionError::output_invalid(err.to_string()))
}

fn too_deep<T: Serialize + ?Sized>(value: &T) -> bool {
    let probe = Probe {
        depth: 0,
        max: MAX_VALUE_DEPTH,
    };
    matches!(value.serialize(probe), Err(Fault::TooDeep))
}

fn refusal() -> ActionError {
    ActionError::output_invalid(format!("output nests deeper than {MAX_VALUE_DEPTH} levels"))
}

/// Why the probe stopped.
#[derive(Debug)]
enum Fault {
    /// The value nests deeper than the limit.
    TooDeep,
    /// The value's own serialization failed; the real conversion reports it.
    Other,
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Fault::TooDeep => "nested too deeply",
            Fault::Other => "not serializable",
        })
    }
}

impl std::error::Error for Fault {}

impl ser::Error for Fault {
    fn custom<T: fmt::Display>(_message: T) -> Self {
        Fault::Other
    }
}

/// A serializer that produces nothing and counts how deep it is.
#[derive(Clone, Copy)]
struct Probe {
    depth: usize,
    max: usize,
}

impl Probe {
    fn deeper(self) -> Result<Probe, Fault> {
        if self.depth >= self.max {
            Err(Fault::TooDeep)
        } else {
            Ok(Probe {
                depth: self.depth + 1,
                max: self.max,
            })
        }
    }
}

type Done = Result<(), Fault>;

macro_rules! scalars {
    ($($method:ident($ty:ty)),* $(,)?) => {
        $(fn $method(self, _value: $ty) -> Done {
            Ok(())
        })*
    };
}

impl Serializer for Probe {
    type Ok = ();
    type Error = Fault;
    type SerializeSeq = Probe;
    type SerializeTuple = Probe;
    type SerializeTupleStruct = Probe;
    type SerializeTupleVariant = Probe;
    type SerializeMap = Probe;
    type SerializeStruct = Probe;
    type SerializeStructVariant = Probe;

    scalars!(
        serialize_bool(bool),
        serialize_i8(i8),
        serialize_i16(i16),
        serialize_i32(i32),
        serialize_i64(i64),
        serialize_i128(i128),
        serialize_u8(u8),
        serialize_u16(u16),
        serialize_u32(u32),
        serialize_u64(u64),
        serialize_u128(u128),
        serialize_f32(f32),
        serialize_f64(f64),
        serialize_char(char),
        serialize_str(&str),
        serialize_bytes(&[u8]),
        serialize_unit_struct(&'static str),
    );

    fn serialize_none(self) -> Done {
        Ok(())
    }

    fn serialize_unit(self) -> Done {
        Ok(())
    }

    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
    ) -> Done {
        Ok(())
    }

    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Done {
        value.serialize(self.deeper()?)
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Done {
        value.serialize(self.deeper()?)
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        value: &T,
    ) -> Done {
        value.serialize(self.deeper()?)
    }

    fn serialize_seq(self, _len: Option<usize>) -> Result<Probe, Fault> {
        self.deeper()
    }

    fn serialize_tuple(self, _len: usize) -> Result<Probe, Fault> {
        self.deeper()
    }

    fn serialize_tuple_struct(self, _name: &'static str, _len: usize) -> Result<Probe, Fault> {
        self.deeper()
    }

    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Probe, Fault> {
        self.deeper()
    }

    fn serialize_map(self, _len: Option<usize>) -> Result<Probe, Fault> {
        self.deeper()
    }

    fn serialize_struct(self, _name: &'static str, _len: usize) -> Result<Probe, Fault> {
        self.deeper()
    }

    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Probe, Fault> {
        self.deeper()
    }
}

macro_rules! compound {
    ($($trait:ident :: $method:ident $(($key:ident))?),* $(,)?) => {
        $(impl ser::$trait for Probe {
            type Ok = ();
            type Error = Fault;

            fn $method<T: Serialize + ?Sized>(&mut self, $($key: &'static str,)? value: &T) -> Done {
                value.serialize(*self)
            }

            fn end(self) -> Done {
                Ok(())
            }
        })*
    };
}

compound!(
    SerializeSeq::serialize_element,
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field,
    SerializeTupleVariant::serialize_field,
    SerializeStruct::serialize_field(_key),
    SerializeStructVariant::serialize_field(_key),
);

impl ser::SerializeMap for Probe {
    type Ok = ();
    type Error = Fault;

    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Done {
        key.serialize(*self)
    }

    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Done {
        value.serialize(*self)
    }

    fn end(self) -> Done {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn shallow_values_convert_and_deep_ones_are_refused_on_a_small_stack() {
        let converted = into_value(vec![Some(1), None]).unwrap();
        assert_eq!(converted, json!([1, null]));
        let outcome = std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(|| {
                let mut deep = Value::Null;
                for _ in 0..5_000 {
                    deep = Value::Array(vec![deep]);
                }
                // Refused, and not dropped recursively on this small stack.
                into_value(deep).is_err()
            })
            .unwrap()
            .join()
            .unwrap();
        assert!(outcome);
    }
}
