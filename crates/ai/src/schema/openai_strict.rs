//! Schema dialect: openai_strict (to be written).
