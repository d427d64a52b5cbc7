//! Schema dialect: gemini (to be written).
