//! pi-ai's vocabulary: content blocks, messages, usage, models and the request context.

pub mod content;
pub mod context;
pub mod custom;
pub mod message;
pub mod model;
pub mod record;
pub mod system;
pub mod thinking;
pub mod transcript;
pub mod usage;
pub mod wire_api;
