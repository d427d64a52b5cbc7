//! Built-in models of this API (to be written).
