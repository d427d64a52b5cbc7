//! Schema dialect: anthropic (to be written).
