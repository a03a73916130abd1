use agent_surface::prelude::*;

/// A variant named past ASCII.
#[agent_schema]
pub enum Mood {
    /// Calm.
    Calm,
    /// Anger.
    Ärger,
}

/// A field renamed one way only.
#[agent_schema]
pub struct OneWay {
    /// Anger.
    #[serde(rename(serialize = "anger"))]
    pub ärger: u32,
}

/// A data variant is a property: its name must be one.
#[agent_schema]
pub enum Shape {
    /// A circle.
    #[serde(rename = "a circle")]
    Circle {
        /// Its radius.
        r: u32,
    },
}

/// Tag and content names are properties too.
#[agent_schema]
#[serde(tag = "the kind", content = "")]
pub enum Tagged {
    /// One.
    One(u32),
}

/// A field name too long once camelCased.
#[agent_schema]
pub struct Long {
    /// Long.
    pub a_field_name_that_goes_on_and_on_and_on_and_on_and_on_well_past_what_tool_schemas_take_as_a_name: u32,
}

fn main() {}
