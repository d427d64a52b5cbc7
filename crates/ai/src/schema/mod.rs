//! Schema dialects: one transform per target API from a tool's JSON Schema (as `schemars`
//! derives it), so each provider gets a schema it accepts. A schema a provider cannot take is
//! reported as a [`crate::tool::SchemaError`] before any request is made.

pub mod anthropic;
pub mod gemini;
pub mod openai_strict;
