//! Built-in models of this API (to be written).

use crate::types::model::Model;

/// The built-in models of this API.
pub fn builtin() -> Vec<Model> {
    Vec::new()
}
