//! Small internal building blocks.

pub(crate) mod contain;
pub(crate) mod decimal;
pub(crate) mod display_text;
pub(crate) mod disposal;
pub(crate) mod id_mint;
pub(crate) mod listeners;
pub(crate) mod lru;
pub(crate) mod millis;
pub(crate) mod nesting;
pub(crate) mod span;
pub(crate) mod time;
